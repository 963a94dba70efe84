#!/usr/bin/env python3
"""Generates the pipeline decoder fixtures under pipeline/testdata/.

Run from anywhere:  python3 pipeline/testdata/generate_fixtures.py
The output is deterministic (no clocks, no randomness), so re-running it
rewrites byte-identical files.  See README.md next to this script for what
each file is and where its shape comes from.
"""

import base64
import copy
import gzip
import hashlib
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))

REGION = "eu-west-1"
ACCOUNT = "111122223333"
STREAM_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/app/stream/2026-11-01T00:00:00.000"
KINESIS_ARN = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/app-changes"
INVOKE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/tributary-kinesis-consumer"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

T_1015 = 1796033700  # 2026-11-30T10:15:00Z
T_MIDNIGHT = 1795996800  # 2026-11-30T00:00:00Z


# --------------------------------------------------------------------------
# helpers


def S(v):
    return {"S": v}


def N(v):
    return {"N": v}


def sort_image(img):
    """Sorts attribute names (recursively into M) so sorted re-encoding round-trips."""
    def fix(av):
        if "M" in av and isinstance(av["M"], dict):
            return {"M": {k: fix(av["M"][k]) for k in sorted(av["M"])}}
        if "L" in av and isinstance(av["L"], list):
            return {"L": [fix(x) for x in av["L"]]}
        return av
    return {k: fix(img[k]) for k in sorted(img)}


def keys_of(img):
    return {"PK": img["PK"], "SK": img["SK"]}


def av_size(av):
    """Rough DynamoDB size of one attribute value, in bytes."""
    t, v = next(iter(av.items()))
    if t == "S":
        return len(v.encode()) if isinstance(v, str) else 8
    if t == "N":
        return (len(str(v).replace("-", "").replace(".", "")) + 1) // 2 + 1
    if t == "B":
        return len(v) * 3 // 4
    if t in ("SS", "NS", "BS"):
        return sum(av_size({t[0]: x}) for x in v)
    if t == "M":
        return 3 + sum(len(k.encode()) + 1 + av_size(x) for k, x in v.items())
    if t == "L":
        return 3 + sum(1 + av_size(x) for x in v)
    return 1


def image_size(img):
    return sum(len(k.encode()) + av_size(v) for k, v in (img or {}).items())


def record_size(keys, new=None, old=None):
    return image_size(keys) + image_size(new) + image_size(old)


def hexid(seed):
    return hashlib.md5(seed.encode()).hexdigest()


def uuid_from(seed):
    h = hashlib.sha1(seed.encode()).hexdigest()
    return f"{h[0:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def partition_key(keys):
    return hashlib.md5((keys["PK"]["S"] + "|" + keys["SK"]["S"]).encode()).hexdigest().upper()


def write(rel, text, binary=False):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text if binary else text.encode("utf-8"))


SCALAR_AV = re.compile(
    r'\{\n\s*("(?:S|N|B|BOOL|NULL)": (?:"(?:[^"\\]|\\.)*"|true|false|-?[0-9.eE+]+))\n\s*\}')


def pretty(obj):
    """Indented JSON with scalar attribute values such as {"S": "x"} kept on one line."""
    return SCALAR_AV.sub(r"{\1}", json.dumps(obj, indent=2, ensure_ascii=False)) + "\n"


def compact_sorted(obj):
    # Same bytes as Go's json.Marshal of map[string]any (keys sorted, no spaces,
    # raw UTF-8) as long as strings contain no <, >, &, U+2028/2029 or \b \f.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------
# seed items


def order(version=1, status="PENDING", **extra):
    img = {
        "PK": S("USER#u42"),
        "SK": S("ORDER#2026-11-30#o1001"),
        "EntityType": S("Order"),
        "version": N(str(version)),
        "orderId": S("o1001"),
        "userId": S("u42"),
        "status": S(status),
        "total": N("120.50"),
        "currency": S("EUR"),
        "orderDate": S("2026-11-30"),
        "itemCount": N("3"),
    }
    img.update(extra)
    return sort_image(img)


def player(version=7, rating="1834", **extra):
    img = {
        "PK": S("PLAYER#u8231"),
        "SK": S("PROFILE"),
        "EntityType": S("Player"),
        "version": N(str(version)),
        "handle": S("nightowl"),
        "season": S("2026-Q2"),
        "rating": N(rating),
        "country": S("IE"),
    }
    img.update(extra)
    return sort_image(img)


def match(version=1, score="2150", result="WIN", **extra):
    img = {
        "PK": S("PLAYER#u8231"),
        "SK": S("MATCH#2026-11-30T10:15:00Z#m77"),
        "EntityType": S("Match"),
        "version": N(str(version)),
        "matchId": S("m77"),
        "season": S("2026-Q2"),
        "result": S(result),
        "score": N(score),
        "durationSeconds": N("1284"),
        "opponent": S("PLAYER#u1907"),
    }
    img.update(extra)
    return sort_image(img)


def document(version=1, title="Q4 roadmap", **extra):
    img = {
        "PK": S("WS#acme"),
        "SK": S("DOC#d1"),
        "EntityType": S("Document"),
        "version": N(str(version)),
        "docId": S("d1"),
        "title": S(title),
        "ownerId": S("u42"),
        "updatedAt": S("2026-11-30T10:15:00Z"),
    }
    img.update(extra)
    return sort_image(img)


def comment(cid="c9", version=1, ttl=T_MIDNIGHT, **extra):
    img = {
        "PK": S("WS#acme"),
        "SK": S(f"DOC#d1#CMT#{cid}"),
        "EntityType": S("Comment"),
        "version": N(str(version)),
        "commentId": S(cid),
        "authorId": S("u8231"),
        "body": S("Can we move the launch to Q1?"),
        "createdAt": S("2026-11-23T09:12:44Z"),
        "ttl": N(str(ttl)),
    }
    img.update(extra)
    return sort_image(img)


def cart_item(version=1, quantity="1", **extra):
    img = {
        "PK": S("CART#c5"),
        "SK": S("ITEM#p3"),
        "EntityType": S("CartItem"),
        "version": N(str(version)),
        "productId": S("p3"),
        "quantity": N(quantity),
        "unitPrice": N("19.99"),
        "addedAt": S("2026-11-30T10:02:11Z"),
    }
    img.update(extra)
    return sort_image(img)


# --------------------------------------------------------------------------
# Lambda DynamoDB Streams event records


def stream_record(event_name, seq, t, new=None, old=None, keys=None, ttl=False,
                  view="NEW_AND_OLD_IMAGES", seed=None, size=None):
    keys = keys if keys is not None else keys_of(new or old)
    ddb = {"ApproximateCreationDateTime": t, "Keys": sort_image(keys)}
    if new is not None:
        ddb["NewImage"] = new
    if old is not None:
        ddb["OldImage"] = old
    ddb["SequenceNumber"] = seq
    ddb["SizeBytes"] = size if size is not None else record_size(keys, new, old)
    ddb["StreamViewType"] = view
    rec = {
        "eventID": hexid(seed or seq),
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
    }
    if ttl:
        rec["userIdentity"] = dict(TTL_IDENTITY)
    rec["dynamodb"] = ddb
    rec["eventSourceARN"] = STREAM_ARN
    return rec


SEQ = [
    "4421584500000000017450439091",
    "4421584600000000017450439211",
    "4421584700000000017450439377",
    "4421584800000000017450439502",
]


