package archive

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

// The simulation: a seeded workload on a single-table design (inserts,
// updates, user deletes and TTL removals of several entity types, dated over
// several days), cut into Lambda batches with the event source mapping's
// semantics, delivered to the real Processor and Handler over a store that
// fails writes, wholly or in part. Afterwards the archive must hold every
// TTL-removed item exactly once and nothing else.

// simRecord is one stream record of the workload.
type simRecord struct {
	seq     string
	ttl     bool // a TTL removal: its old image must be archived once
	key     string
	version int
	json    []byte // the record as the Lambda event carries it
}

// workload is the generated stream: records per shard, in shard order.
type workload struct {
	shards      [][]simRecord
	ttlRemovals int
	records     int
}

// workloadConfig shapes a workload.
type workloadConfig struct {
	seed    uint64
	shards  int
	records int // per shard
	// startItems is the number of items alive before the stream starts.
	startItems int
	// meanGap is the mean time between two records of a shard.
	meanGap time.Duration
}

// entityTypes are drawn with these weights; "" is an item without a type,
// and the odd one needs escaping in keys.
var entityTypes = []struct {
	name   string
	weight int
}{
	{"Comment", 35}, {"CartItem", 25}, {"Cart", 15}, {"Match", 15}, {"", 5}, {"Odd/Type %", 5},
}

const simStreamARN = "arn:aws:dynamodb:eu-west-1:111122223333:table/App/stream/2026-03-01T00:00:00.000"

// liveItem is an item of the simulated table.
type liveItem struct {
	pk, sk   string
	entity   string
	version  int
	ttl      int64 // expiry, epoch seconds; 0 when the item has no ttl
	ttlKind  int   // 0: N attribute, 1: absent, 2: an S attribute (not a number)
	removeAt int64 // when DynamoDB's TTL process deletes it (simulated time)
	index    int   // in the expiry heap
	body     string
}

