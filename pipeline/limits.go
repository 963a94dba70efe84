package pipeline

// Size limits. Every limit on a record, a line or a payload follows from
// what AWS can produce: DynamoDB's item limit, grown by the worst that each
// format's encoding does to an item, and capped by the limit of what
// carries it (a Lambda invocation's payload, a Kinesis record). A record
// within them is never rejected for its size; Options.MaxRecordBytes can
// only lower them.
//
// How much DynamoDB JSON an item of ItemSize s can take: at most
// jsonPerItemByte*s + 2 bytes. The densest encoding per byte of item size
// is a number: DynamoDB counts one or two significant digits as 2 bytes
// ("1 byte per two significant digits, plus 1 byte") but writes numbers in
// plain notation, so -1.2E-130 is "-0.000…012", 134 characters (boto3
// issue #2500 shows 1E+100 coming back as 101 digits). In a number set that
// is `"…",`, 137 bytes for 2: 68.5 a byte. Nothing else comes close: in a
// list the same number is `{"N":"…"},`, 143 bytes for 3 (the element's
// byte); an empty string in a list `{"S":""},`, 9 for 1; a string of
// control characters escapes each byte to 6 (\u0001); binary grows by 4/3
// (base64); a BOOL in a list `{"BOOL":false},`, 15 for 2.
const (
	// MaxItemBytes is DynamoDB's item size limit, 400 KB, in the item-size
	// accounting of ItemSize (the DynamoDB Developer Guide's "Item sizes
	// and formats").
	MaxItemBytes = 400 << 10
	// MaxLambdaPayloadBytes is Lambda's limit on a synchronous
	// invocation's request, 6 MB (6,291,456 bytes): the largest event an
	// event source mapping delivers, and so the largest of its records.
	MaxLambdaPayloadBytes = 6 << 20
	// maxKinesisRecordBytes is the largest data blob of a Kinesis record:
	// 10 MiB, for a stream whose maximum record size is raised from the
	// default 1 MiB (Kinesis Data Streams, "Handle large records").
	maxKinesisRecordBytes = 10 << 20

	// jsonPerItemByte bounds the DynamoDB JSON bytes per byte of item
	// size: 68.5, rounded up (see above).
	jsonPerItemByte = 69
	// MaxImageJSONBytes bounds the DynamoDB JSON of one item image.
	MaxImageJSONBytes = jsonPerItemByte*MaxItemBytes + 2
	// maxKeysJSONBytes bounds a record's Keys: a partition key of at most
	// 2,048 bytes and a sort key of at most 1,024, named by at most 255
	// bytes each, every byte escaped to at most 6 (numbers are shorter:
	// 38 digits in up to 170 characters), plus the JSON around them.
	maxKeysJSONBytes = 6*(2048+1024+2*255) + 256
	// recordFieldsBytes bounds everything in a change record besides its
	// images and keys: event ID and name, ARNs (a table name has at most
	// 255 bytes), Region, user identity, sequence number (at most 40
	// digits), times, sizes, view type, and the JSON around them.
	recordFieldsBytes = 4 << 10

	// maxStreamsRecordBytes bounds one DynamoDB change record in JSON,
	// both images and keys included: a record of the DynamoDB Streams API
	// (GetRecords), or the data of a record that DynamoDB's Kinesis
	// streaming destination writes.
	maxStreamsRecordBytes = 2*MaxImageJSONBytes + maxKeysJSONBytes + recordFieldsBytes
	// maxLambdaRecordBytes bounds one record of a Lambda DynamoDB Streams
	// or Kinesis event: a change record can be larger than a Lambda
	// payload, but Lambda delivers none that is.
	maxLambdaRecordBytes = min(maxStreamsRecordBytes, MaxLambdaPayloadBytes)
	// maxKinesisDataBytes bounds the data of a Kinesis record that
	// DynamoDB's streaming destination wrote: a change record, within
	// Kinesis's record limit.
	maxKinesisDataBytes = min(maxStreamsRecordBytes, maxKinesisRecordBytes)
	// MaxStreamsAPIBodyBytes bounds a DynamoDB Streams GetRecords response
	// body: at most 1 MB of items' data ("GetRecords can retrieve a maximum
	// of 1 MB of data or 1000 stream records"), grown as any images, plus
	// the record that takes it past 1 MB, plus the other fields of up to
	// 1,000 records.
	MaxStreamsAPIBodyBytes = jsonPerItemByte*(1<<20) + maxStreamsRecordBytes + 1000*(maxKeysJSONBytes+recordFieldsBytes)
	// MaxExportLineBytes bounds one line of a DynamoDB export data file in
	// DYNAMODB_JSON: an incremental export's line holds the keys, both
	// images and the write time; a full export's, one image.
	MaxExportLineBytes = 2*MaxImageJSONBytes + maxKeysJSONBytes + recordFieldsBytes
)
