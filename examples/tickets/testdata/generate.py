#!/usr/bin/env python3
"""Writes the example's fixtures: a Lambda DynamoDB Streams event and a Lambda
Kinesis event carrying DynamoDB streaming-destination records, for the desk's
Ticket items. Run from anywhere: python3 examples/tickets/testdata/generate.py.
The same bytes on every run."""
import base64, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
ARN = "arn:aws:dynamodb:eu-west-1:111122223333:table/desk/stream/2026-11-01T00:00:00.000"

def S(v): return {"S": v}
def N(v): return {"N": str(v)}

def ticket(queue, tid, status, minutes, opened, subject, version):
    return {"PK": S("QUEUE#" + queue), "SK": S("TICKET#" + tid), "EntityType": S("Ticket"),
            "status": S(status), "minutes": N(minutes), "openedAt": N(opened),
            "subject": S(subject), "version": N(version)}

def keys(img): return {"PK": img["PK"], "SK": img["SK"]}

t1v1 = ticket("billing", "t1", "OPEN", 0, 1796030000, "Invoice shows the wrong VAT rate", 1)
t1v2 = ticket("billing", "t1", "SOLVED", "42.5", 1796030000, "Invoice shows the wrong VAT rate", 2)
t2v1 = ticket("billing", "t2", "PENDING", 15, 1796031000, "Card declined twice", 1)
t3v1 = ticket("access", "t3", "OPEN", 5, 1796032000, "Locked out after SSO change", 1)
agent = {"PK": S("AGENT#a7"), "SK": S("PROFILE"), "EntityType": S("Agent"), "name": S("Ana"), "version": N(1)}

def streams_record(i, name, seq, t, new=None, old=None, ttl=False):
    d = {"ApproximateCreationDateTime": t, "Keys": keys(new or old)}
    if new: d["NewImage"] = new
    if old: d["OldImage"] = old
    d.update({"SequenceNumber": seq, "SizeBytes": 200, "StreamViewType": "NEW_AND_OLD_IMAGES"})
    r = {"eventID": "%032x" % (0xdecaf0 + i), "eventName": name, "eventVersion": "1.1",
         "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1", "dynamodb": d, "eventSourceARN": ARN}
    if ttl:
        r["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return r

streams = {"Records": [
    streams_record(0, "INSERT", "4421584500000000017450439101", 1796030000, new=t1v1),
    streams_record(1, "INSERT", "4421584500000000017450439102", 1796031000, new=t2v1),
    streams_record(2, "INSERT", "4421584500000000017450439103", 1796031500, new=agent),
    streams_record(3, "MODIFY", "4421584500000000017450439104", 1796032500, new=t1v2, old=t1v1),
    streams_record(4, "INSERT", "4421584500000000017450439105", 1796032000, new=t3v1),
    streams_record(5, "REMOVE", "4421584500000000017450439106", 1796033000, old=t2v1),
]}

def kinesis_payload(i, name, t_ms, new=None, old=None):
    d = {"ApproximateCreationDateTime": t_ms, "Keys": keys(new or old)}
    if new: d["NewImage"] = new
    if old: d["OldImage"] = old
    d["SizeBytes"] = 200
    return {"awsRegion": "eu-west-1", "eventID": "0f6e1b3a-2c4d-4e5f-8a9b-0c1d2e3f4a%02d" % i,
            "eventName": name, "userIdentity": None, "recordFormat": "application/json",
            "tableName": "desk", "dynamodb": d, "eventSource": "aws:dynamodb"}

def kinesis_record(i, payload):
    seq = "4965663211621894577633146076650783471849643127965288%04d" % i
    data = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    return {"kinesis": {"kinesisSchemaVersion": "1.0", "partitionKey": "%032X" % (0xABCDEF + i),
                        "sequenceNumber": seq, "data": data, "approximateArrivalTimestamp": 1796030000.5 + i},
            "eventSource": "aws:kinesis", "eventVersion": "1.0",
            "eventID": "shardId-000000000000:" + seq, "eventName": "aws:kinesis:record",
            "invokeIdentityArn": "arn:aws:iam::111122223333:role/desk-kinesis-projector",
            "awsRegion": "eu-west-1", "eventSourceARN": "arn:aws:kinesis:eu-west-1:111122223333:stream/desk-changes"}

# The same history from the table's Kinesis destination, out of order and
# with one record duplicated, as Kinesis may deliver it.
payloads = [
    kinesis_payload(0, "MODIFY", 1796032500123, new=t1v2, old=t1v1),
    kinesis_payload(1, "INSERT", 1796030000120, new=t1v1),
    kinesis_payload(2, "INSERT", 1796031000456, new=t2v1),
    kinesis_payload(3, "INSERT", 1796032000789, new=t3v1),
    kinesis_payload(4, "REMOVE", 1796033000001, old=t2v1),
    kinesis_payload(3, "INSERT", 1796032000789, new=t3v1),
]
kinesis = {"Records": [kinesis_record(i, p) for i, p in enumerate(payloads)]}

for name, doc in [("streams-event.json", streams), ("kinesis-event.json", kinesis)]:
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