def build_streams():
    recs = [
        stream_record("INSERT", SEQ[0], T_1015, new=order(1, "PENDING")),
        stream_record("MODIFY", SEQ[1], T_1015 + 42,
                      new=order(2, "PAID", paidAt=S("2026-11-30T10:15:42Z"),
                                paymentRef=S("pay_7Hq2Lx9c")),
                      old=order(1, "PENDING")),
        stream_record("REMOVE", SEQ[2], T_1015 + 97, old=player()),
        stream_record("REMOVE", SEQ[3], T_1015 + 301, old=comment(), ttl=True),
    ]
    write("streams/event.json", pretty({"Records": recs}))


def build_mentions_kinesis():
    # Items whose attributes are named like the members of other formats, and
    # whose values are "aws:kinesis": only the records' own members say what
    # the event is.
    integ = sort_image({
        "PK": S("WS#acme"), "SK": S("INTEGRATION#i1"), "EntityType": S("Integration"),
        "version": N("1"), "kinesis": {"M": {"streamArn": S(KINESIS_ARN), "eventSource": S("aws:kinesis")}},
        "eventSource": S("aws:kinesis"), "Records": {"L": [S("kinesis")]},
        "NextShardIterator": S("none"), "Item": {"NULL": True},
    })
    doc = document(3, "Routing aws:kinesis records", source=S("aws:kinesis"))
    recs = [
        stream_record("INSERT", "4421587000000000017450442001", T_1015 + 2400, new=integ),
        stream_record("MODIFY", "4421587100000000017450442002", T_1015 + 2460,
                      new=doc, old=document(2, "Q4 roadmap (final)", updatedAt=S("2026-11-30T10:36:00Z"))),
    ]
    write("streams/mentions-kinesis.json", pretty({"Records": recs}))


def build_view_types():
    # The same three changes (INSERT Order v1, MODIFY Order v1 -> v2, REMOVE
    # Player) on a stream of each StreamViewType, with the images that view
    # type carries (the Developer Guide's "Change data capture for DynamoDB
    # Streams": KEYS_ONLY the key attributes only, NEW_IMAGE the item after
    # the change, OLD_IMAGE before it, NEW_AND_OLD_IMAGES both).
    o1 = order(1, "PENDING")
    o2 = order(2, "PAID", paidAt=S("2026-11-30T10:15:42Z"), paymentRef=S("pay_7Hq2Lx9c"))
    pl = player()
    for view, name in [("KEYS_ONLY", "keys-only"), ("NEW_IMAGE", "new-image"),
                       ("OLD_IMAGE", "old-image"), ("NEW_AND_OLD_IMAGES", "new-and-old-images")]:
        new = view in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")
        old = view in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES")
        recs = [
            stream_record("INSERT", SEQ[0], T_1015, new=o1 if new else None, keys=keys_of(o1), view=view,
                          size=exact_size(keys_of(o1)) + (exact_size(o1) if new else 0)),
            stream_record("MODIFY", SEQ[1], T_1015 + 42, new=o2 if new else None, old=o1 if old else None,
                          keys=keys_of(o1), view=view,
                          size=exact_size(keys_of(o1)) + (exact_size(o2) if new else 0) + (exact_size(o1) if old else 0)),
            stream_record("REMOVE", SEQ[2], T_1015 + 97, old=pl if old else None, keys=keys_of(pl), view=view,
                          size=exact_size(keys_of(pl)) + (exact_size(pl) if old else 0)),
        ]
        write(f"streams/view-{name}.json", pretty({"Records": recs}))


def build_overflowing_sum():
    # Three paid orders: the first's total has 38 significant digits, the
    # largest precision DynamoDB keeps, and the second's 0.5 on the same day
    # makes the day's revenue need 39: DynamoDB refuses that sum. The third,
    # on another day, is fine.
    def paid(user, oid, day, total, seq, t):
        img = sort_image({"PK": S("USER#" + user), "SK": S(f"ORDER#{day}#{oid}"), "EntityType": S("Order"),
                          "version": N("1"), "orderId": S(oid), "userId": S(user), "status": S("PAID"),
                          "total": N(total), "currency": S("EUR"), "orderDate": S(day), "itemCount": N("1")})
        return stream_record("INSERT", seq, t, new=img, size=exact_size(keys_of(img)) + exact_size(img))
    recs = [
        paid("u42", "o1001", "2026-11-30", "12345678901234567890123456789012345678", "4421588000000000017450443001", T_1015),
        paid("u43", "o1002", "2026-11-30", "0.5", "4421588100000000017450443002", T_1015 + 1),
        paid("u44", "o1003", "2026-12-01", "7", "4421588200000000017450443003", T_1015 + 2),
    ]
    write("streams/overflowing-sum.json", pretty({"Records": recs}))


def build_all_types():
    esc_in = 'She said "hi" \\ C:\\tmp\\x\nline 2 caf@@E9@@ @@EMOJI@@ a@@SOL@@b\ttab'
    img = {
        "PK": S("WS#acme"),
        "SK": S("DOC#d2"),
        "EntityType": S("Document"),
        "version": N("1"),
        "title": S("Every attribute type"),
        "emptyString": S(""),
        "escaped": S(esc_in),
        "unicode": S("Zoë Ærøskøbing – 東京 😀"),
        "nInt": N("42"),
        "nDecimal": N("120.50"),
        "nNegative": N("-17.25"),
        "nExponent": N("1E+2"),
        "nSmall": N("0.000001"),
        "n38Digits": N("12345678901234567890123456789012345678"),
        "blob": {"B": base64.b64encode(b"\x00\x01\x02\xfe\xffTributary").decode()},
        "stringSet": {"SS": ["blue", "green", "red"]},
        "numberSet": {"NS": ["-3", "1", "1E+2", "2.5"]},
        "binarySet": {"BS": [base64.b64encode(b"\x00\x01\x02").decode(),
                             base64.b64encode(b"\xfa\xfb\xfc\xfd").decode()]},
        "nested": {"M": {
            "author": {"M": {
                "name": S("Ada"),
                "tags": {"L": [S("x"), N("1"), {"BOOL": True}]},
            }},
            "depth": N("2"),
        }},
        "mixedList": {"L": [
            S("first"),
            N("2"),
            {"BOOL": False},
            {"NULL": True},
            {"M": {"k": S("v"), "n": N("3.5")}},
            {"L": [S("inner"), {"SS": ["a", "b"]}]},
            {"B": base64.b64encode(b"hi").decode()},
        ]},
        "nothing": {"NULL": True},
        "yes": {"BOOL": True},
        "no": {"BOOL": False},
        "emptyList": {"L": []},
        "emptyMap": {"M": {}},
    }
    img = sort_image(img)
    rec = stream_record("INSERT", "4421585000000000017450440001", T_1015 + 600, new=img)
    text = pretty({"Records": [rec]})
    text = (text.replace("@@E9@@", "\\u00e9")
                .replace("@@EMOJI@@", "\\ud83d\\ude00")
                .replace("@@SOL@@", "\\/"))
    write("streams/all-types.json", text)


# --------------------------------------------------------------------------
# DynamoDB -> Kinesis streaming destination payloads, Lambda Kinesis event


def kinesis_payload(event_name, t_ms, new=None, old=None, ttl=False, seed="",
                    precision=None, keys=None):
    keys = keys if keys is not None else keys_of(new or old)
    ddb = {"ApproximateCreationDateTime": t_ms, "Keys": sort_image(keys)}
    if new is not None:
        ddb["NewImage"] = new
    if old is not None:
        ddb["OldImage"] = old
    ddb["SizeBytes"] = record_size(keys, new, old)
    if precision:
        ddb["ApproximateCreationDateTimePrecision"] = precision
    return {
        "awsRegion": REGION,
        "eventID": uuid_from(seed + event_name + str(t_ms)),
        "eventName": event_name,
        "userIdentity": dict(TTL_IDENTITY) if ttl else None,
        "recordFormat": "application/json",
        "tableName": "app",
        "dynamodb": ddb,
        "eventSource": "aws:dynamodb",
    }


