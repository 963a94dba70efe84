// Package redrive reads the invocation records that Lambda's event source
// mapping sends to an on-failure destination when it discards a batch of a
// Kinesis or DynamoDB stream (retries exhausted, record too old), and runs
// the batches they carry through the same handler as the projector
// functions, idempotently.
//
// An invocation record is a JSON document (Lambda developer guide, "Retain
// discarded batch records", for Kinesis and for DynamoDB):
//
//	{"requestContext":{"requestId":…,"functionArn":…,"condition":"RetryAttemptsExhausted","approximateInvokeCount":3},
//	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
//	 "version":"1.0","timestamp":"2026-11-30T10:15:42.123Z",
//	 "KinesisBatchInfo":{"shardId":…,"startSequenceNumber":…,"endSequenceNumber":…,
//	                     "approximateArrivalOfFirstRecord":…,"approximateArrivalOfLastRecord":…,
//	                     "batchSize":2,"streamArn":…},              (DDBStreamBatchInfo for DynamoDB)
//	 "payload":"{\"Records\":[…]}"}                                  (S3 destinations only)
//
// Only an S3 destination keeps the payload, the whole invocation event;
// SQS and SNS destinations get the metadata alone, and the records must be
// read from the stream again (tributary replay --start SHARD:SEQ). Lambda
// writes each record to its own object, keyed
// aws/lambda/<ESM-UUID>/<shardID>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<UUID>.
// The payload is a JSON string holding the event; an embedded object is
// accepted too.
package redrive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/limitio"
	"github.com/tributary/tributary/pipeline"
)

// Invocation is one invocation record.
type Invocation struct {
	// Key is where it was read from: an S3 key, or a file's path.
	Key string
	// Version is the record format's version ("1.0"); Timestamp is when
	// Lambda wrote it.
	Version   string
	Timestamp time.Time
	// Condition is why the batch was discarded: RetryAttemptsExhausted,
	// RecordAgeExceeded, ...
	Condition string
	// RequestID, FunctionARN and InvokeCount describe the last invocation;
	// FunctionError and StatusCode its outcome.
	RequestID, FunctionARN string
	InvokeCount            int
	FunctionError          string
	StatusCode             int
	// Source is pipeline.SourceKinesis (KinesisBatchInfo) or
	// pipeline.SourceStreams (DDBStreamBatchInfo).
	Source pipeline.Source
	// Batch describes the discarded batch.
	Batch BatchInfo
	// Payload is the invocation's event, {"Records":[...]}; nil when the
	// destination kept none.
	Payload []byte
}

