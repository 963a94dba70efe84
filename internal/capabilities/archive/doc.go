// Package archive writes the items DynamoDB's time to live deletes into S3
// (or a local directory laid out the same way), exactly once, partitioned by
// entity type and date, in a form ImportTable and the reimport tooling read;
// and reads such archives back (list, print, restore).
//
// # Layout
//
// One object per (batch, entity type, date), gzip-compressed JSON lines:
//
//	<prefix>/entity=<EntityType>/date=<YYYY-MM-DD>/<firstSeq>.jsonl.gz
//
// The entity is the old image's type attribute, "_unknown" when it has none;
// a type that is not a safe path segment is percent-encoded (EntitySegment).
// The date is the item's ttl attribute (epoch seconds, UTC) when it is a
// number, else the removal time. firstSeq is the stream sequence number of
// the first record of that (entity, date) in the batch.
//
// Each line is the export form of the item plus its metadata, beside it:
//
//	{"Item":{...old image in DynamoDB JSON, names sorted...},"Archive":{"EventID":"...","RemovedAt":"2026-01-01T00:00:00Z","Table":"App","StreamARN":"arn:...","SequenceNumber":"..."}}
//
// ImportTable (on moto: every item, no error) and pipeline.ExportDecoder read
// "Item" and ignore "Archive"; docs/archive.md gives the evidence and the
// fallback (RestoreExport writes bare {"Item":...} lines).
//
// # The naming and reporting rule
//
// Objects are named by the sequence number of the first record of their
// (entity, date) group within the batch, and if any object of the batch is
// not written durably the handler reports the batch's first record as the
// failure, never a later one, so that Lambda retries from the same
// checkpoint.
//
// Why this is exactly once. The records Lambda gives the function from one
// shard form a fixed sequence r0, r1, ... (the filter is fixed). Every batch
// is a contiguous run of it starting at the checkpoint c: first deliveries,
// retries, bisected halves, retries from a reported record and whole-batch
// redeliveries all start at the checkpoint of their time. For a group G
// (an entity and a date, a function of the record alone), let fG(c) be the
// first record of G at or after c. A batch [c, c+n) writes, for each group
// G it holds, the object named fG(c) with G's records in [c, c+n): the name
// does not depend on n, and the content is a prefix of G's records at or
// after c. Between invocations the archive satisfies, for the checkpoint c:
//
//	I1  every TTL removal before c is in exactly one object;
//	I2  an object holding a record at or after c is named fG(c), for its
//	    group G, and holds a prefix of G's records at or after c.
//
// It holds at the start (c = 0, empty archive). A batch from c only writes
// names fG(c), replacing a prefix by a prefix (a write is all or nothing),
// and never touches an object holding records before c. If the batch
// reports its first record, c stays and I1, I2 hold. If every object was
// written, the checkpoint moves to c' = c+n: each removal in [c, c') is in
// its group's object fG(c) and, by I2, in no other; an object left holding
// records at or after c' belongs to a group with no record in [c, c'), so
// its name fG(c) is fG(c'). A redelivery of the last batch moves the
// checkpoint back to its start, where I1 and I2 still hold, and a duplicate
// invocation writes the same bytes again. The handler reports a later record
// k only once every object of the records before it is written (a TTL
// removal without an old image; the Processor does the same for an
// undecodable record): that is the success of the batch [c, k). When the stream is drained, every
// removal is in exactly one object.
//
// Reporting a later record breaks I2: with the failed group's first record
// k reported, an object fG(c) written by the batch may hold G's records after
// k; the next batch starts at k and names fG(k), a second object holding
// them again. TestSimulationNaiveRuleDuplicates shows it.
//
// The rule assumes what Lambda does with ParallelizationFactor 1 and
// ReportBatchItemFailures on (without it, a report is ignored and failed
// objects are lost). A replay whose batches start elsewhere (the event source
// mapping re-created at TRIM_HORIZON, a checkpoint lost further back than
// one batch) and a batch abandoned after its retries can archive records
// twice, never lose them; restore keeps one version per item, and redriving
// an abandoned batch as one batch restores I2. docs/archive.md has the
// details.
package archive
