#!/usr/bin/env python3
"""Writes the ledger example's fixtures from one history of the ledger table:

  streams-event.json   a Lambda DynamoDB Streams event (NEW_AND_OLD_IMAGES)
                       carrying the whole history, record by record;
  kinesis-event.json   a Lambda Kinesis event carrying the same history as
                       the table's Kinesis streaming destination writes it
                       (milliseconds), out of order and with one record twice;
  export/AWSDynamoDB/<ExportId>/...
                       a full DynamoDB export to S3 (DYNAMODB_JSON) of the
                       table as that history leaves it: manifest-summary.json,
                       manifest-files.json, their .checksum files, _started,
                       and data/<name>.json.gz of {"Item": ...} lines.

The export holds exactly the items the history leaves, so the aggregates a
projector builds from the event are the aggregates recomputed from the
export. Run from anywhere: python3 examples/ledger/testdata/generate.py.
The same bytes on every run (gzip without a name or a time; md5 and ETag
computed from the bytes written); edit this script, not the files."""
import base64, datetime, gzip, hashlib, io, json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
REGION, ACCOUNT, TABLE = "eu-west-1", "111122223333", "ledger"
TABLE_ARN = "arn:aws:dynamodb:%s:%s:table/%s" % (REGION, ACCOUNT, TABLE)
STREAM_ARN = TABLE_ARN + "/stream/2026-11-01T00:00:00.000"
UTC = datetime.timezone.utc

def at(day, hh, mm=0):
    """Epoch seconds of 2026-11-<day> hh:mm UTC (day may run past 30)."""
    t = datetime.datetime(2026, 11, 1, hh, mm, tzinfo=UTC) + datetime.timedelta(days=day - 1)
    return int(t.timestamp())

def S(v): return {"S": v}
def N(v): return {"N": str(v)}

def account(aid, holder, currency, opened, rev):
    return {"pk": S("ACCOUNT#" + aid), "sk": S("ACCOUNT"), "kind": S("Account"),
            "holder": S(holder), "currency": S(currency), "openedAt": N(opened), "rev": N(rev)}

def transfer(tid, src, dst, amount, currency, status, booked, rev):
    return {"pk": S("TRANSFER#" + tid), "sk": S("TRANSFER"), "kind": S("Transfer"),
            "from": S(src), "to": S(dst), "amount": N(amount), "currency": S(currency),
            "status": S(status), "bookedAt": N(booked), "rev": N(rev)}

def idempotency(key, tid, created, rev=1):
    # Idempotency keys live a day: the table's TTL attribute is expiresAt.
    return {"pk": S("IDEMPOTENCY#" + key), "sk": S("IDEMPOTENCY"), "kind": S("IdempotencyKey"),
            "transfer": S(tid), "createdAt": N(created), "expiresAt": N(created + 86400), "rev": N(rev)}

def bump(item, rev, **changes):
    out = dict(item)
    for k, v in changes.items():
        out[k] = v
    out["rev"] = N(rev)
    return out

anna = account("anna", "Anna Kowalska", "EUR", at(2, 9), 1)
bram = account("bram", "Bram de Vries", "EUR", at(3, 9), 1)
chen = account("chen", "Chen Wei", "GBP", at(4, 9), 1)
k0 = idempotency("9b1f0c", "t0", at(29, 8))          # expires 30 Nov 08:00; TTL removes it on 1 Dec
t1 = transfer("t1", "anna", "bram", "125.50", "EUR", "PENDING", at(30, 9, 15), 1)
t2 = transfer("t2", "bram", "anna", "40.25", "EUR", "SETTLED", at(30, 10), 1)
t3 = transfer("t3", "chen", "anna", "25000", "GBP", "PENDING", at(30, 11), 1)
t4 = transfer("t4", "anna", "chen", "12000.00", "EUR", "PENDING", at(31, 8), 1)
t5 = transfer("t5", "bram", "chen", "0.10", "EUR", "SETTLED", at(31, 9), 1)
t6 = transfer("t6", "chen", "bram", "15000.00", "GBP", "PENDING", at(31, 10), 1)
t7 = transfer("t7", "anna", "bram", "10000", "EUR", "PENDING", at(31, 11), 1)
t8 = transfer("t8", "bram", "chen", "0.20", "EUR", "SETTLED", at(31, 12), 1)
k1 = idempotency("4e77a2", "t8", at(31, 12))