def encode_payload(payload):
    raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.b64encode(raw).decode()


KSEQ_BASE = 49656632116218945776331460766507834718496431279652880386


def kseq(i):
    return str(KSEQ_BASE + i * 1208925819614629174706176)  # +2^80 per record


def kinesis_record(data_b64, seq, arrival, pkey, shard="shardId-000000000000"):
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": pkey,
            "sequenceNumber": seq,
            "data": data_b64,
            "approximateArrivalTimestamp": arrival,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard}:{seq}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": INVOKE_ROLE,
        "awsRegion": REGION,
        "eventSourceARN": KINESIS_ARN,
    }


def kinesis_event(payloads, first_seq=0, arrivals=None):
    recs = []
    for i, p in enumerate(payloads):
        keys = {k: v for k, v in p["dynamodb"]["Keys"].items()} if isinstance(p, dict) and "dynamodb" in p else None
        pk = partition_key(keys) if keys else "9F2C3A7D51E04B8C86A1D2E3F4A5B6C7"
        arr = arrivals[i] if arrivals else round(p["dynamodb"]["ApproximateCreationDateTime"] / 1000 + 0.412, 3)
        recs.append(kinesis_record(encode_payload(p), kseq(first_seq + i), arr, pk))
    return {"Records": recs}


def build_kinesis():
    t = (T_1015 + 900) * 1000  # 10:30:00.000Z in ms
    ms_payloads = [
        kinesis_payload("INSERT", t + 123, new=match(), seed="ms0"),
        kinesis_payload("MODIFY", t + 5873, new=cart_item(2, "3"), old=cart_item(1, "1"), seed="ms1"),
        kinesis_payload("REMOVE", t + 61207, old=comment("c10", ttl=T_MIDNIGHT + 3600,
                                                            body=S("Typo in section 2.")),
                        ttl=True, seed="ms2"),
    ]
    write("kinesis/event-ms.json", pretty(kinesis_event(ms_payloads, first_seq=0)))
    write("kinesis/event-ms.payloads.json", pretty(ms_payloads))

    t_us = (T_1015 + 1800) * 1000000 + 123456  # 10:45:00.123456Z in us
    p = kinesis_payload("MODIFY", t_us,
                        new=order(3, "SHIPPED", paidAt=S("2026-11-30T10:15:42Z"),
                                  paymentRef=S("pay_7Hq2Lx9c"), carrier=S("DPD"),
                                  trackingNo=S("15501234567890")),
                        old=order(2, "PAID", paidAt=S("2026-11-30T10:15:42Z"),
                                  paymentRef=S("pay_7Hq2Lx9c")),
                        precision="MICROSECOND", seed="us0")
    dup = copy.deepcopy(p)
    arrival = round(t_us / 1e6 + 0.388, 3)
    ev = kinesis_event([p, dup], first_seq=10, arrivals=[arrival, round(arrival + 2.731, 3)])
    write("kinesis/event-us.json", pretty(ev))
    write("kinesis/event-us.payloads.json", pretty([p, dup]))


def build_plain_text_kinesis():
    # A Lambda Kinesis event whose records are not DynamoDB's: plain text, as
    # in the Lambda Developer Guide's example Kinesis event and the Kinesis
    # fixtures of aws-lambda-go and Powertools.
    recs = []
    for i, (text, arrival) in enumerate([(b"Hello, this is a test.", 1796033700.987),
                                         (b"This is only a test.", 1796033761.166)]):
        seq = kseq(300 + i)
        rec = kinesis_record(base64.b64encode(text).decode(), seq, arrival, "1",
                             shard="shardId-000000000006")
        recs.append(rec)
    write("kinesis/plain-text.json", pretty({"Records": recs}))


def build_ion_export():
    # Lines of an export in Amazon ION, the DynamoDB export's other format:
    # a version marker, then the item with ION's types (decimals 120.50,
    # typed sets $dynamodb_SS::[...]).
    lines = [
        '$ion_1_0 {Item:{EntityType:"Order",PK:"USER#u42",SK:"ORDER#2026-11-30#o1001",status:"PAID",'
        'total:120.50,version:2.}}',
        '$ion_1_0 {Item:{EntityType:"Document",PK:"WS#acme",SK:"DOC#d1",tags:$dynamodb_SS::["planning","q4"],'
        'title:"Q4 roadmap (final)",version:2.}}',
    ]
    write("export/ion.json", "".join(l + "\n" for l in lines))


# --------------------------------------------------------------------------
# DynamoDB Streams GetRecords response body


def build_getrecords():
    def api_record(event_name, seq, t, new=None, old=None):
        keys = keys_of(new or old)
        ddb = {"ApproximateCreationDateTime": t, "Keys": sort_image(keys)}
        if new is not None:
            ddb["NewImage"] = new
        if old is not None:
            ddb["OldImage"] = old
        ddb["SequenceNumber"] = seq
        ddb["SizeBytes"] = record_size(keys, new, old)
        ddb["StreamViewType"] = "NEW_AND_OLD_IMAGES"
        return {
            "awsRegion": REGION,
            "dynamodb": ddb,
            "eventID": hexid("api" + seq),
            "eventName": event_name,
            "eventSource": "aws:dynamodb",
            "eventVersion": "1.1",
        }

    tail = base64.b64encode(hashlib.sha512(b"tributary-iterator").digest() * 2).decode()
    body = {
        "NextShardIterator": f"{STREAM_ARN}|1|AAAAAAAAAAH{tail}",
        "Records": [
            api_record("INSERT", "4421586000000000017450441004", "@@T0@@", new=document(1)),
            api_record("MODIFY", "4421586100000000017450441187", T_1015 + 1260,
                       new=document(2, "Q4 roadmap (final)", updatedAt=S("2026-11-30T10:36:00Z")),
                       old=document(1)),
        ],
    }
    text = pretty(body)
    # The API's JSON protocol writes timestamps as epoch-second numbers; the API
    # reference example shows them in exponent form (1.46480431E9). Record 0 uses
    # that form, record 1 a plain integer.
    t0 = T_1015 + 1200  # 1796034900 = 1.7960349E9
    assert float("1.7960349E9") == t0
    text = text.replace('"@@T0@@"', "1.7960349E9")
    write("streams-api/getrecords.json", text)

    # The same body with its times as strings: record 0's number as the API
    # reference's example writes it ("1.46480646E9"), record 1's in ISO 8601
    # as the AWS CLI (v2) prints timestamps.
    t1 = T_1015 + 1260
    assert '"ApproximateCreationDateTime": %d,' % t1 in text
    text = (text.replace('"ApproximateCreationDateTime": 1.7960349E9,', '"ApproximateCreationDateTime": "1.7960349E9",')
                .replace('"ApproximateCreationDateTime": %d,' % t1, '"ApproximateCreationDateTime": "2026-11-30T10:36:00+00:00",'))
    write("streams-api/getrecords-cli.json", text)


# --------------------------------------------------------------------------
# exports


