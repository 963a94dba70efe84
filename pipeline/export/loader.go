package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/retry"
	"github.com/tributary/tributary/pipeline"
)

// LoaderAPI is the part of the DynamoDB client the loader uses.
// *dynamodb.Client implements it.
type LoaderAPI interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// LoadOptions configures Load.
type LoadOptions struct {
	// Table is the existing table to load into (required).
	Table string
	// Entities selects the entity types to load (as the items spell them,
	// UnknownEntity for items without one); empty loads them all.
	Entities []string
	// MaxWriteUnits limits the load to this many write units per second
	// (0: no limit). An item costs one unit per started KB, as in DynamoDB.
	MaxWriteUnits float64
	// IfNewer writes each item with its own conditional PutItem, only if the
	// table has no such item or an older version of it (by
	// VersionAttribute): a rerun never overwrites newer data. Items without
	// a version are then written only where the table has none.
	IfNewer bool
	// VersionAttribute names the version attribute. Default "version".
	VersionAttribute string
	// Workers is the number of parts loaded at once. Default 4.
	Workers int
	// MaxAttempts bounds the tries of one batch whose items DynamoDB leaves
	// unprocessed (throttling). Default 12: about two minutes of backoff.
	MaxAttempts int
	// Resume continues from the checkpoint of an earlier run of the same
	// load (table, output, IfNewer). Default: start over.
	Resume bool
	// CheckpointEvery is how often the checkpoint is saved. Default 2s.
	CheckpointEvery time.Duration
	// Progress, when set, is called (from several goroutines) after each
	// batch with the items and write units it took.
	Progress func(items int64, units float64)
	// Sleep waits between retries and for the rate limit, and Now tells the
	// time (tests replace both). Defaults: a timer, time.Now.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// LoadStats are a load's counts.
type LoadStats struct {
	Items       int64   // items in the selected parts
	Written     int64   // items written
	Skipped     int64   // IfNewer: items the table already had in this or a newer version
	Resumed     int64   // items skipped because the checkpoint had them
	Units       float64 // write units consumed (estimated from item sizes)
	Requests    int64   // BatchWriteItem or PutItem calls
	Unprocessed int64   // items DynamoDB returned unprocessed, and retried
}

// Checkpoint is the state of a load, saved under _reimport/ in the output
// store as it goes.
type Checkpoint struct {
	Version     string `json:"version"`
	Table       string `json:"table"`
	Fingerprint string `json:"fingerprint"`
	IfNewer     bool   `json:"ifNewer"`
	// Parts maps a part's key to the number of its lines written (in order,
	// from the first); a part not listed has none, one equal to its item
	// count is done.
	Parts map[string]int64 `json:"parts"`
}

func checkpointKey(table string) string { return "_reimport/" + table + ".json" }

// Load writes the items of a repartition's output into an existing table
// with BatchWriteItem (25 items a request), or with IfNewer one conditional
// PutItem per item. Items DynamoDB leaves unprocessed are retried with
// exponential backoff and full jitter; the write rate is held under
// MaxWriteUnits; progress is checkpointed in the output store so that a
// rerun with Resume continues where this one stopped (rewriting at most the
// batches in flight, which puts make harmless).
func Load(ctx context.Context, client LoaderAPI, out *Output, opts LoadOptions) (LoadStats, error) {
	if opts.Table == "" {
		return LoadStats{}, errors.New("export: Load needs a table")
	}
	if opts.VersionAttribute == "" {
		opts.VersionAttribute = pipeline.DefaultVersionAttribute
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 12
	}
	if opts.CheckpointEvery <= 0 {
		opts.CheckpointEvery = 2 * time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = retry.SleepCause
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(opts.Table)})
	if err != nil {
		return LoadStats{}, fmt.Errorf("export: describing table %s: %w", opts.Table, err)
	}
	var keyAttrs []string
	for _, k := range desc.Table.KeySchema {
		keyAttrs = append(keyAttrs, aws.ToString(k.AttributeName))
	}
	var parts []PartInfo
	for _, m := range out.Entities {
		if len(opts.Entities) > 0 && !selected(m, opts.Entities) {
			continue
		}
		parts = append(parts, m.Parts...)
	}
	if len(opts.Entities) > 0 {
		for _, name := range opts.Entities {
			if _, err := out.Entity(name); err != nil {
				return LoadStats{}, err
			}
		}
	}
	// Checkpoint.
	cp := &Checkpoint{Version: formatVersion, Table: opts.Table, Fingerprint: out.Summary.Fingerprint, IfNewer: opts.IfNewer, Parts: map[string]int64{}}
	if opts.Resume {
		b, err := readAll(ctx, out.store, checkpointKey(opts.Table))
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return LoadStats{}, err
		default:
			var old Checkpoint
			if err := json.Unmarshal(b, &old); err != nil {
				return LoadStats{}, fmt.Errorf("export: checkpoint %s: %w", join(out.store.String(), checkpointKey(opts.Table)), err)
			}
			if old.Fingerprint != cp.Fingerprint || old.IfNewer != cp.IfNewer {
				return LoadStats{}, fmt.Errorf("export: the checkpoint %s is of another load (output or --if-newer differ); rerun without resuming", join(out.store.String(), checkpointKey(opts.Table)))
			}
			for k, v := range old.Parts {
				cp.Parts[k] = v
			}
		}
	}
	l := &loader{client: client, out: out, opts: opts, keyAttrs: keyAttrs, cp: cp}
	if opts.MaxWriteUnits > 0 {
		l.limit = newLimiter(opts.MaxWriteUnits, opts.Now)
	}
	for _, p := range parts {
		l.stats.Items += p.Items
	}
	// Checkpoint saver.
	saveCtx, stopSaving := context.WithCancel(ctx)
	var saverDone sync.WaitGroup
	saverDone.Add(1)
	go func() {
		defer saverDone.Done()
		t := time.NewTicker(opts.CheckpointEvery)
		defer t.Stop()
		for {
			select {
			case <-saveCtx.Done():
				return
			case <-t.C:
				l.save(saveCtx)
			}
		}
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	next := make(chan PartInfo)
	var wg sync.WaitGroup
	for range min(opts.Workers, max(len(parts), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if err := l.part(ctx, p); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for _, p := range parts {
		select {
		case next <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	stopSaving()
	saverDone.Wait()
	runErr := context.Cause(ctx)
	cancel(nil)
	// Save the final state whatever happened, with a context that still
	// works after an interrupt.
	saveErr := l.save(context.WithoutCancel(ctx))
	if runErr != nil {
		return l.stats, runErr
	}
	return l.stats, saveErr
}

func selected(m *EntityManifest, names []string) bool {
	for _, n := range names {
		if m.Entity == n || m.Segment == n || m.Segment == "entity="+n || (n == UnknownEntity && m.Entity == "") {
			return true
		}
	}
	return false
}

type loader struct {
	client   LoaderAPI
	out      *Output
	opts     LoadOptions
	keyAttrs []string
	limit    *limiter
	mu       sync.Mutex // guards cp and stats
	cp       *Checkpoint
	stats    LoadStats
}

func (l *loader) save(ctx context.Context) error {
	l.mu.Lock()
	b, err := json.MarshalIndent(l.cp, "", "  ")
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.out.store.Put(ctx, checkpointKey(l.opts.Table), append(b, '\n'))
}

func (l *loader) done(p PartInfo, line int64, written, skipped int64, units float64, requests, unprocessed int64) {
	l.mu.Lock()
	l.cp.Parts[p.Key] = line
	l.stats.Written += written
	l.stats.Skipped += skipped
	l.stats.Units += units
	l.stats.Requests += requests
	l.stats.Unprocessed += unprocessed
	l.mu.Unlock()
	if l.opts.Progress != nil {
		l.opts.Progress(written+skipped, units)
	}
}

type pending struct {
	item  pipeline.Item
	key   string
	units float64
}

// part loads one part, batch by batch, in order.
func (l *loader) part(ctx context.Context, p PartInfo) error {
	l.mu.Lock()
	from := l.cp.Parts[p.Key]
	l.mu.Unlock()
	if from >= p.Items {
		l.mu.Lock()
		l.stats.Resumed += p.Items
		l.mu.Unlock()
		return nil
	}
	name := join(l.out.store.String(), p.Key)
	dec := pipeline.NewExportDecoder(pipeline.Options{KeyAttributes: l.keyAttrs, VersionAttribute: l.opts.VersionAttribute})
	var batch []pending
	var batchEnd int64
	keys := map[string]bool{}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var err error
		if l.opts.IfNewer {
			err = l.putIfNewer(ctx, batch, p, batchEnd)
		} else {
			err = l.batchWrite(ctx, batch, p, batchEnd)
		}
		batch = batch[:0]
		clear(keys)
		return err
	}
	err := l.out.ReadPart(ctx, p, func(line []byte, n int) error {
		if int64(n) <= from {
			if int64(n) == from {
				l.mu.Lock()
				l.stats.Resumed += from
				l.mu.Unlock()
			}
			return nil
		}
		c, err := dec.Decode(line, name, n)
		if err != nil {
			return &FileError{File: name, Line: n, Err: corrupt{decodeCause(err)}}
		}
		if c.New == nil || len(c.Keys) != len(l.keyAttrs) {
			return &FileError{File: name, Line: n, Err: fmt.Errorf("item lacks the table's key attributes %v", l.keyAttrs)}
		}
		key := pipeline.ItemKey(c.Keys)
		// BatchWriteItem refuses two requests for one key: send what we
		// have first.
		if len(batch) == 25 || keys[key] {
			if err := flush(); err != nil {
				return err
			}
		}
		keys[key] = true
		batch = append(batch, pending{item: c.New, key: key, units: writeUnits(c.New)})
		batchEnd = int64(n)
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// batchWrite sends one BatchWriteItem and retries what comes back
// unprocessed, with exponential backoff and full jitter.
func (l *loader) batchWrite(ctx context.Context, batch []pending, p PartInfo, end int64) error {
	var units float64
	reqs := make([]types.WriteRequest, len(batch))
	for i, b := range batch {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: b.item}}
		units += b.units
	}
	var requests, unprocessed int64
	for attempt := 0; len(reqs) > 0; attempt++ {
		if attempt >= l.opts.MaxAttempts {
			return fmt.Errorf("export: %s: %d items still unprocessed after %d attempts (the table is throttling; lower --max-wcu, then rerun with --resume)", p.Key, len(reqs), attempt)
		}
		if attempt > 0 {
			if err := l.opts.Sleep(ctx, retry.Backoff(attempt, 50*time.Millisecond, 10*time.Second)); err != nil {
				return err
			}
		}
		if err := l.wait(ctx, reqs); err != nil {
			return err
		}
		out, err := l.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{l.opts.Table: reqs},
		})
		requests++
		if err != nil {
			return fmt.Errorf("export: BatchWriteItem into %s (%s, up to line %d): %w", l.opts.Table, p.Key, end, err)
		}
		reqs = out.UnprocessedItems[l.opts.Table]
		unprocessed += int64(len(reqs))
	}
	l.done(p, end, int64(len(batch)), 0, units, requests, unprocessed)
	return nil
}

// wait takes the write units of the requests from the rate limiter.
func (l *loader) wait(ctx context.Context, reqs []types.WriteRequest) error {
	if l.limit == nil {
		return nil
	}
	var units float64
	for _, r := range reqs {
		units += writeUnits(r.PutRequest.Item)
	}
	return l.limit.wait(ctx, units, l.opts.Sleep)
}

// putIfNewer writes each item of the batch with a conditional PutItem, all
// at once, and waits for them.
func (l *loader) putIfNewer(ctx context.Context, batch []pending, p PartInfo, end int64) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var written, skipped int64
	var units float64
	var firstErr error
	for _, b := range batch {
		if l.limit != nil {
			if err := l.limit.wait(ctx, b.units, l.opts.Sleep); err != nil {
				return err
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := l.conditionalPut(b.item)
			_, err := l.client.PutItem(ctx, in)
			var ccf *types.ConditionalCheckFailedException
			mu.Lock()
			defer mu.Unlock()
			units += b.units // a failed condition costs the write too
			switch {
			case err == nil:
				written++
			case errors.As(err, &ccf):
				skipped++
			case firstErr == nil:
				firstErr = fmt.Errorf("export: PutItem into %s (%s, item %s): %w", l.opts.Table, p.Key, b.key, err)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	l.done(p, end, written, skipped, units, int64(len(batch)), 0)
	return nil
}

// conditionalPut is the PutItem of IfNewer: write if the item is absent,
// or (for a versioned item) if the stored version is lower.
func (l *loader) conditionalPut(item pipeline.Item) *dynamodb.PutItemInput {
	in := &dynamodb.PutItemInput{
		TableName:                aws.String(l.opts.Table),
		Item:                     item,
		ExpressionAttributeNames: map[string]string{"#k": l.keyAttrs[0]},
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
	}
	if v, ok := item[l.opts.VersionAttribute].(*types.AttributeValueMemberN); ok {
		in.ExpressionAttributeNames["#v"] = l.opts.VersionAttribute
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": v}
		in.ConditionExpression = aws.String("attribute_not_exists(#k) OR #v < :v")
	}
	return in
}

// limiter is a token bucket of write units.
type limiter struct {
	mu     sync.Mutex
	rate   float64 // units per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newLimiter(rate float64, now func() time.Time) *limiter {
	// A burst of one second's worth.
	return &limiter{rate: rate, burst: rate, tokens: rate, last: now(), now: now}
}

// wait reserves n units and sleeps until they are available.
func (l *limiter) wait(ctx context.Context, n float64, sleep func(context.Context, time.Duration) error) error {
	l.mu.Lock()
	now := l.now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	l.tokens -= n
	var d time.Duration
	if l.tokens < 0 {
		d = time.Duration(-l.tokens / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	return sleep(ctx, d)
}

// writeUnits estimates the write units of putting item: one per started
// KB of its size (attribute names and values, as DynamoDB counts them).
func writeUnits(item pipeline.Item) float64 {
	return float64((pipeline.ItemSize(item) + 1023) / 1024)
}