type expiryHeap []*liveItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].removeAt < h[j].removeAt }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *expiryHeap) Push(x any)        { it := x.(*liveItem); it.index = len(*h); *h = append(*h, it) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

// genWorkload generates a workload. Items live from one hour to a week; the
// TTL process deletes an expired item up to 36 hours after its expiry (as
// DynamoDB does, "typically within a few days"), so a batch of removals
// spans a few expiry dates. Between removals, users insert, update and
// delete items; some inserts reuse the key of an expired item, whose version
// starts again at 1.
func genWorkload(cfg workloadConfig) *workload {
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	w := &workload{}
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	nextID := 0
	for s := 0; s < cfg.shards; s++ {
		now := start
		var (
			live    []*liveItem
			expiry  expiryHeap
			expired []*liveItem // keys that may be reused
			recs    []simRecord
		)
		newItem := func(reuse *liveItem) *liveItem {
			it := &liveItem{index: -1}
			if reuse != nil {
				it.pk, it.sk, it.entity = reuse.pk, reuse.sk, reuse.entity
			} else {
				nextID++
				it.entity = pickEntity(rng)
				it.pk = fmt.Sprintf("S%d#%s#%d", s, strings.ToUpper(strings.ReplaceAll(it.entity, " ", "")), nextID)
				it.sk = "META"
			}
			it.version = 1
			it.body = fmt.Sprintf("v%d-%x", it.version, rng.Uint32())
			setExpiry(rng, it, now)
			return it
		}
		for range cfg.startItems {
			it := newItem(nil)
			// Already alive: removals spread over the first hours.
			it.removeAt = now + rng.Int64N(4*3600)
			it.ttl = it.removeAt - rng.Int64N(36*3600)
			live = append(live, it)
			heap.Push(&expiry, it)
		}
		emit := func(name string, ttl bool, old, newImg *liveItem) {
			i := len(recs)
			seq := fmt.Sprintf("%d%021d", s+1, i*7+3) // 22 digits, increasing per shard, unique per stream
			r := simRecord{seq: seq, ttl: ttl}
			if old != nil {
				r.key, r.version = old.pk+"|"+old.sk, old.version
			}
			r.json = recordJSON(name, ttl, now, seq, old, newImg)
			recs = append(recs, r)
		}
		removeLive := func(it *liveItem) {
			for i, x := range live {
				if x == it {
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
					break
				}
			}
			if it.index >= 0 {
				heap.Remove(&expiry, it.index)
			}
		}
		for len(recs) < cfg.records {
			now += int64(rng.ExpFloat64() * cfg.meanGap.Seconds())
			if expiry.Len() > 0 && expiry[0].removeAt <= now {
				it := heap.Pop(&expiry).(*liveItem)
				removeLive(it)
				emit("REMOVE", true, it, nil)
				w.ttlRemovals++
				expired = append(expired, it)
				continue
			}
			switch p := rng.Float64(); {
			case p < 0.6 || len(live) < 10:
				var reuse *liveItem
				if len(expired) > 0 && rng.Float64() < 0.2 {
					k := rng.IntN(len(expired))
					reuse = expired[k]
					expired = append(expired[:k], expired[k+1:]...)
				}
				it := newItem(reuse)
				live = append(live, it)
				heap.Push(&expiry, it)
				emit("INSERT", false, nil, it)
			case p < 0.9:
				it := live[rng.IntN(len(live))]
				old := *it
				it.version++
				it.body = fmt.Sprintf("v%d-%x", it.version, rng.Uint32())
				emit("MODIFY", false, &old, it)
			default:
				it := live[rng.IntN(len(live))]
				removeLive(it)
				emit("REMOVE", false, it, nil) // a user's delete: not archived
			}
		}
		w.shards = append(w.shards, recs)
		w.records += len(recs)
	}
	return w
}

func pickEntity(rng *rand.Rand) string {
	total := 0
	for _, e := range entityTypes {
		total += e.weight
	}
	n := rng.IntN(total)
	for _, e := range entityTypes {
		if n < e.weight {
			return e.name
		}
		n -= e.weight
	}
	return entityTypes[0].name
}

// setExpiry schedules an item's TTL removal and gives it its ttl. The
// removal comes 1 to 31 minutes after the write (simulated time runs
// fast: a record every ~2 s); the expiry that dates the item is up to 36
// hours before the removal, as DynamoDB deletes expired items "typically
// within a few days", so a burst of removals spans a few expiry dates. 85%
// of items carry the expiry as a number, 10% carry none (the archive dates
// them by their removal) and 5% carry a string, which DynamoDB's TTL
// ignores and the archive must too.
func setExpiry(rng *rand.Rand, it *liveItem, now int64) {
	it.removeAt = now + 60 + rng.Int64N(1800)
	it.ttl = it.removeAt - rng.Int64N(36*3600)
	switch p := rng.Float64(); {
	case p < 0.85:
		it.ttlKind = 0
	case p < 0.95:
		it.ttlKind = 1
	default:
		it.ttlKind = 2
	}
}

func (it *liveItem) image() pipeline.Item {
	m := pipeline.Item{
		"PK":      &types.AttributeValueMemberS{Value: it.pk},
		"SK":      &types.AttributeValueMemberS{Value: it.sk},
		"version": &types.AttributeValueMemberN{Value: strconv.Itoa(it.version)},
		"body":    &types.AttributeValueMemberS{Value: it.body},
	}
	if it.entity != "" {
		m["EntityType"] = &types.AttributeValueMemberS{Value: it.entity}
	}
	switch it.ttlKind {
	case 0:
		m["ttl"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(it.ttl, 10)}
	case 2:
		m["ttl"] = &types.AttributeValueMemberS{Value: "soon"}
	}
	return m
}

// recordJSON renders a Lambda DynamoDB Streams record.
func recordJSON(name string, ttl bool, now int64, seq string, old, newImg *liveItem) []byte {
	var b []byte
	b = fmt.Appendf(b, `{"eventID":"ev-%s","eventName":%q,"eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1","eventSourceARN":%q,`, seq, name, simStreamARN)
	if ttl {
		b = append(b, `"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},`...)
	}
	b = fmt.Appendf(b, `"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":`, now)
	it := newImg
	if it == nil {
		it = old
	}
	b = pipeline.AppendItem(b, pipeline.Item{
		"PK": &types.AttributeValueMemberS{Value: it.pk},
		"SK": &types.AttributeValueMemberS{Value: it.sk},
	})
	if newImg != nil {
		b = append(b, `,"NewImage":`...)
		b = pipeline.AppendItem(b, newImg.image())
	}
	if old != nil {
		b = append(b, `,"OldImage":`...)
		b = pipeline.AppendItem(b, old.image())
	}
	b = fmt.Appendf(b, `,"SequenceNumber":%q,"SizeBytes":200,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`, seq)
	return b
}

// events returns recs as the event source mapping delivers them, all of
// them or (filter: the mapping's FilterCriteria) the TTL removals only.
// Indexes count from first.
func events(recs []simRecord, first int, filter bool) []sim.Event {
	var out []sim.Event
	for i, r := range recs {
		if !filter || r.ttl {
			out = append(out, sim.Event{Index: first + i, ID: r.seq, Data: r.json})
		}
	}
	return out
}

// eventJSON is the Lambda event holding recs.
func eventJSON(recs []simRecord) []byte { return sim.Payload(events(recs, 0, false)) }

// checkResponse checks a response of the archiver's handler to a batch:
// JSON, naming at most one record, and that one from the batch.
func checkResponse(resp []byte, batch []sim.Event) error {
	var r struct {
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return fmt.Errorf("response %s: %w", resp, err)
	}
	switch len(r.BatchItemFailures) {
	case 0:
		return nil
	case 1:
		id := r.BatchItemFailures[0].ItemIdentifier
		for _, e := range batch {
			if e.ID == id {
				return nil
			}
		}
		return fmt.Errorf("reported %q is not a record of the batch", id)
	}
	return fmt.Errorf("response names %d records: %s", len(r.BatchItemFailures), resp)
}

// checkArchive verifies the archive against the workload: every TTL removal
// archived exactly once (by sequence number, and by item key and version),
// nothing else archived, and every object well formed: named by its first
// line's sequence number, lines in stream order, each line in the right
// entity and date partition.
func checkArchive(ctx context.Context, src Source, prefix string, w *workload) error {
	return checkArchiveOf(ctx, Open(src, prefix), w)
}

// checkArchiveOf is checkArchive over an archive opened already (with the
// compacted form's decoder, in the compaction's tests).
func checkArchiveOf(ctx context.Context, a *Archive, w *workload) error {
	objs, other, err := a.Objects(ctx, Filter{})
	if err != nil {
		return err
	}
	var problems []string
	add := func(format string, args ...any) {
		if len(problems) < 12 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for _, k := range other {
		add("unexpected object %s", k)
	}
	seen := map[string]int{}
	versions := map[string]int{}
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	for _, o := range objs {
		prev := ""
		err := a.ReadLines(ctx, o.Key, func(n int, line []byte) error {
			l, err := ParseLine(line)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", o.Key, n, err)
			}
			c, err := dec.Decode(line, o.Key, n)
			if err != nil {
				return err
			}
			seq := l.Archive.SequenceNumber
			seen[seq]++
			versions[fmt.Sprintf("%s|%s@%d", scalar(c.Keys["PK"]), scalar(c.Keys["SK"]), c.Version)]++
			// A compacted object's rows are its inputs' lines, input after
			// input: the order within an object holds for JSON lines only.
			if n == 1 && seq != o.FirstSeq && !o.Compacted {
				add("%s: first line has seq %s", o.Key, seq)
			}
			if prev != "" && !seqLess(prev, seq) && !o.Compacted {
				add("%s line %d: seq %s after %s", o.Key, n, seq, prev)
			}
			prev = seq
			removed, _ := time.Parse(time.RFC3339, l.Archive.RemovedAt)
			if seg, date := EntitySegment(c.NewType), dateOf(c.New, pipeline.DefaultTTLAttribute, removed); seg != o.EntitySegment || date != o.Date {
				add("%s line %d: item of entity=%s/date=%s", o.Key, n, seg, date)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	want := map[string]int{}
	for _, shard := range w.shards {
		for _, r := range shard {
			if !r.ttl {
				if seen[r.seq] > 0 {
					add("record %s is not a TTL removal but was archived %d times", r.seq, seen[r.seq])
				}
				continue
			}
			want[r.key+"@"+strconv.Itoa(r.version)]++
			switch n := seen[r.seq]; n {
			case 1:
			case 0:
				add("TTL removal %s (%s v%d) is missing", r.seq, r.key, r.version)
			default:
				add("TTL removal %s (%s v%d) archived %d times", r.seq, r.key, r.version, n)
			}
			delete(seen, r.seq)
		}
	}
	for seq, n := range seen {
		if n > 0 {
			add("archived seq %s is no record of the workload", seq)
		}
	}
	for k, n := range want {
		if versions[k] != n {
			add("item %s: archived %d times, removed %d times", k, versions[k], n)
		}
	}
	for k, n := range versions {
		if want[k] == 0 {
			add("item %s archived %d times but never TTL-removed", k, n)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

func scalar(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return fmt.Sprint(av)
}

// simRun is one simulation: a workload, faults, delivery semantics and the
// handler under test.
type simRun struct {
	seed    uint64
	filter  bool
	bisect  bool
	naive   bool // report the failed group's first record instead of the batch's
	records int
}

type simResult struct {
	w                                   *workload
	store                               *testStore
	faults                              *faultStore
	invocations, failures, redeliveries int
	duplicates, bisections              int
	err                                 error // from checkArchive
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// run delivers the workload's shards through the simulated event source
// mapping (internal/sim's ESM: batches of 1 to 100 records, retries from
// the reported record with batches of any length, bisection, redelivery
// from a lost checkpoint, duplicate invocations) and a function whose
// response is sometimes lost after it ran, to the real Processor and
// Handler over a store that fails writes.
func (r simRun) run(t testing.TB) simResult {
	t.Helper()
	ctx := context.Background()
	w := genWorkload(workloadConfig{seed: r.seed, shards: 3, records: r.records, startItems: 300, meanGap: 2 * time.Second})
	store := newTestStore(t)
	faults := &faultStore{
		inner: store, seed: r.seed,
		pWholeOutage: 0.1, pPartial: 0.3, pObject: 0.4, pAmbiguous: 0.02,
	}
	h := New(faults, Options{Prefix: "archive", Logger: quiet})
	var bh pipeline.BatchHandler = h
	if r.naive {
		bh = naiveHandler{h}
	}
	proc := pipeline.NewStreamsProcessor(bh, pipeline.Config{Logger: quiet})
	var shards [][]sim.Event
	first := 0
	for _, recs := range w.shards {
		shards = append(shards, events(recs, first, r.filter))
		first += len(recs)
	}
	lost := &sim.FlakyInvoke{
		Invoke: func(ctx context.Context, payload []byte) ([]byte, error) {
			faults.invocation.Add(1) // the store's faults are drawn per invocation
			return proc.Invoke(ctx, payload)
		},
		FailAfter: 0.05, // the response is lost after the function ran
		Seed:      r.seed,
	}
	var bad error // the first response that breaks the handler's contract
	m := &sim.ESM{
		BatchSize: 100, VaryBatches: true, Bisect: r.bisect,
		RedeliverRate: 0.1, DuplicateRate: 0.05,
		MaxAttempts: 10_000, // retries are unbounded (MaximumRetryAttempts -1, the default)
		Seed:        r.seed,
		Trace: func(d sim.Delivery) {
			if d.Err == nil && bad == nil {
				bad = checkResponse(d.Response, shards[d.Shard][d.From:d.To])
			}
		},
	}
	st, err := m.Run(ctx, shards, lost.Call)
	if err != nil {
		t.Fatalf("simulation: %v", err)
	}
	if bad != nil {
		t.Fatalf("the handler broke its contract: %v", bad) // every payload is a valid event
	}
	res := simResult{w: w, store: store, faults: faults, invocations: st.Invocations,
		failures: st.Errors + st.WholeFailures + st.PartialFailures, redeliveries: st.Redeliveries,
		duplicates: st.Duplicates, bisections: st.Bisections}
	res.err = checkArchive(ctx, store, "archive", w)
	return res
}

// naiveHandler follows the naive reporting rule: it reports the first
// record of the first object that failed, not the batch's first record.
type naiveHandler struct{ h *Handler }

func (n naiveHandler) HandleBatch(ctx context.Context, changes []pipeline.Change) error {
	p := n.h.plan(changes)
	errs := n.h.write(ctx, p.groups)
	for i, g := range p.groups {
		if errs[i] != nil {
			return &pipeline.BatchError{Index: g.first, Err: errs[i]}
		}
	}
	return nil
}

// TestSimulationExactlyOnce is the archive's guarantee: whatever Lambda's
// delivery does (retries from the reported record with batches of any
// length, bisection, redelivery from a lost checkpoint, duplicate
// invocations) and whatever S3 does (whole outages, some objects of a batch
// failing, writes that succeed but report failure), every TTL-removed item
// is archived exactly once and nothing else is.
func TestSimulationExactlyOnce(t *testing.T) {
	// 24 runs of 9,000 records; under the race detector (make test-unit),
	// which is ten times slower, 8 runs of 6,000.
	seeds, records := 12, 3000
	if raceDetector || testing.Short() {
		seeds, records = 4, 2000
	}
	for seed := range uint64(seeds) {
		for _, filter := range []bool{true, false} {
			r := simRun{seed: seed + 1, filter: filter, bisect: seed%2 == 0, records: records}
			t.Run(fmt.Sprintf("seed=%d/filter=%t/bisect=%t", r.seed, r.filter, r.bisect), func(t *testing.T) {
				t.Parallel()
				res := r.run(t)
				if res.err != nil {
					t.Fatalf("archive invariant broken:\n%v", res.err)
				}
				if res.faults.failed.Load() == 0 || res.failures == 0 || res.redeliveries == 0 || res.duplicates == 0 || r.bisect && res.bisections == 0 {
					t.Fatalf("the run exercised too little: %d failed writes, %d failed invocations, %d redeliveries, %d duplicate invocations, %d bisections",
						res.faults.failed.Load(), res.failures, res.redeliveries, res.duplicates, res.bisections)
				}
				t.Logf("%d records, %d TTL removals, %d invocations (%d failed, %d redelivered, %d duplicated, %d bisections), %d writes failed, %d ambiguous, %d objects",
					res.w.records, res.w.ttlRemovals, res.invocations, res.failures, res.redeliveries, res.duplicates, res.bisections,
					res.faults.failed.Load(), res.faults.ambiguous.Load(), len(res.store.objects(t)))
			})
		}
	}
}

// TestSimulationNaiveRuleDuplicates shows the simulation can fail: with the
// naive rule (report the failed object's first record), a later batch starts
// in the middle of a group that was already written, names a second object
// after a later record, and archives that group's later records twice.
func TestSimulationNaiveRuleDuplicates(t *testing.T) {
	seeds := uint64(3)
	if raceDetector || testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		res := simRun{seed: seed, filter: true, bisect: true, naive: true, records: 2000}.run(t)
		if res.err == nil {
			t.Fatalf("seed %d: the naive rule kept the invariant; the simulation cannot tell the rules apart", seed)
		}
		if !strings.Contains(res.err.Error(), "archived 2 times") {
			t.Fatalf("seed %d: want duplicates, got:\n%v", seed, res.err)
		}
		first, _, _ := strings.Cut(res.err.Error(), "\n")
		t.Logf("seed %d: naive rule breaks the invariant as expected, e.g. %s", seed, first)
	}
}

// ttlRecords returns the TTL removals of the workload's first shard, in
// order.
func (w *workload) ttlRecords() []simRecord {
	var ttl []simRecord
	for _, r := range w.shards[0] {
		if r.ttl {
			ttl = append(ttl, r)
		}
	}
	return ttl
}

// putsPer1000 runs a fault-free workload, filtered to TTL removals like the
// deployed event source mapping, in full batches of batchSize, and returns
// the S3 PUTs per 1,000 TTL removals.
func putsPer1000(t testing.TB, seed uint64, batchSize int, meanGap time.Duration) (float64, *workload) {
	ctx := context.Background()
	w := genWorkload(workloadConfig{seed: seed, shards: 1, records: 20000, startItems: 2000, meanGap: meanGap})
	store := newTestStore(t)
	proc := pipeline.NewStreamsProcessor(New(store, Options{Logger: quiet}), pipeline.Config{Logger: quiet})
	ttl := w.ttlRecords()
	for i := 0; i < len(ttl); i += batchSize {
		out, err := proc.Invoke(ctx, eventJSON(ttl[i:min(i+batchSize, len(ttl))]))
		if err != nil || !strings.Contains(string(out), `"batchItemFailures":[]`) {
			t.Fatalf("batch %d: %s %v", i/batchSize, out, err)
		}
	}
	if err := checkArchive(ctx, store, "", w); err != nil {
		t.Fatal(err)
	}
	return float64(store.puts.Load()) * 1000 / math.Max(1, float64(len(ttl))), w
}

// TestPUTCost measures the S3 PUTs per 1,000 TTL removals at Lambda's default
// batch size, 100, on the simulated workload (docs/archive.md quotes it).
func TestPUTCost(t *testing.T) {
	for _, tc := range []struct {
		batch int
		max   float64
	}{{100, 250}, {1000, 60}} {
		got, w := putsPer1000(t, 42, tc.batch, 2*time.Second)
		t.Logf("batch size %d: %.1f PUTs per 1,000 TTL removals (%d removals)", tc.batch, got, w.ttlRemovals)
		if got > tc.max || got < 1000/float64(tc.batch) {
			t.Errorf("batch size %d: %.1f PUTs per 1,000 removals, want between %.0f and %.0f", tc.batch, got, 1000/float64(tc.batch), tc.max)
		}
	}
}

// BenchmarkArchivePUTs reports S3 PUTs per 1,000 TTL removals at the default
// batch size (100) on the simulated workload, and the handler's cost per
// batch.
func BenchmarkArchivePUTs(b *testing.B) {
	var per float64
	for b.Loop() {
		per, _ = putsPer1000(b, 42, 100, 2*time.Second)
	}
	b.ReportMetric(per, "PUTs/1000removals")
}

// TestCheckArchiveDetectsLoss: the checker notices a lost object and a
// stray one, so a passing simulation means something.
func TestCheckArchiveDetectsLoss(t *testing.T) {
	res := simRun{seed: 99, filter: true, records: 600}.run(t)
	if res.err != nil {
		t.Fatal(res.err)
	}
	for k := range res.store.objects(t) {
		res.store.remove(t, k)
		break
	}
	res.store.set(t, "archive/stray.json", []byte("{}"))
	err := checkArchive(context.Background(), res.store, "archive", res.w)
	if err == nil || !strings.Contains(err.Error(), "is missing") || !strings.Contains(err.Error(), "unexpected object archive/stray.json") {
		t.Fatalf("checker missed the damage: %v", err)
	}
}

// TestReplayWithOtherBoundaries shows the limit of the naming rule: it
// depends on where batches start. A replay from an older checkpoint whose
// batches start elsewhere than the first pass's (the event source mapping
// re-created at TRIM_HORIZON, or a checkpoint lost further back than the
// last batch) names some groups after other records, so records are
// archived twice, never lost; restore keeps one version per item.
func TestReplayWithOtherBoundaries(t *testing.T) {
	ctx := context.Background()
	w := genWorkload(workloadConfig{seed: 5, shards: 1, records: 1500, startItems: 300, meanGap: 2 * time.Second})
	ttl := w.ttlRecords()
	store := newTestStore(t)
	proc := pipeline.NewStreamsProcessor(New(store, Options{Logger: quiet}), pipeline.Config{Logger: quiet})
	pass := func(size int) {
		for i := 0; i < len(ttl); i += size {
			if _, err := proc.Invoke(ctx, eventJSON(ttl[i:min(i+size, len(ttl))])); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass(25)
	if err := checkArchive(ctx, store, "", w); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	pass(40) // the replay
	err := checkArchive(ctx, store, "", w)
	if err == nil || strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), "archived 2 times") {
		t.Fatalf("want duplicates and no loss after a replay with other boundaries, got: %v", err)
	}
	sel, err := Open(store, "").Select(ctx, Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, r := range ttl {
		keys[r.key] = true
	}
	if sel.Items() != len(keys) || sel.Lines() <= len(ttl) {
		t.Errorf("restore selects %d items from %d lines; want %d items from more than %d lines", sel.Items(), sel.Lines(), len(keys), len(ttl))
	}
}