def build_exports():
    items = [
        order(2, "PAID", paidAt=S("2026-11-30T10:15:42Z"), paymentRef=S("pay_7Hq2Lx9c")),
        player(8, "1851"),
        match(),
        document(2, "Q4 roadmap (final)", updatedAt=S("2026-11-30T10:36:00Z"),
                 tags={"SS": ["planning", "q4"]}),
        cart_item(2, "3"),
        # a legacy item written before EntityType existed
        sort_image({"PK": S("USER#u42"), "SK": S("PROFILE"), "version": N("4"),
                    "displayName": S("Zoë Ó Briain"), "email": S("zoe@example.com"),
                    "marketingOptIn": {"BOOL": False}}),
    ]
    lines = "".join(compact_sorted({"Item": it}) + "\n" for it in items)
    write("export/full.json", lines)
    gz = os.path.join(HERE, "export/full.json.gz")
    if os.path.exists(gz):
        os.remove(gz)
    subprocess.run(["gzip", "-kn", os.path.join(HERE, "export/full.json")], check=True)

    w0 = (T_1015 + 3600) * 1000000  # 11:15:00Z in us
    inc = [
        # new item: Keys + NewImage
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 118734))},
         "Keys": keys_of(cart_item()), "NewImage": cart_item(1, "1")},
        # update: Keys + OldImage + NewImage
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 2451009))},
         "Keys": keys_of(order()),
         "OldImage": order(2, "PAID", paidAt=S("2026-11-30T10:15:42Z"), paymentRef=S("pay_7Hq2Lx9c")),
         "NewImage": order(3, "SHIPPED", paidAt=S("2026-11-30T10:15:42Z"), paymentRef=S("pay_7Hq2Lx9c"),
                           carrier=S("DPD"), trackingNo=S("15501234567890"))},
        # delete (NEW_AND_OLD_IMAGES view): Keys + OldImage
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 7390554))},
         "Keys": keys_of(player()), "OldImage": player(8, "1851")},
        # one more update, of a Match
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 9012345))},
         "Keys": keys_of(match()), "OldImage": match(),
         "NewImage": match(2, "2210", "WIN", reviewed={"BOOL": True})},
    ]
    write("export/incremental.json", "".join(compact_sorted(x) + "\n" for x in inc))

    inc_new = [
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 118734))},
         "Keys": keys_of(cart_item()), "NewImage": cart_item(1, "1")},
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 2451009))},
         "Keys": keys_of(order()),
         "NewImage": order(3, "SHIPPED", paidAt=S("2026-11-30T10:15:42Z"), paymentRef=S("pay_7Hq2Lx9c"),
                           carrier=S("DPD"), trackingNo=S("15501234567890"))},
        # delete (NEW_IMAGE view): Keys only
        {"Metadata": {"WriteTimestampMicros": N(str(w0 + 7390554))},
         "Keys": keys_of(player())},
    ]
    write("export/incremental-new-image.json", "".join(compact_sorted(x) + "\n" for x in inc_new))


# --------------------------------------------------------------------------
# records of DynamoDB's largest items (gzip-compressed: the data repeat)

MAX_ITEM = 400 * 1024  # DynamoDB's item limit, 409,600 bytes


def pattern(n, salt):
    """n bytes that cycle through every byte value: (7i + salt) mod 256."""
    return bytes((7 * i + salt) % 256 for i in range(n))


def exact_size(img):
    """DynamoDB's size of an image of S, N and B attributes only."""
    total = 0
    for k, av in img.items():
        t, v = next(iter(av.items()))
        total += len(k.encode())
        if t == "S":
            total += len(v.encode())
        elif t == "B":
            total += len(base64.b64decode(v))
        elif t == "N":
            total += (len(v.strip("-0").replace(".", "")) + 1) // 2 + 1
        else:
            raise ValueError(t)
    return total