// BatchInfo is the batch's place in its stream.
type BatchInfo struct {
	ShardID                   string    `json:"shardId"`
	StartSequenceNumber       string    `json:"startSequenceNumber"`
	EndSequenceNumber         string    `json:"endSequenceNumber"`
	ApproximateArrivalOfFirst time.Time `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLast  time.Time `json:"approximateArrivalOfLastRecord"`
	BatchSize                 int       `json:"batchSize"`
	StreamARN                 string    `json:"streamArn"`
}

// ErrNoPayload is the error of a record without a payload (an SQS or SNS
// destination's, or one cut short): its records must be read from the
// stream again.
var ErrNoPayload = errors.New("the invocation record has no payload")

type wire struct {
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	ResponseContext struct {
		StatusCode      int    `json:"statusCode"`
		ExecutedVersion string `json:"executedVersion"`
		FunctionError   string `json:"functionError"`
	} `json:"responseContext"`
	Version   string          `json:"version"`
	Timestamp time.Time       `json:"timestamp"`
	Kinesis   *BatchInfo      `json:"KinesisBatchInfo"`
	Streams   *BatchInfo      `json:"DDBStreamBatchInfo"`
	Payload   json.RawMessage `json:"payload"`
}

// Parse reads one invocation record (gzip-compressed or not). The error
// names key. A record without a payload is returned with ErrNoPayload, so
// that the caller can say where in the stream its batch was.
func Parse(key string, data []byte) (*Invocation, error) {
	data, err := limitio.ReadAll(data, maxRecordBytes)
	if err != nil {
		return nil, fmt.Errorf("redrive: %s: %w: not an invocation record, which holds one Lambda event of at most 6 MB, quoted", key, err)
	}
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("redrive: %s is not an invocation record: %w", key, err)
	}
	inv := &Invocation{
		Key: key, Version: w.Version, Timestamp: w.Timestamp,
		Condition: w.RequestContext.Condition, RequestID: w.RequestContext.RequestID, FunctionARN: w.RequestContext.FunctionARN,
		InvokeCount: w.RequestContext.ApproximateInvokeCount, FunctionError: w.ResponseContext.FunctionError, StatusCode: w.ResponseContext.StatusCode,
	}
	switch {
	case w.Kinesis != nil && w.Streams == nil:
		inv.Source, inv.Batch = pipeline.SourceKinesis, *w.Kinesis
	case w.Streams != nil && w.Kinesis == nil:
		inv.Source, inv.Batch = pipeline.SourceStreams, *w.Streams
	default:
		return nil, fmt.Errorf("redrive: %s: want exactly one of KinesisBatchInfo and DDBStreamBatchInfo (a stream's invocation record)", key)
	}
	p := bytes.TrimSpace(w.Payload)
	switch {
	case len(p) == 0 || string(p) == "null":
		return inv, fmt.Errorf("redrive: %s (%s): %w: read shard %s from sequence number %s again", key, inv.Batch.StreamARN, ErrNoPayload, inv.Batch.ShardID, inv.Batch.StartSequenceNumber)
	case p[0] == '"':
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return nil, fmt.Errorf("redrive: %s: payload: %w", key, err)
		}
		inv.Payload = []byte(s)
	case p[0] == '{':
		inv.Payload = p
	default:
		return nil, fmt.Errorf("redrive: %s: payload: want the event as a JSON string or object", key)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(inv.Payload)), "{") {
		return nil, fmt.Errorf("redrive: %s: payload is not a JSON event", key)
	}
	if len(inv.Payload) > pipeline.MaxLambdaPayloadBytes {
		return nil, fmt.Errorf("redrive: %s: payload of %d bytes: not a Lambda event, which is at most Lambda's %d-byte payload", key, len(inv.Payload), pipeline.MaxLambdaPayloadBytes)
	}
	return inv, nil
}

// maxRecordBytes bounds an invocation record: it quotes one Lambda event,
// at most 6 MB, as a JSON string, which at most triples it (a character of
// two UTF-8 bytes escaped as \u00e9, six), beside a few hundred bytes of
// metadata.
const maxRecordBytes = 3*pipeline.MaxLambdaPayloadBytes + 64<<10

// decode decodes the payload's records into changes, as the projector's
// processor does.
func (inv *Invocation) decode(opts pipeline.Options) ([]pipeline.Change, error) {
	if inv.Source == pipeline.SourceKinesis {
		return pipeline.DecodeKinesisEvent(inv.Payload, opts)
	}
	return pipeline.DecodeStreamsEvent(inv.Payload, opts)
}

// Record returns an invocation record in the form an S3 on-failure
// destination writes (and Parse reads) for a batch that a handler of
// Tributary's own could not apply and keeps for redrive: a shadow
// projector's failed batch, say. condition says why (e.g.
// "ShadowFailed"), functionError what failed; payload is the invocation's
// event.
func Record(source pipeline.Source, batch BatchInfo, condition, functionError string, payload []byte, at time.Time) ([]byte, error) {
	var w wire
	w.Version, w.Timestamp = "1.0", at.UTC()
	w.RequestContext.Condition = condition
	w.RequestContext.ApproximateInvokeCount = 1
	w.ResponseContext.StatusCode = 200
	w.ResponseContext.FunctionError = functionError
	b := batch
	switch source {
	case pipeline.SourceKinesis:
		w.Kinesis = &b
	case pipeline.SourceStreams:
		w.Streams = &b
	default:
		return nil, fmt.Errorf("redrive: a record of source %v: want streams or kinesis", source)
	}
	p, err := json.Marshal(string(payload))
	if err != nil {
		return nil, err
	}
	w.Payload = p
	return json.Marshal(w)
}