def keys(img): return {"pk": img["pk"], "sk": img["sk"]}

# The history, in stream order: (event, new image, old image, time, by TTL).
history = [
    ("INSERT", anna, None, at(29, 7), False),
    ("INSERT", bram, None, at(29, 7, 5), False),
    ("INSERT", chen, None, at(29, 7, 10), False),
    ("INSERT", k0, None, at(29, 8), False),
    ("INSERT", t1, None, at(30, 9, 15), False),
    ("INSERT", t2, None, at(30, 10), False),
    ("INSERT", t3, None, at(30, 11), False),
    ("MODIFY", bump(t1, 2, status=S("SETTLED")), t1, at(30, 12), False),
    ("INSERT", t4, None, at(31, 8), False),
    ("INSERT", t5, None, at(31, 9), False),
    ("INSERT", t6, None, at(31, 10), False),
    ("MODIFY", bump(t4, 2, status=S("FAILED")), t4, at(31, 10, 30), False),
    ("INSERT", t7, None, at(31, 11), False),
    ("REMOVE", None, t7, at(31, 11, 20), False),          # cancelled before settlement
    ("INSERT", t8, None, at(31, 12), False),
    ("INSERT", k1, None, at(31, 12), False),
    ("MODIFY", bump(anna, 2, holder=S("Anna Kowalska-Nowak")), anna, at(31, 13), False),
    ("REMOVE", None, k0, at(31, 14, 30), True),           # TTL: a day and a half after expiresAt
]

def streams_record(i, rec):
    name, new, old, t, ttl = rec
    d = {"ApproximateCreationDateTime": t, "Keys": keys(new or old)}
    if new: d["NewImage"] = new
    if old: d["OldImage"] = old
    d.update({"SequenceNumber": "5120036700000000031877%06d" % (i + 1), "SizeBytes": 180 + 10 * len(new or old),
              "StreamViewType": "NEW_AND_OLD_IMAGES"})
    r = {"eventID": "%032x" % (0x1ed9e0 + i), "eventName": name, "eventVersion": "1.1",
         "eventSource": "aws:dynamodb", "awsRegion": REGION, "dynamodb": d, "eventSourceARN": STREAM_ARN}
    if ttl:
        r["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return r

streams = {"Records": [streams_record(i, r) for i, r in enumerate(history)]}

def kinesis_payload(i, rec):
    name, new, old, t, ttl = rec
    d = {"ApproximateCreationDateTime": t * 1000 + 17 * i, "Keys": keys(new or old)}
    if new: d["NewImage"] = new
    if old: d["OldImage"] = old
    d["SizeBytes"] = 180 + 10 * len(new or old)
    identity = {"type": "Service", "principalId": "dynamodb.amazonaws.com"} if ttl else None
    return {"awsRegion": REGION, "eventID": "7c2d4e6f-1a3b-4c5d-9e8f-0a1b2c3d4e%02d" % i,
            "eventName": name, "userIdentity": identity, "recordFormat": "application/json",
            "tableName": TABLE, "dynamodb": d, "eventSource": "aws:dynamodb"}

def kinesis_record(n, payload):
    seq = "4965663211621894577633146076650783471849643127965299%04d" % n
    data = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    return {"kinesis": {"kinesisSchemaVersion": "1.0", "partitionKey": hashlib.md5(json.dumps(payload["dynamodb"]["Keys"]).encode()).hexdigest().upper(),
                        "sequenceNumber": seq, "data": data, "approximateArrivalTimestamp": payload["dynamodb"]["ApproximateCreationDateTime"] / 1000 + 0.5},
            "eventSource": "aws:kinesis", "eventVersion": "1.0",
            "eventID": "shardId-000000000000:" + seq, "eventName": "aws:kinesis:record",
            "invokeIdentityArn": "arn:aws:iam::%s:role/ledger-kinesis-projector" % ACCOUNT,
            "awsRegion": REGION, "eventSourceARN": "arn:aws:kinesis:%s:%s:stream/ledger-changes" % (REGION, ACCOUNT)}

# The same history from the table's Kinesis streaming destination, as Kinesis
# may deliver it: pairs of records swapped out of order, and t3's insert twice.
payloads = [kinesis_payload(i, r) for i, r in enumerate(history)]
for i in range(0, len(payloads) - 1, 4):
    payloads[i], payloads[i + 1] = payloads[i + 1], payloads[i]
payloads.append(kinesis_payload(6, history[6]))
kinesis = {"Records": [kinesis_record(n, p) for n, p in enumerate(payloads)]}

# The table as the history leaves it, in the order items were first written.
final, order = {}, []
for name, new, old, _, _ in history:
    k = json.dumps(keys(new or old), sort_keys=True)
    if k not in final:
        order.append(k)
    final[k] = new
items = [final[k] for k in order if final[k] is not None]

# The export, taken at 1 Dec 16:00 UTC, after the last change.
EXPORT_TIME = datetime.datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
EXPORT_ID = "%014d-%s" % (int(EXPORT_TIME.timestamp() * 1000), hashlib.md5(b"ledger-export-1").hexdigest()[:8])
BUCKET, PREFIX = "ledger-exports", "exports/ledger"
DIR = "AWSDynamoDB/" + EXPORT_ID
FILES, EMPTY = 3, 1  # three table partitions with items, one empty one

def data_name(i):
    h = hashlib.md5(("%s/%d" % (EXPORT_ID, i)).encode()).digest()
    return base64.b32encode(h).decode().lower().rstrip("=")[:26]

def partition(item):
    return int.from_bytes(hashlib.md5(json.dumps(item["pk"]).encode()).digest()[:8], "big") % FILES

lines = [[] for _ in range(FILES + EMPTY)]
for item in items:
    lines[partition(item)].append(json.dumps({"Item": item}, separators=(",", ":"), ensure_ascii=False) + "\n")
assert all(lines[:FILES]), "a data file would be empty: change the partition hash"

def fmt_time(t): return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)