def max_item(version, filler, name="blob", salt=0):
    """A Document of exactly MAX_ITEM bytes whose bulk is attribute name: a B
    of pattern bytes (filler "B"), or an S of filler characters."""
    img = {"PK": S("WS#acme"), "SK": S("DOC#d9"), "EntityType": S("Document"),
           "version": N(str(version)), "docId": S("d9"), "title": S("Scanned contract")}
    room = MAX_ITEM - exact_size(img) - len(name)
    if filler == "B":
        img[name] = {"B": base64.b64encode(pattern(room, salt)).decode()}
    else:
        img[name] = S(filler * (room // len(filler.encode())))
    img = sort_image(img)
    assert exact_size(img) <= MAX_ITEM and exact_size(img) > MAX_ITEM - 4, exact_size(img)
    return img


def write_gz(rel, text):
    write(rel, gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0), binary=True)


def build_large():
    t = T_1015 + 7200
    old, new = max_item(1, "B", salt=0), max_item(2, "B", salt=1)
    rec = stream_record("MODIFY", "4421590000000000017450450001", t, new=new, old=old,
                        size=exact_size(keys_of(new)) + exact_size(new) + exact_size(old))
    write_gz("large/streams-modify-400kb-binary.json.gz",
             json.dumps({"Records": [rec]}, separators=(",", ":")) + "\n")

    ctl = max_item(1, "\u0001", name="body")
    rec = stream_record("INSERT", "4421590100000000017450450002", t + 1, new=ctl,
                        size=exact_size(keys_of(ctl)) + exact_size(ctl))
    write_gz("large/streams-insert-400kb-control.json.gz",
             json.dumps({"Records": [rec]}, separators=(",", ":")) + "\n")

    # Kinesis: a MODIFY of a 395 KB string item (data under Kinesis's default
    # 1 MiB record), then one of the 400 KB binary item (1.09 MB of data: a
    # stream whose maximum record size is raised, up to 10 MiB).
    t_ms = t * 1000 + 250
    s_old = sort_image({**max_item(1, "x", name="body"), "body": S("x" * (395 * 1000))})
    s_new = sort_image({**s_old, "version": N("2"), "body": S("y" * (395 * 1000))})
    payloads = [
        kinesis_payload("MODIFY", t_ms, new=s_new, old=s_old, seed="big0"),
        kinesis_payload("MODIFY", t_ms + 1, new=new, old=old, seed="big1"),
    ]
    write_gz("large/kinesis-modify-400kb.json.gz",
             json.dumps(kinesis_event(payloads, first_seq=200), separators=(",", ":")) + "\n")

    # An incremental export data file: the same MODIFY with both images,
    # between two small lines.
    w = (T_1015 + 7200) * 1000000
    lines = [
        {"Metadata": {"WriteTimestampMicros": N(str(w + 1))},
         "Keys": keys_of(cart_item()), "NewImage": cart_item(1, "1")},
        {"Metadata": {"WriteTimestampMicros": N(str(w + 2))},
         "Keys": keys_of(new), "OldImage": old, "NewImage": new},
        {"Metadata": {"WriteTimestampMicros": N(str(w + 3))},
         "Keys": keys_of(player()), "OldImage": player(8, "1851")},
    ]
    write_gz("large/export-incremental-400kb-binary.json.gz",
             "".join(compact_sorted(x) + "\n" for x in lines))

    # A full export data file whose second line is the 400 KB item of
    # control characters: 2.46 MB of \u0001.
    write_gz("large/export-full-400kb-control.json.gz",
             "".join(compact_sorted({"Item": it}) + "\n" for it in [cart_item(1, "1"), ctl, player(8, "1851")]))

# export lines at DynamoDB's limits (every one valid)


def nested(levels, leaf, first="M"):
    """An attribute value of levels nested containers, M and L in turn (first
    outermost), around leaf. Returns the value and the decoders' path from the
    attribute's name to the innermost container's type key."""
    kinds = [("M" if (i % 2 == 0) == (first == "M") else "L") for i in range(levels)]
    path = ""
    for i, k in enumerate(kinds):
        path += "." + k
        if i < levels - 1:
            path += f".l{i + 1}" if k == "M" else "[0]"
    v = leaf
    for i in reversed(range(levels)):
        v = {"M": {f"l{i + 1}": v}} if kinds[i] == "M" else {"L": [v]}
    return v, path


MAX_NESTING = 32  # DynamoDB: "nested attributes up to 32 levels deep"


def build_limits():
    deep, _ = nested(MAX_NESTING, S("bottom"))
    deep_l, _ = nested(MAX_NESTING, {"SS": ["a", "b"]}, first="L")
    lines = [
        compact_sorted({"Item": sort_image({
            "PK": S("DEEP#1"), "SK": S("DEEP#1"), "EntityType": S("Deep"), "version": N("1"),
            "deep": deep, "deepList": deep_l})}),
        compact_sorted({"Item": sort_image({
            "PK": S("NUM#1"), "SK": S("NUM#1"), "EntityType": S("Numbers"), "version": N("0"),
            "n38": N("12345678901234567890123456789012345678"),
            "n38frac": N("-0.00012345678901234567890123456789012345678"),
            "n40trailingZeros": N("1000000000000000000000000000000000000000"),
            "nMax": N("9.9999999999999999999999999999999999999E+125"),
            "nMin": N("1E-130"),
            "nNegMin": N("-1E-130"),
            "nZero": N("0"),
            "nExp": N("12.5e-3"),
            "ns": {"NS": ["0", "1E+125", "-9.9999999999999999999999999999999999999E+125"]}})}),
        compact_sorted({"Item": sort_image({
            "PK": S("UNI#zoë"), "SK": S("名前#😀"), "EntityType": S("Unicodé 名前 😀"), "version": N("2"),
            "naïve": S("Zoë Ó Briain \ufffd 名前 😀"),
            "empty": S(""), "emptyList": {"L": []}, "emptyMap": {"M": {}},
            "b": {"B": "AAEC/w=="}, "bs": {"BS": ["AA=="]}, "yes": {"BOOL": True},
            "no": {"BOOL": False}, "nothing": {"NULL": True}, "one": {"SS": ["only"]}})}),
        # The same item as the decoders see it, spelled with escapes: the name of
        # the type attribute, a surrogate pair, and an escaped quote and solidus.
        compact_sorted({"Item": sort_image({
            "PK": S("ESC#1"), "SK": S("ESC#1"), "EntityType": S("Escaped"), "version": N("3"),
            "quote": S('say "hi" \\ a/b')})})
        .replace('"EntityType":{"S":"Escaped"}', '"Entity\\u0054ype":{"S":"Esc\\u0061ped"}')
        .replace('"version":{"N":"3"}', '"version":{"N":"\\u0033"}')
        .replace('a/b', 'a\\/b \\ud83d\\ude00'),
    ]
    write("export/limits.json", "".join(l + "\n" for l in lines))


# --------------------------------------------------------------------------
# malformed inputs

CASES = []


def case(file, fmt, whole, record, seq, path, what, content, binary=False):
    write("malformed/" + file, content, binary=binary)
    CASES.append({"file": file, "format": fmt, "whole": whole, "record": record,
                  "seq": seq, "path": path, "what": what})


TRIPLETS = 0


def streams_triplet(tag, bad_mutator, bad_base="modify"):
    """Three records: good INSERT, bad record, good REMOVE. Returns (event, bad seq)."""
    global TRIPLETS
    TRIPLETS += 1
    base = 4421600000000000017450400000 + TRIPLETS * 100000000000000000
    seqs = [str(base + i * 117 + 3) for i in range(3)]
    good0 = stream_record("INSERT", seqs[0], T_1015, new=order(1, "PENDING"), seed=tag + "0")
    if bad_base == "modify":
        bad = stream_record("MODIFY", seqs[1], T_1015 + 42,
                            new=order(2, "PAID", paidAt=S("2026-11-30T10:15:42Z")),
                            old=order(1, "PENDING"), seed=tag + "1")
    else:
        bad = stream_record("INSERT", seqs[1], T_1015 + 50, new=cart_item(), seed=tag + "1")
    good2 = stream_record("REMOVE", seqs[2], T_1015 + 97, old=player(), seed=tag + "2")
    bad = bad_mutator(bad)
    return {"Records": [good0, bad, good2]}, seqs[1]


def set_new(attr, value):
    def m(r):
        r["dynamodb"]["NewImage"][attr] = value
        r["dynamodb"]["NewImage"] = sort_image(r["dynamodb"]["NewImage"])
        return r
    return m


def streams_attr_case(file, attr, value, path, what):
    ev, seq = streams_triplet(file, set_new(attr, value))
    case(file, "streams", False, 1, seq, path, what, pretty(ev))


KTRIPLETS = 0


def build_malformed():
    good_event = open(os.path.join(HERE, "streams/event.json"), encoding="utf-8").read()

    # ---- Lambda DynamoDB Streams event: whole payload unusable
    case("streams-truncated.json", "streams", True, -1, "", "",
         "JSON ends in the middle of the second record", good_event[:1500])
    case("streams-empty.json", "streams", True, -1, "", "", "empty file (0 bytes)", "")
    case("streams-not-json.json", "streams", True, -1, "", "", "plain text, not JSON",
         "Records: INSERT USER#u42 ORDER#2026-11-30#o1001 status=PENDING\n")
    ev = json.loads(good_event)
    case("streams-top-level-array.json", "streams", True, -1, "", "",
         "top level is an array of records instead of {\"Records\":[...]}", pretty(ev["Records"][:2]))
    case("streams-records-not-array.json", "streams", True, -1, "", "Records",
         "Records is a single record object, not an array", pretty({"Records": ev["Records"][0]}))
    case("streams-records-string.json", "streams", True, -1, "", "Records",
         "Records is a string", pretty({"Records": "INSERT"}))

    # ---- Lambda DynamoDB Streams event: one bad record between two good ones
    ev, seq = streams_triplet("notobj", lambda r: "INSERT USER#u42 ORDER#2026-11-30#o1001")
    case("streams-record-not-object.json", "streams", False, 1, "", "",
         "record is a JSON string, not an object (its sequence number cannot be read)", pretty(ev))

    def m_event_name(r):
        r["eventName"] = "UPSERT"
        return r
    ev, seq = streams_triplet("upsert", m_event_name)
    case("streams-eventname-unknown.json", "streams", False, 1, seq, "eventName",
         "unknown eventName \"UPSERT\"", pretty(ev))

    def m_no_event_name(r):
        del r["eventName"]
        return r
    ev, seq = streams_triplet("noname", m_no_event_name)
    case("streams-eventname-missing.json", "streams", False, 1, seq, "eventName",
         "eventName missing", pretty(ev))

    def m_no_ddb(r):
        del r["dynamodb"]
        return r
    ev, seq = streams_triplet("noddb", m_no_ddb)
    case("streams-dynamodb-missing.json", "streams", False, 1, "", "dynamodb",
         "dynamodb object missing (so its SequenceNumber is missing too)", pretty(ev))

    def m_no_keys(r):
        del r["dynamodb"]["Keys"]
        return r
    ev, seq = streams_triplet("nokeys", m_no_keys)
    case("streams-keys-missing.json", "streams", False, 1, seq, "dynamodb.Keys",
         "MODIFY with both images but no Keys", pretty(ev))

    def m_insert_empty(r):
        del r["dynamodb"]["Keys"]
        del r["dynamodb"]["NewImage"]
        r["dynamodb"]["SizeBytes"] = 1
        return r
    ev, seq = streams_triplet("insempty", m_insert_empty, bad_base="insert")
    case("streams-insert-no-image-no-keys.json", "streams", False, 1, seq, "dynamodb.Keys",
         "INSERT with neither Keys nor NewImage", pretty(ev))

    streams_attr_case("streams-av-two-types.json", "status", {"S": "a", "N": "1"},
                      "dynamodb.NewImage.status", "attribute value with two type keys {\"S\":\"a\",\"N\":\"1\"}")
    streams_attr_case("streams-av-no-type.json", "orderDate", {},
                      "dynamodb.NewImage.orderDate", "attribute value with no type key {}")
    streams_attr_case("streams-av-unknown-type.json", "total", {"X": "1"},
                      "dynamodb.NewImage.total", "unknown type key {\"X\":\"1\"}")
    streams_attr_case("streams-s-number.json", "status", {"S": 42},
                      "dynamodb.NewImage.status.S", "S given a JSON number")
    streams_attr_case("streams-n-json-number.json", "total", {"N": 120.5},
                      "dynamodb.NewImage.total.N", "N given a JSON number instead of a string")
    streams_attr_case("streams-n-garbage.json", "total", {"N": "12x"},
                      "dynamodb.NewImage.total.N", "N is \"12x\"")
    streams_attr_case("streams-n-empty.json", "total", {"N": ""},
                      "dynamodb.NewImage.total.N", "N is the empty string")
    streams_attr_case("streams-n-nan.json", "total", {"N": "NaN"},
                      "dynamodb.NewImage.total.N", "N is \"NaN\"")
    streams_attr_case("streams-n-39-digits.json", "total",
                      {"N": "123456789012345678901234567890123456789"},
                      "dynamodb.NewImage.total.N", "N has 39 significant digits (DynamoDB allows 38)")
    streams_attr_case("streams-n-out-of-range.json", "total", {"N": "1E+126"},
                      "dynamodb.NewImage.total.N",
                      "N is 1E+126, above DynamoDB's largest number (9.99...E+125)")
    streams_attr_case("streams-b-not-base64.json", "receipt", {"B": "not base64!!"},
                      "dynamodb.NewImage.receipt.B", "B is not valid base64")
    streams_attr_case("streams-bool-string.json", "gift", {"BOOL": "true"},
                      "dynamodb.NewImage.gift.BOOL", "BOOL given the string \"true\"")
    streams_attr_case("streams-null-false.json", "coupon", {"NULL": False},
                      "dynamodb.NewImage.coupon.NULL", "NULL is false (DynamoDB only writes NULL:true)")
    streams_attr_case("streams-ss-non-string.json", "tags", {"SS": ["gift", 1]},
                      "dynamodb.NewImage.tags.SS[1]", "SS element is a number")
    streams_attr_case("streams-ss-empty.json", "tags", {"SS": []},
                      "dynamodb.NewImage.tags.SS", "empty SS (DynamoDB has no empty sets)")
    streams_attr_case("streams-ns-bad-number.json", "lineQty", {"NS": ["1", "two"]},
                      "dynamodb.NewImage.lineQty.NS[1]", "NS element \"two\" is not a number")
    streams_attr_case("streams-bs-non-string.json", "signatures", {"BS": ["AAEC", 5]},
                      "dynamodb.NewImage.signatures.BS[1]",
                      "BS element is a number (aws-lambda-go's decoder panics here)")
    streams_attr_case("streams-m-array.json", "shipping", {"M": [S("Dublin"), S("D02")]},
                      "dynamodb.NewImage.shipping.M", "M given an array")
    streams_attr_case("streams-l-object.json", "lines", {"L": {"p3": N("1")}},
                      "dynamodb.NewImage.lines.L", "L given an object")
    streams_attr_case("streams-nested-bad-n.json", "lines",
                      {"L": [{"M": {"productId": S("p3"), "qty": N("1")}},
                             {"M": {"productId": S("p9"), "qty": N("two")}}]},
                      "dynamodb.NewImage.lines.L[1].M.qty.N", "bad N deep inside L of M")
    streams_attr_case("streams-version-string.json", "version", S("3"),
                      "dynamodb.NewImage.version", "version attribute is a string {\"S\":\"3\"}")
    streams_attr_case("streams-entitytype-number.json", "EntityType", N("1"),
                      "dynamodb.NewImage.EntityType", "EntityType attribute is a number {\"N\":\"1\"}")

    def m_old_bad(r):
        r["dynamodb"]["OldImage"]["total"] = N("12x")
        return r
    ev, seq = streams_triplet("oldbad", m_old_bad)
    case("streams-oldimage-bad-n.json", "streams", False, 1, seq, "dynamodb.OldImage.total.N",
         "bad N in the OldImage of a MODIFY", pretty(ev))

    def m_seq(r):
        r["dynamodb"]["SequenceNumber"] = "44216000000000001745043A9211"
        return r
    ev, seq = streams_triplet("seqbad", m_seq)
    case("streams-seq-not-digits.json", "streams", False, 1, "44216000000000001745043A9211",
         "dynamodb.SequenceNumber", "SequenceNumber contains a letter", pretty(ev))

    def m_time(r):
        r["dynamodb"]["ApproximateCreationDateTime"] = "2026-11-30T10:15:42Z"
        return r
    ev, seq = streams_triplet("timestr", m_time)
    case("streams-time-string.json", "streams", False, 1, seq, "dynamodb.ApproximateCreationDateTime",
         "ApproximateCreationDateTime is a string", pretty(ev))

    big = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 20000)[:1100000]
    assert len(big) == 1100000

    def m_big(r):
        r["dynamodb"]["NewImage"]["body"] = S(big)
        r["dynamodb"]["SizeBytes"] = record_size(r["dynamodb"]["Keys"], r["dynamodb"]["NewImage"])
        return r
    ev, seq = streams_triplet("oversize", m_big, bad_base="insert")
    text = json.dumps(ev, separators=(",", ":")) + "\n"
    assert len(text.encode()) < 1200000, len(text)
    case("streams-oversized-record.json", "streams", False, 1, seq, "dynamodb.NewImage",
         "image larger than any real one: an S of 1,100,000 characters, over DynamoDB's "
         "400 KB item limit", text)

    # ---- Lambda Kinesis event
    t = (T_1015 + 900) * 1000

    def ktriplet(tag, bad_payload=None, bad_data=None):
        good0 = kinesis_payload("INSERT", t + 11, new=match(), seed=tag + "0")
        good2 = kinesis_payload("REMOVE", t + 907, old=comment("c10"), ttl=True, seed=tag + "2")
        global KTRIPLETS
        KTRIPLETS += 1
        ev = kinesis_event([good0, bad_payload if bad_payload is not None else good0, good2],
                           first_seq=100 + 10 * KTRIPLETS)
        if bad_data is not None:
            ev["Records"][1]["kinesis"]["data"] = bad_data
        return ev, ev["Records"][1]["kinesis"]["sequenceNumber"]

    good_k = pretty(kinesis_event([kinesis_payload("INSERT", t + 11, new=match(), seed="kt0"),
                                   kinesis_payload("MODIFY", t + 50, new=cart_item(2, "3"),
                                                   old=cart_item(), seed="kt1")], first_seq=90))
    case("kinesis-truncated.json", "kinesis", True, -1, "", "",
         "JSON ends inside the first record's data", good_k[:400])
    case("kinesis-records-not-array.json", "kinesis", True, -1, "", "Records",
         "Records is an object", pretty({"Records": json.loads(good_k)["Records"][0]}))

    ev, seq = ktriplet("kb64", bad_data="eyJhd3NSZWdpb24iOiJldS13ZXN0LTEi!!not*base64")
    case("kinesis-data-not-base64.json", "kinesis", False, 1, seq, "kinesis.data",
         "data is not valid base64", pretty(ev))

    ev, seq = ktriplet("knojson", bad_data=base64.b64encode(
        b"INSERT USER#u42 ORDER#2026-11-30#o1001 status=PENDING").decode())
    case("kinesis-data-not-json.json", "kinesis", False, 1, seq, "kinesis.data",
         "data is valid base64 but decodes to plain text, not JSON", pretty(ev))

    p = kinesis_payload("MODIFY", t + 50, new=cart_item(2, "3"), old=cart_item(), seed="knoname")
    del p["eventName"]
    ev, seq = ktriplet("knoname", bad_payload=p)
    case("kinesis-eventname-missing.json", "kinesis", False, 1, seq, "kinesis.data.eventName",
         "decoded payload has no eventName", pretty(ev))

    p = kinesis_payload("MODIFY", t + 50, new=cart_item(2, "3"), old=cart_item(), seed="kneg")
    p["dynamodb"]["ApproximateCreationDateTime"] = -(t + 50)
    ev, seq = ktriplet("kneg", bad_payload=p)
    case("kinesis-time-negative.json", "kinesis", False, 1, seq,
         "kinesis.data.dynamodb.ApproximateCreationDateTime",
         "ApproximateCreationDateTime is negative", pretty(ev))

    p = kinesis_payload("MODIFY", t * 1000 + 50123, new=cart_item(2, "3"), old=cart_item(),
                        precision="NANOSECOND", seed="kprec")
    ev, seq = ktriplet("kprec", bad_payload=p)
    case("kinesis-precision-unknown.json", "kinesis", False, 1, seq,
         "kinesis.data.dynamodb.ApproximateCreationDateTimePrecision",
         "unknown ApproximateCreationDateTimePrecision \"NANOSECOND\"", pretty(ev))

    p = kinesis_payload("MODIFY", t + 50, new=cart_item(2, "3"), old=cart_item(), seed="kbadn")
    p["dynamodb"]["NewImage"]["quantity"] = N("3 pcs")
    ev, seq = ktriplet("kbadn", bad_payload=p)
    case("kinesis-bad-n.json", "kinesis", False, 1, seq, "kinesis.data.dynamodb.NewImage.quantity.N",
         "N \"3 pcs\" inside the decoded payload", pretty(ev))

    p = kinesis_payload("MODIFY", t + 50, new=cart_item(2, "3"), old=cart_item(), seed="knotobj")
    ev, seq = ktriplet("knotobj", bad_payload=p,
                       bad_data=base64.b64encode(b'["INSERT",{"PK":{"S":"CART#c5"}}]').decode())
    case("kinesis-data-array.json", "kinesis", False, 1, seq, "kinesis.data",
         "decoded payload is a JSON array, not an object", pretty(ev))

    p = kinesis_payload("MODIFY", T_1015 + 50, new=cart_item(2, "3"), old=cart_item(), seed="ksec")
    ev, seq = ktriplet("ksec", bad_payload=p)
    case("kinesis-time-seconds.json", "kinesis", False, 1, seq,
         "kinesis.data.dynamodb.ApproximateCreationDateTime",
         "ApproximateCreationDateTime in seconds (10 digits), which no streaming destination writes", pretty(ev))

    # ---- DynamoDB Streams GetRecords response
    api = json.load(open(os.path.join(HERE, "streams-api/getrecords.json")))
    case("streams-api-records-not-array.json", "streams-api", True, -1, "", "Records",
         "Records is an object", pretty({"NextShardIterator": api["NextShardIterator"],
                                         "Records": api["Records"][0]}))
    recs = copy.deepcopy(api["Records"])
    mid = copy.deepcopy(recs[1])
    mid["dynamodb"]["SequenceNumber"] = "4421586050000000017450441090"
    mid["eventID"] = hexid("api-mid")
    mid["dynamodb"]["ApproximateCreationDateTime"] = "soon"
    third = copy.deepcopy(recs[1])
    third["dynamodb"]["SequenceNumber"] = "4421586200000000017450441290"
    third["eventID"] = hexid("api-third")
    case("streams-api-time-string.json", "streams-api", False, 1, "4421586050000000017450441090",
         "dynamodb.ApproximateCreationDateTime",
         "ApproximateCreationDateTime is a string that is neither a number nor an ISO 8601 time",
         pretty({"NextShardIterator": api["NextShardIterator"], "Records": [recs[0], mid, third]}))

    # ---- export lines
    full = open(os.path.join(HERE, "export/full.json"), encoding="utf-8").read().splitlines(True)
    inc = open(os.path.join(HERE, "export/incremental.json"), encoding="utf-8").read().splitlines(True)
    case("export-line-not-json.json", "export", False, 1, "", "",
         "second line is not JSON (cut off mid-item)",
         full[0] + full[1][:57] + "\n" + full[2])
    bad = json.loads(full[1])
    case("export-line-no-item.json", "export", False, 1, "", "Item",
         "line has \"item\" (wrong case) instead of \"Item\"",
         full[0] + compact_sorted({"item": bad["Item"]}) + "\n" + full[2])
    bad = json.loads(full[3])
    bad["Item"]["tags"] = {"SS": ["planning", 4]}
    case("export-ss-non-string.json", "export", False, 1, "", "Item.tags.SS[1]",
         "SS element is a number", full[0] + compact_sorted(bad) + "\n" + full[4])
    bad = json.loads(full[1])
    bad["Item"]["version"] = S("3")
    case("export-version-string.json", "export", False, 1, "", "Item.version",
         "version attribute is a string {\"S\":\"3\"}", full[0] + compact_sorted(bad) + "\n" + full[2])
    bad = json.loads(full[2])
    bad["Item"]["EntityType"] = N("1")
    case("export-entitytype-number.json", "export", False, 1, "", "Item.EntityType",
         "EntityType attribute is a number {\"N\":\"1\"}", full[0] + compact_sorted(bad) + "\n" + full[3])
    bad = json.loads(inc[1])
    case("export-incremental-no-keys-no-images.json", "export", False, 1, "", "Keys",
         "incremental line with Metadata only: no Keys, no NewImage, no OldImage",
         inc[0] + compact_sorted({"Metadata": bad["Metadata"]}) + "\n" + inc[2])
    bad = json.loads(inc[1])
    bad["NewImage"]["total"] = N("12x")
    case("export-incremental-bad-n.json", "export", False, 1, "", "NewImage.total.N",
         "bad N in an incremental line's NewImage", inc[0] + compact_sorted(bad) + "\n" + inc[2])
    bad = json.loads(inc[1])
    bad["Metadata"]["WriteTimestampMicros"] = N("soon")
    case("export-incremental-bad-timestamp.json", "export", False, 1, "",
         "Metadata.WriteTimestampMicros.N", "WriteTimestampMicros is not a number",
         inc[0] + compact_sorted(bad) + "\n" + inc[2])

    # ---- rules added with the shared scanner core: nesting, UTF-8, the
    # attribute value checks on full-export lines, duplicate member names
    def item_line(src, set_attrs=(), drop=(), edit=None):
        """Line src of the full export with attributes set and dropped, its
        compact text then edited by edit(text) (for what JSON cannot say)."""
        bad = json.loads(full[src])
        bad["Item"].update(dict(set_attrs))
        for a in drop:
            del bad["Item"][a]
        text = compact_sorted(bad)
        return edit(text) if edit else text

    def item_case(file, path, what, line, after=2):
        case(file, "export", False, 1, "", path, what, full[0] + line + "\n" + full[after])

    deep, path = nested(MAX_NESTING + 1, S("bottom"))
    item_case("export-nested-33-levels.json", "Item.deep" + path,
              "an attribute nested 33 levels deep (DynamoDB allows 32)", item_line(1, [("deep", deep)]))
    text = (full[0] + item_line(1, [("EntityType", S("Play@@BAD@@"))]) + "\n" + full[2]).encode()
    case("export-entitytype-invalid-utf8.json", "export", False, 1, "", "",
         "EntityType holds the byte 0xff, which is not UTF-8", text.replace(b"@@BAD@@", b"er\xff"), binary=True)
    item_case("export-n-garbage.json", "Item.rating.N", "N is \"12x\" in a full-export line",
              item_line(1, [("rating", N("12x"))]))
    item_case("export-n-40-digits.json", "Item.rating.N", "N has 40 significant digits (DynamoDB allows 38)",
              item_line(1, [("rating", N("1234567890123456789012345678901234567890"))]))
    item_case("export-ss-empty.json", "Item.tags.SS", "empty SS (DynamoDB has no empty sets)",
              item_line(3, [("tags", {"SS": []})]), after=4)
    item_case("export-unknown-type-nested.json", "Item.stats.M.wins", "unknown type key {\"Q\":\"1\"} inside an M",
              item_line(1, [("stats", {"M": {"losses": N("3"), "wins": {"Q": "1"}}})]))
    item_case("export-no-keys.json", "Item", "full-export item with none of the key attributes (PK, SK)",
              item_line(1, drop=["PK", "SK"]))
    item_case("export-duplicate-entitytype.json", "Item.EntityType",
              "EntityType given twice in one item (the last one would win)",
              item_line(1, edit=lambda t: t.replace('"EntityType":{"S":"Player"}',
                                                    '"EntityType":{"S":"Refund"},"EntityType":{"S":"Player"}')))
    item_case("export-duplicate-nested-name.json", "Item.stats.M.wins", "a name given twice inside an M",
              item_line(1, [("stats", {"M": {"wins": N("@@W@@")}})],
                        edit=lambda t: t.replace('"wins":{"N":"@@W@@"}', '"wins":{"N":"1"},"wins":{"N":"2"}')))
    it = json.loads(full[1])["Item"]
    bad = '{"Item":' + compact_sorted(it) + ',"Item":' + compact_sorted(json.loads(full[2])["Item"]) + "}"
    case("export-duplicate-item.json", "export", False, 1, "", "Item",
         "a line with two Item members", full[0] + bad + "\n" + full[2])
    bad = compact_sorted({"Item": it, "NewImage": it})
    case("export-item-and-newimage.json", "export", False, 1, "", "NewImage",
         "a line with both Item and NewImage: neither a full nor an incremental export line",
         full[0] + bad + "\n" + full[2])
    bad = compact_sorted(json.loads(inc[1]))
    bad = bad.replace('"Keys":', '"Keys":{"PK":{"S":"USER#u1"},"SK":{"S":"ORDER#x"}},"Keys":', 1)
    case("export-incremental-duplicate-keys.json", "export", False, 1, "", "Keys",
         "an incremental line with Keys given twice", inc[0] + bad + "\n" + inc[2])
    bad = compact_sorted(json.loads(inc[1]))
    bad = re.sub(r'"WriteTimestampMicros":(\{"N":"[0-9]+"\})', r'"WriteTimestampMicros":{"N":"1"},"WriteTimestampMicros":\1', bad, 1)
    case("export-incremental-duplicate-timestamp.json", "export", False, 1, "",
         "Metadata.WriteTimestampMicros", "WriteTimestampMicros given twice", inc[0] + bad + "\n" + inc[2])

    def m_deep(r):
        r["dynamodb"]["NewImage"]["deep"], _ = nested(MAX_NESTING + 1, S("bottom"))
        return r
    ev, seq = streams_triplet("deep33", m_deep)
    case("streams-nested-33-levels.json", "streams", False, 1, seq, "dynamodb.NewImage.deep",
         "an attribute nested 33 levels deep (DynamoDB allows 32)", pretty(ev))

    def m_dup_seq(r):
        r["dynamodb"]["SequenceNumber"] = "@@SEQ@@" + r["dynamodb"]["SequenceNumber"]
        return r
    ev, seq = streams_triplet("dupseq", m_dup_seq)
    text = pretty(ev).replace('"SequenceNumber": "@@SEQ@@' + seq + '"',
                              '"SequenceNumber": "' + seq + '",\n        "SequenceNumber": "' + str(int(seq) + 1) + '"')
    case("streams-duplicate-sequencenumber.json", "streams", False, 1, seq, "dynamodb.SequenceNumber",
         "SequenceNumber given twice (the first is reported)", text)

    def m_dup_type(r):
        r["dynamodb"]["NewImage"]["EntityType"] = S("@@TYPE@@")
        return r
    ev, seq = streams_triplet("duptype", m_dup_type)
    text = pretty(ev).replace('"EntityType": {"S": "@@TYPE@@"}',
                              '"EntityType": {"S": "Refund"},\n          "EntityType": {"S": "Order"}')
    case("streams-duplicate-entitytype.json", "streams", False, 1, seq, "dynamodb.NewImage.EntityType",
         "EntityType given twice in a NewImage", text)
    text = pretty({"Records": ev["Records"][:1]})
    text = text.replace('"Records": [', '"Records": [],\n  "Records": [', 1)
    case("streams-duplicate-records.json", "streams", True, -1, "", "Records",
         "an event with two Records members", text)

    recs = copy.deepcopy(api["Records"])
    mid = copy.deepcopy(recs[1])
    mid["dynamodb"]["SequenceNumber"] = "@@SEQ@@"
    mid["eventID"] = hexid("api-dup")
    third = copy.deepcopy(recs[1])
    third["dynamodb"]["SequenceNumber"] = "4421586200000000017450441290"
    third["eventID"] = hexid("api-dup-third")
    text = pretty({"NextShardIterator": api["NextShardIterator"], "Records": [recs[0], mid, third]})
    text = text.replace('"SequenceNumber": "@@SEQ@@"',
                        '"SequenceNumber": "4421586050000000017450441090",\n        "SequenceNumber": "4421586050000000017450441091"')
    case("streams-api-duplicate-sequencenumber.json", "streams-api", False, 1, "4421586050000000017450441090",
         "dynamodb.SequenceNumber", "SequenceNumber given twice", text)

    p = kinesis_payload("MODIFY", t + 50, new=cart_item(2, "3"), old=cart_item(), seed="kdupname")
    raw = json.dumps(p, separators=(",", ":"), ensure_ascii=False)
    raw = raw.replace('"eventName":"MODIFY"', '"eventName":"REMOVE","eventName":"MODIFY"', 1)
    ev, seq = ktriplet("kdupname", bad_payload=p, bad_data=base64.b64encode(raw.encode()).decode())
    case("kinesis-duplicate-eventname.json", "kinesis", False, 1, seq, "kinesis.data.eventName",
         "decoded payload has eventName twice", pretty(ev))
    ev, seq = ktriplet("kdupseq")
    text = pretty(ev).replace('"sequenceNumber": "' + seq + '"',
                              '"sequenceNumber": "' + seq + '",\n        "sequenceNumber": "1"', 1)
    case("kinesis-duplicate-sequencenumber.json", "kinesis", False, 1, seq, "kinesis.sequenceNumber",
         "kinesis.sequenceNumber given twice (the first is reported)", text)

    write("malformed/cases.json", pretty(CASES))


def main():
    build_streams()
    build_all_types()
    build_mentions_kinesis()
    build_view_types()
    build_overflowing_sum()
    build_kinesis()
    build_plain_text_kinesis()
    build_ion_export()
    build_getrecords()
    build_exports()
    build_limits()
    build_malformed()
    build_large()


if __name__ == "__main__":
    main()
