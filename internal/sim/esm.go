package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// InvokeFunc is a Lambda function as the event source mapping calls it: the
// event's bytes in, the response's bytes out. (*pipeline.Processor).Invoke
// is one.
type InvokeFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Event is one record as the event source mapping delivers it.
type Event struct {
	// Index is the record's place in the history it came from: the records
	// passed to StreamsShards, or the Kinesis records passed to KinesisShards.
	Index int
	// ID names the record in a partial batch response: the DynamoDB sequence
	// number, or the Kinesis sequence number.
	ID string
	// Data is the record's JSON, one element of the event's "Records".
	Data []byte
}

// Payload returns the Lambda event holding events, in order:
// {"Records":[...]}. DynamoDB Streams and Kinesis events have this shape.
func Payload(events []Event) []byte {
	n := len(`{"Records":[]}`)
	for _, e := range events {
		n += len(e.Data) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"Records":[`...)
	for i, e := range events {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e.Data...)
	}
	return append(buf, "]}"...)
}

// ESM models Lambda's event source mapping for DynamoDB Streams and Kinesis
// with ReportBatchItemFailures on (the rules and their AWS sources are in
// docs/pipeline.md, "Batch semantics"):
//
//   - Each shard is read from its checkpoint in batches: contiguous runs of at
//     most BatchSize records (with VaryBatches, of 1 to BatchSize). Shards
//     take turns, one batch each, round robin, so writes from different
//     shards interleave.
//   - Success (no batchItemFailures, an empty or null response): the
//     checkpoint moves past the batch. With probability RedeliverRate the
//     checkpoint is lost and the same batch is delivered once more.
//   - Partial failure: the checkpoint moves to the lowest reported record;
//     the next batch starts there, redelivering everything after it. (No
//     bisection: the response already names the record.) With VaryBatches
//     the retry is the rest of the failed batch, a shorter run or a new
//     batch of any size.
//   - Whole failure: an invocation error, an unreadable response, or an
//     itemIdentifier that is empty, null, missing or matches no record in the
//     batch. The whole batch is retried; with Bisect it is split in halves, the
//     first delivered (and split again if it fails) before the second.
//   - With probability DuplicateRate a batch is invoked twice and the first
//     response is lost (Lambda invokes at least once): the second decides.
//
// MaxAttempts bounds the deliveries in a row that make no progress (the
// checkpoint does not move, bisected halves included): when a shard's
// MaxAttempts-th such delivery fails, Run returns an error. It is a test's
// safety net, not Lambda's retry policy: injected faults must eventually
// clear, and a record that never succeeds is a failed test.
//
// The zero value is usable; Seed seeds the random choices (redelivery,
// duplicates, batch sizes). An ESM keeps its random state across runs, so a
// replay is deterministic but not a copy of the first run. It is not safe
// for concurrent use: it calls invoke from the goroutine that called Run,
// one batch at a time.
type ESM struct {
	BatchSize     int     // default 100
	Bisect        bool    // BisectBatchOnFunctionError
	RedeliverRate float64 // probability that a successful batch is delivered again
	// VaryBatches makes batch sizes vary as Lambda's do (a batching window
	// that closes early, the 6 MB payload limit): a batch from a new
	// checkpoint holds 1 to BatchSize records at random, and the retry after
	// a partial failure starts at the reported record and is, a third of
	// the time each, the rest of the failed batch, a shorter run, or a new
	// batch of any size. Off, every batch holds BatchSize records (fewer at
	// the shard's end).
	VaryBatches bool
	// DuplicateRate is the probability that a batch is invoked twice, the
	// first response lost.
	DuplicateRate float64
	MaxAttempts   int // default 100
	Seed          uint64
	// Encode builds the event from a batch; default Payload.
	Encode func([]Event) []byte
	// Trace, if set, is told about every delivery.
	Trace func(Delivery)

	rng *rand.Rand
}

// Delivery describes one invocation, for ESM.Trace.
type Delivery struct {
	Shard      int
	From, To   int  // the batch: the shard's events [From, To)
	Attempt    int  // deliveries in a row at this checkpoint, this one included
	Redelivery bool // the batch succeeded before and is delivered again
	Duplicate  bool // a first invocation of the batch, whose response is lost
	Response   []byte
	Err        error
}

// Stats counts what an ESM run did.
type Stats struct {
	Invocations     int // calls to the function
	Records         int // records delivered, every delivery counted
	Errors          int // invocations that returned an error
	WholeFailures   int // responses that fail the whole batch
	PartialFailures int // responses that name a failed record
	Retries         int // deliveries after a failed one in the same shard
	Bisections      int // failed batches split in two
	Redeliveries    int // successful batches delivered again
	Duplicates      int // invocations whose response was lost to a second one of the same batch
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.Invocations += o.Invocations
	s.Records += o.Records
	s.Errors += o.Errors
	s.WholeFailures += o.WholeFailures
	s.PartialFailures += o.PartialFailures
	s.Retries += o.Retries
	s.Bisections += o.Bisections
	s.Redeliveries += o.Redeliveries
	s.Duplicates += o.Duplicates
}

// shardRun is the mapping's state for one shard.
type shardRun struct {
	events     []Event
	checkpoint int   // events before it are done
	ends       []int // bisection: a stack of batch ends, decreasing; the top is the current batch's
	attempts   int   // deliveries in a row without progress
	retrying   bool  // the last delivery failed
	redelivery bool  // the current batch succeeded once and is being redelivered
	retryEnd   int   // VaryBatches: the end of the retry after a partial failure; 0: none
}

func (s *shardRun) done() bool { return s.checkpoint >= len(s.events) }

// batch returns s's next batch: from the checkpoint to the end on top of
// the bisection stack, or to the end chosen for a retry, or BatchSize
// records (with VaryBatches, 1 to BatchSize).
func (m *ESM) batch(s *shardRun) (from, to int) {
	if n := len(s.ends); n > 0 {
		return s.checkpoint, s.ends[n-1]
	}
	if s.retryEnd > s.checkpoint {
		return s.checkpoint, s.retryEnd
	}
	size := m.BatchSize
	if size <= 0 {
		size = 100
	}
	if m.VaryBatches {
		size = 1 + m.rng.IntN(size)
	}
	return s.checkpoint, min(s.checkpoint+size, len(s.events))
}

// advance moves the checkpoint to pos, dropping finished bisection halves.
func (s *shardRun) advance(pos int) {
	s.checkpoint = pos
	for n := len(s.ends); n > 0 && s.ends[n-1] <= pos; n-- {
		s.ends = s.ends[:n-1]
	}
	s.attempts, s.retrying, s.redelivery, s.retryEnd = 0, false, false, 0
}

// Run delivers every event of every shard to invoke until each shard's
// checkpoint is at its end, and returns what it did. It fails when ctx is done
// or a shard makes no progress in MaxAttempts deliveries.
func (m *ESM) Run(ctx context.Context, shards [][]Event, invoke InvokeFunc) (Stats, error) {
	if m.rng == nil {
		m.rng = rand.New(rand.NewPCG(m.Seed, esmSalt))
	}
	var st Stats
	runs := make([]*shardRun, len(shards))
	for i, events := range shards {
		runs[i] = &shardRun{events: events}
	}
	for busy := true; busy; {
		busy = false
		for i, s := range runs {
			if s.done() {
				continue
			}
			busy = true
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if err := m.deliver(ctx, i, s, invoke, &st); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// deliver sends shard i's next batch and moves its checkpoint by the outcome.
func (m *ESM) deliver(ctx context.Context, i int, s *shardRun, invoke InvokeFunc, st *Stats) error {
	from, to := m.batch(s)
	batch := s.events[from:to]
	s.attempts++
	if s.retrying {
		st.Retries++
	}
	encode := m.Encode
	if encode == nil {
		encode = Payload
	}
	payload := encode(batch)
	call := func(duplicate bool) ([]byte, error) {
		st.Invocations++
		st.Records += len(batch)
		resp, err := invoke(ctx, payload)
		if m.Trace != nil {
			m.Trace(Delivery{Shard: i, From: from, To: to, Attempt: s.attempts, Redelivery: s.redelivery, Duplicate: duplicate, Response: resp, Err: err})
		}
		return resp, err
	}
	if m.DuplicateRate > 0 && m.rng.Float64() < m.DuplicateRate {
		st.Duplicates++
		_, _ = call(true) // its response, error included, is lost
	}
	resp, err := call(false)

	ok := 0 // how many records of the batch succeeded
	whole := err != nil
	if err != nil {
		st.Errors++
	} else {
		ok, whole = outcome(resp, batch)
		if whole {
			st.WholeFailures++
		} else if ok < len(batch) {
			st.PartialFailures++
		}
	}

	switch {
	case !whole && ok == len(batch): // success
		if !s.redelivery && m.RedeliverRate > 0 && m.rng.Float64() < m.RedeliverRate {
			st.Redeliveries++
			s.attempts, s.retrying, s.redelivery = 0, false, true
			return nil
		}
		s.advance(to)
		return nil
	case ok > 0: // partial failure after some progress: resume at the failed record
		s.advance(from + ok)
		s.retrying = true
		if m.VaryBatches && len(s.ends) == 0 {
			switch at := from + ok; m.rng.IntN(3) {
			case 0:
				s.retryEnd = to // the rest of the batch
			case 1:
				s.retryEnd = at + 1 + m.rng.IntN(to-at) // shorter
			}
		}
		return nil
	}

	// No progress: the whole batch failed, or its first record did.
	s.retrying, s.redelivery = true, false
	if s.attempts >= m.maxAttempts() {
		why := "first record reported failed"
		if err != nil {
			why = "invocation error: " + err.Error()
		} else if whole {
			why = fmt.Sprintf("response fails the whole batch: %.200s", resp)
		}
		return fmt.Errorf("sim: shard %d: no progress at record %d (id %s) in %d deliveries; last: %s",
			i, from, batch[0].ID, s.attempts, why)
	}
	if whole && m.Bisect && len(batch) > 1 {
		// Deliver [from, mid), then [mid, to). Inside a bisection, to is
		// already on top of the stack.
		st.Bisections++
		if len(s.ends) == 0 {
			s.ends = append(s.ends, to)
		}
		s.ends = append(s.ends, from+len(batch)/2)
	}
	return nil
}

func (m *ESM) maxAttempts() int {
	if m.MaxAttempts <= 0 {
		return 100
	}
	return m.MaxAttempts
}

// outcome reads a function's response to batch: ok is the number of records
// before the lowest reported failure (len(batch) when none is reported), whole
// is true when the response fails the whole batch.
func outcome(resp []byte, batch []Event) (ok int, whole bool) {
	var r struct {
		BatchItemFailures []struct {
			ItemIdentifier *string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if len(resp) > 0 {
		if err := json.Unmarshal(resp, &r); err != nil {
			return 0, true
		}
	}
	ok = len(batch)
	for _, f := range r.BatchItemFailures {
		if f.ItemIdentifier == nil || *f.ItemIdentifier == "" {
			return 0, true
		}
		pos := -1
		for j := range batch {
			if batch[j].ID == *f.ItemIdentifier {
				pos = j
				break
			}
		}
		if pos < 0 {
			return 0, true
		}
		// IDs increase along a shard, so the lowest sequence number is the
		// earliest position.
		ok = min(ok, pos)
	}
	return ok, false
}

// Replay delivers shards again from their start through m: a full replay, as
// an operator's replay from the stream's trim horizon does.
func (m *ESM) Replay(ctx context.Context, shards [][]Event, invoke InvokeFunc) (Stats, error) {
	return m.Run(ctx, shards, invoke)
}

// ReplayWindow delivers again, through m, only the events whose Index is in
// [from, to): a partial replay of part of the history.
func (m *ESM) ReplayWindow(ctx context.Context, shards [][]Event, from, to int, invoke InvokeFunc) (Stats, error) {
	return m.Run(ctx, Window(shards, from, to), invoke)
}

// Window returns the events of shards whose Index is in [from, to), by shard,
// in order.
func Window(shards [][]Event, from, to int) [][]Event {
	out := make([][]Event, len(shards))
	for i, events := range shards {
		for _, e := range events {
			if from <= e.Index && e.Index < to {
				out[i] = append(out[i], e)
			}
		}
	}
	return out
}