out = os.path.join(HERE, "export")
shutil.rmtree(out, ignore_errors=True)
os.makedirs(os.path.join(out, DIR, "data"))
manifest, billed = [], 0
for i, ls in enumerate(lines):
    key = DIR + "/data/" + data_name(i) + ".json.gz"
    raw = "".join(ls).encode()
    billed += len(raw)
    if ls:
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=buf, mtime=0) as z:
            z.write(raw)
        body = buf.getvalue()
    else:
        body = b""  # an empty partition's data file is an empty object
    with open(os.path.join(out, key), "wb") as f:
        f.write(body)
    md5 = hashlib.md5(body).digest()
    manifest.append(json.dumps({"itemCount": len(ls), "md5Checksum": base64.b64encode(md5).decode(),
                                "etag": md5.hex() + "-1", "dataFileS3Key": PREFIX + "/" + key},
                               separators=(",", ":")) + "\n")
manifest_bytes = "".join(manifest).encode()
start = EXPORT_TIME + datetime.timedelta(minutes=2)
summary = {
    "version": "2020-06-30",
    "exportArn": TABLE_ARN + "/export/" + EXPORT_ID,
    "startTime": fmt_time(start),
    "endTime": fmt_time(start + datetime.timedelta(minutes=5, seconds=9)),
    "tableArn": TABLE_ARN,
    "tableId": "3f0c9a51-7d2e-4b8a-9c61-0e5b2f4d8a17",
    "exportTime": fmt_time(EXPORT_TIME),
    "s3Bucket": BUCKET,
    "s3Prefix": PREFIX,
    "s3SseAlgorithm": "AES256",
    "s3SseKmsKeyId": "",
    "manifestFilesS3Key": PREFIX + "/" + DIR + "/manifest-files.json",
    "billedSizeBytes": billed,
    "itemCount": len(items),
    "outputFormat": "DYNAMODB_JSON",
}
summary_bytes = json.dumps(summary, separators=(",", ":")).encode()
for name, body in [("_started", b""), ("manifest-files.json", manifest_bytes),
                   ("manifest-files.checksum", hashlib.md5(manifest_bytes).hexdigest().encode()),
                   ("manifest-summary.json", summary_bytes),
                   ("manifest-summary.checksum", hashlib.md5(summary_bytes).hexdigest().encode())]:
    with open(os.path.join(out, DIR, name), "wb") as f:
        f.write(body)

for name, doc in [("streams-event.json", streams), ("kinesis-event.json", kinesis)]:
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
