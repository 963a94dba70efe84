package sim

import (
	"encoding/base64"
	"reflect"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// This file writes records in the wire formats of pipeline/testdata:
// the Lambda DynamoDB Streams event and the Lambda Kinesis event whose data is
// DynamoDB's streaming-destination payload. Images are written by
// pipeline.AppendItem.

// StreamsShards encodes records as DynamoDB Streams event records and groups
// them by shard, in order: the input of ESM.Run for the Streams path.
func StreamsShards(records []Record) [][]Event {
	e := newEncoder()
	var shards [][]Event
	for i := range records {
		r := &records[i]
		for len(shards) <= r.Shard {
			shards = append(shards, nil)
		}
		e.out = e.streamsRecord(e.out[:0], r)
		shards[r.Shard] = append(shards[r.Shard], Event{Index: i, ID: r.Seq, Data: e.keep(&e.outChunk, e.out)})
	}
	return shards
}

// StreamsEvent returns the Lambda DynamoDB Streams event holding records, in
// the shape of pipeline/testdata/streams/event.json (compact).
func StreamsEvent(records []Record) []byte {
	e := newEncoder()
	buf := make([]byte, 0, e.estimate(records, 1))
	buf = append(buf, `{"Records":[`...)
	for i := range records {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = e.streamsRecord(buf, &records[i])
	}
	return append(buf, "]}"...)
}

// AppendStreamsRecord appends r as one record of a Lambda DynamoDB Streams
// event: time in whole seconds, userIdentity only on a TTL removal, view type
// NEW_AND_OLD_IMAGES, the stream of table "app".
func AppendStreamsRecord(buf []byte, r *Record) []byte {
	return (&encoder{}).streamsRecord(buf, r)
}

// KinesisShards encodes records as Lambda Kinesis event records and groups
// them by Kinesis shard, in order: the input of ESM.Run for the Kinesis path.
func KinesisShards(records []KinesisRecord) [][]Event {
	e := newEncoder()
	var shards [][]Event
	for i := range records {
		r := &records[i]
		for len(shards) <= r.KinesisShard {
			shards = append(shards, nil)
		}
		e.out = e.kinesisRecord(e.out[:0], r)
		shards[r.KinesisShard] = append(shards[r.KinesisShard], Event{Index: i, ID: r.KinesisSeq, Data: e.keep(&e.outChunk, e.out)})
	}
	return shards
}

// KinesisEvent returns the Lambda Kinesis event holding records, in the shape
// of pipeline/testdata/kinesis/event-ms.json (compact).
func KinesisEvent(records []KinesisRecord) []byte {
	e := newEncoder()
	n := 64
	for i := range records {
		n += e.recordSize(&records[i].Record)*4/3 + 600
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"Records":[`...)
	for i := range records {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = e.kinesisRecord(buf, &records[i])
	}
	return append(buf, "]}"...)
}

// AppendKinesisRecord appends r as one record of a Lambda Kinesis event: its
// data is the base64 of the streaming destination's JSON payload.
func AppendKinesisRecord(buf []byte, r *KinesisRecord) []byte {
	return (&encoder{}).kinesisRecord(buf, r)
}

// AppendKinesisPayload appends the JSON that DynamoDB's Kinesis streaming
// destination writes for r: time in milliseconds, eventID as a UUID,
// userIdentity null or the TTL identity, no sequence number or view type.
func AppendKinesisPayload(buf []byte, r *Record) []byte {
	return (&encoder{}).kinesisPayload(buf, r)
}

const ttlIdentity = `{"type":"Service","principalId":"dynamodb.amazonaws.com"}`

// encoder writes records. Made by newEncoder, it remembers the DynamoDB JSON
// and size of every image it wrote, by the image's identity: an image is in
// two records (one's NewImage, the next one's OldImage) and images are
// immutable, so each is written once. The zero encoder remembers nothing.
type encoder struct {
	images   map[uintptr]image // nil: no cache
	keys     map[itemKey]image // the Keys of records, by PK and SK
	imgChunk []byte            // storage for cached images
	outChunk []byte            // storage for Event.Data
	scratch  []byte
	out      []byte
	out2     []byte // Kinesis payloads
}

type image struct {
	json []byte
	size int64
}

func newEncoder() *encoder {
	return &encoder{images: make(map[uintptr]image), keys: make(map[itemKey]image)}
}

const chunkSize = 4 << 20

// keep copies b into *chunk, starting a new chunk when it is full, and
// returns the copy. Earlier copies stay valid: a chunk is never reallocated.
func (e *encoder) keep(chunk *[]byte, b []byte) []byte {
	if cap(*chunk)-len(*chunk) < len(b) {
		*chunk = make([]byte, 0, max(chunkSize, len(b)))
	}
	start := len(*chunk)
	*chunk = append(*chunk, b...)
	return (*chunk)[start:len(*chunk):len(*chunk)]
}

// image returns item's JSON and size, from the cache when it has them.
func (e *encoder) image(item pipeline.Item) image {
	if e.images == nil {
		return image{json: pipeline.AppendItem(nil, item), size: itemSize(item)}
	}
	p := reflect.ValueOf(item).Pointer()
	if im, ok := e.images[p]; ok {
		return im
	}
	e.scratch = pipeline.AppendItem(e.scratch[:0], item)
	im := image{json: e.keep(&e.imgChunk, e.scratch), size: itemSize(item)}
	e.images[p] = im
	return im
}

// keyImage returns the JSON and size of a record's Keys. Each record has
// its own Keys map, so the cache is by PK and SK.
func (e *encoder) keyImage(keys pipeline.Item) image {
	pk, sk, err := keyStrings(keys)
	if e.keys == nil || err != nil || len(keys) != 2 {
		return image{json: pipeline.AppendItem(nil, keys), size: itemSize(keys)}
	}
	k := itemKey{pk, sk}
	if im, ok := e.keys[k]; ok {
		return im
	}
	e.scratch = pipeline.AppendItem(e.scratch[:0], keys)
	im := image{json: e.keep(&e.imgChunk, e.scratch), size: itemSize(keys)}
	e.keys[k] = im
	return im
}

// recordSize returns the bytes of r's keys and images in JSON.
func (e *encoder) recordSize(r *Record) int {
	n := len(e.keyImage(r.Keys).json)
	if r.New != nil {
		n += len(e.image(r.New).json)
	}
	if r.Old != nil {
		n += len(e.image(r.Old).json)
	}
	return n
}

// estimate returns about how many bytes records take encoded, with images
// expanded by factor (base64: 4/3).
func (e *encoder) estimate(records []Record, factor float64) int {
	n := 64
	for i := range records {
		n += int(float64(e.recordSize(&records[i])+500) * factor)
	}
	return n
}

func (e *encoder) streamsRecord(buf []byte, r *Record) []byte {
	buf = append(buf, `{"eventID":"`...)
	buf = append(buf, r.EventID...)
	buf = append(buf, `","eventName":"`...)
	buf = append(buf, r.Kind.String()...)
	buf = append(buf, `","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"`+Region+`",`...)
	if r.TTL {
		buf = append(buf, `"userIdentity":`+ttlIdentity+`,`...)
	}
	buf = append(buf, `"dynamodb":{"ApproximateCreationDateTime":`...)
	buf = strconv.AppendInt(buf, r.Time.Unix(), 10)
	buf, size := e.images3(buf, r)
	buf = append(buf, `,"SequenceNumber":"`...)
	buf = append(buf, r.Seq...)
	buf = append(buf, `","SizeBytes":`...)
	buf = strconv.AppendInt(buf, size, 10)
	return append(buf, `,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"`+StreamARN+`"}`...)
}

// images3 appends the Keys, NewImage and OldImage members and returns the
// record's size as DynamoDB counts it.
func (e *encoder) images3(buf []byte, r *Record) ([]byte, int64) {
	keys := e.keyImage(r.Keys)
	buf = append(buf, `,"Keys":`...)
	buf = append(buf, keys.json...)
	size := keys.size
	if r.New != nil {
		im := e.image(r.New)
		buf = append(buf, `,"NewImage":`...)
		buf = append(buf, im.json...)
		size += im.size
	}
	if r.Old != nil {
		im := e.image(r.Old)
		buf = append(buf, `,"OldImage":`...)
		buf = append(buf, im.json...)
		size += im.size
	}
	return buf, size
}

func (e *encoder) kinesisRecord(buf []byte, r *KinesisRecord) []byte {
	buf = append(buf, `{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"`...)
	buf = append(buf, r.PartitionKey...)
	buf = append(buf, `","sequenceNumber":"`...)
	buf = append(buf, r.KinesisSeq...)
	buf = append(buf, `","data":"`...)
	payload := e.kinesisPayload(nil, &r.Record)
	buf = base64.StdEncoding.AppendEncode(buf, payload)
	buf = append(buf, `","approximateArrivalTimestamp":`...)
	ms := r.Arrival.UnixMilli()
	buf = strconv.AppendInt(buf, ms/1000, 10)
	buf = append(buf, '.')
	buf = appendPadded(buf, uint64(ms%1000), 3)
	buf = append(buf, `},"eventSource":"aws:kinesis","eventVersion":"1.0","eventID":"shardId-`...)
	buf = appendPadded(buf, uint64(r.KinesisShard), 12)
	buf = append(buf, ':')
	buf = append(buf, r.KinesisSeq...)
	return append(buf, `","eventName":"aws:kinesis:record","invokeIdentityArn":"`+kinesisRoleARN+
		`","awsRegion":"`+Region+`","eventSourceARN":"`+KinesisStreamARN+`"}`...)
}

// kinesisPayload appends r's streaming-destination payload to buf; with a nil
// buf it uses (and returns) the encoder's own buffer.
func (e *encoder) kinesisPayload(buf []byte, r *Record) []byte {
	own := buf == nil
	if own {
		buf = e.out2[:0]
	}
	buf = append(buf, `{"awsRegion":"`+Region+`","eventID":"`...)
	buf = append(buf, uuid(r.EventID)...)
	buf = append(buf, `","eventName":"`...)
	buf = append(buf, r.Kind.String()...)
	buf = append(buf, `","userIdentity":`...)
	if r.TTL {
		buf = append(buf, ttlIdentity...)
	} else {
		buf = append(buf, "null"...)
	}
	buf = append(buf, `,"recordFormat":"application/json","tableName":"`+TableName+`","dynamodb":{"ApproximateCreationDateTime":`...)
	buf = strconv.AppendInt(buf, r.Time.UnixMilli(), 10)
	buf, size := e.images3(buf, r)
	buf = append(buf, `,"SizeBytes":`...)
	buf = strconv.AppendInt(buf, size, 10)
	buf = append(buf, `},"eventSource":"aws:dynamodb"}`...)
	if own {
		e.out2 = buf
	}
	return buf
}

// itemSize estimates an item's size as DynamoDB counts it: attribute names
// plus values (numbers about one byte per two digits).
func itemSize(item pipeline.Item) int64 {
	var n int64
	for name, v := range item {
		n += int64(len(name)) + valueSize(v)
	}
	return n
}

func valueSize(av types.AttributeValue) int64 {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return int64(len(v.Value))
	case *types.AttributeValueMemberN:
		return int64(len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return int64(len(v.Value))
	case *types.AttributeValueMemberSS:
		var n int64
		for _, s := range v.Value {
			n += int64(len(s))
		}
		return n
	case *types.AttributeValueMemberNS:
		var n int64
		for _, s := range v.Value {
			n += int64(len(s)+1)/2 + 1
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + itemSize(v.Value)
	case *types.AttributeValueMemberL:
		n := int64(3)
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	}
	return 1
}
