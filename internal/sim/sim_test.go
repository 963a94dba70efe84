package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// run returns a history, failing the test on error.
func run(t testing.TB, w Workload) *History {
	t.Helper()
	h, err := w.Run()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func itemJSON(item pipeline.Item) string { return string(pipeline.AppendItem(nil, item)) }

func key(item pipeline.Item) itemKey {
	pk, sk, _ := keyStrings(item)
	return tableKey(pk, sk)
}

func seqLess(a, b string) bool {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	return x.Cmp(y) < 0
}

// --- Determinism ------------------------------------------------------------

func TestDeterminism(t *testing.T) {
	w := Workload{Seed: 42, Changes: 3000, Skew: 1.1}
	encode := func(seed uint64) (streams, kinesis []byte) {
		w := w
		w.Seed = seed
		h := run(t, w)
		krs := ToKinesis(h.Records, 0.1, 8, NewKinesisRand(seed))
		return StreamsEvent(h.Records), KinesisEvent(krs)
	}
	s1, k1 := encode(42)
	s2, k2 := encode(42)
	if !bytes.Equal(s1, s2) {
		t.Error("same seed, different Streams event bytes")
	}
	if !bytes.Equal(k1, k2) {
		t.Error("same seed, different Kinesis event bytes")
	}
	s3, k3 := encode(43)
	if bytes.Equal(s1, s3) || bytes.Equal(k1, k3) {
		t.Error("different seeds, same bytes")
	}

	// Run is Generate fed through a Stream.
	h := run(t, w)
	s := NewStream(h.Workload.Shards, h.Workload.Start, w.Seed)
	var recs []Record
	ops := 0
	err := w.Generate(func(op Op) error {
		ops++
		rec, ok, err := s.Apply(op)
		if ok {
			recs = append(recs, rec)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if ops != h.Ops || !bytes.Equal(StreamsEvent(recs), StreamsEvent(h.Records)) {
		t.Errorf("Generate+Stream.Apply differs from Run: %d ops vs %d", ops, h.Ops)
	}

	// Generate stops at fn's error.
	stop := errors.New("stop")
	n := 0
	if err := w.Generate(func(Op) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Generate after fn error: n=%d err=%v", n, err)
	}
}

// --- Table ------------------------------------------------------------------

func TestTableVersions(t *testing.T) {
	tb := NewTable()
	k := pipeline.Item{"PK": str("USER#u1"), "SK": str("PROFILE")}
	item := func(tier string, extra ...string) pipeline.Item {
		it := pipeline.Item{"PK": str("USER#u1"), "SK": str("PROFILE"), "EntityType": str("User"), "tier": str(tier)}
		for _, e := range extra {
			it[e] = num(1796000000)
		}
		return it
	}
	apply := func(op Op) (Record, bool) {
		t.Helper()
		rec, ok, err := tb.Apply(op)
		if err != nil {
			t.Fatal(err)
		}
		return rec, ok
	}
	version := func(it pipeline.Item) string { return it["version"].(*types.AttributeValueMemberN).Value }

	rec, ok := apply(Op{Kind: Put, Item: item("basic")})
	if !ok || rec.Kind != pipeline.Insert || version(rec.New) != "1" || rec.Old != nil {
		t.Fatalf("create: %+v", rec)
	}
	rec, ok = apply(Op{Kind: Put, Item: item("plus")})
	if !ok || rec.Kind != pipeline.Modify || version(rec.Old) != "1" || version(rec.New) != "2" {
		t.Fatalf("update: %+v", rec)
	}
	if _, ok = apply(Op{Kind: Put, Item: item("plus")}); ok {
		t.Fatal("a write that changes nothing made a record")
	}
	if _, ok = apply(Op{Kind: Put, Item: content(tb.Get("USER#u1", "PROFILE"))}); ok {
		t.Fatal("rewriting the current item made a record")
	}
	if _, _, err := tb.Apply(Op{Kind: Expire, Item: k}); err == nil {
		t.Fatal("expired an item without ttl")
	}
	rec, ok = apply(Op{Kind: Delete, Item: k})
	if !ok || rec.Kind != pipeline.Remove || rec.TTL || version(rec.Old) != "2" || rec.New != nil {
		t.Fatalf("delete: %+v", rec)
	}
	if _, ok = apply(Op{Kind: Delete, Item: k}); ok {
		t.Fatal("deleting a missing item made a record")
	}
	rec, ok = apply(Op{Kind: Put, Item: item("pro", "ttl")})
	if !ok || rec.Kind != pipeline.Insert || version(rec.New) != "1" {
		t.Fatalf("re-create: version must restart at 1: %+v", rec)
	}
	rec, ok = apply(Op{Kind: Expire, Item: k})
	if !ok || !rec.TTL || rec.Kind != pipeline.Remove {
		t.Fatalf("expire: %+v", rec)
	}
	if _, _, err := tb.Apply(Op{Kind: Put, Item: pipeline.Item{"PK": str("x")}}); err == nil {
		t.Fatal("put without SK accepted")
	}
	if tb.Len() != 0 || len(tb.Items()) != 0 {
		t.Fatalf("table not empty: %d", tb.Len())
	}
}

// TestTableModel checks every record of a long run against a shadow copy of
// the table built from the records alone, and the stream's stamps.
func TestTableModel(t *testing.T) {
	w := Workload{Seed: 7, Changes: 20000, Skew: 1.0, Shards: 5}
	var noops, ops int
	s := NewStream(5, DefaultStart, 7)
	shadow := map[itemKey]pipeline.Item{}
	removedAt := map[itemKey]time.Time{}
	var last Record
	lastSeqInShard := map[int]string{}
	lengths := map[int]int{}
	err := w.Generate(func(op Op) error {
		ops++
		rec, ok, err := s.Apply(op)
		if err != nil {
			return err
		}
		if op.Action == "noop" {
			noops++
			if ok {
				return fmt.Errorf("op %d: no-op write made a record: %+v", ops, rec)
			}
		}
		if !ok {
			return nil
		}
		k := key(rec.Keys)
		cur := shadow[k]
		switch rec.Kind {
		case pipeline.Insert:
			if cur != nil || rec.Old != nil || intAttr(rec.New, "version") != 1 {
				return fmt.Errorf("bad insert of %s", k)
			}
			if t0, ok := removedAt[k]; ok && !rec.Time.After(t0) {
				return fmt.Errorf("%s re-created at %v, not after its removal at %v", k, rec.Time, t0)
			}
		case pipeline.Modify:
			if cur == nil || itemJSON(rec.Old) != itemJSON(cur) || intAttr(rec.New, "version") != intAttr(cur, "version")+1 {
				return fmt.Errorf("bad modify of %s", k)
			}
			if itemJSON(content(rec.Old)) == itemJSON(content(rec.New)) {
				return fmt.Errorf("modify of %s changes nothing", k)
			}
		case pipeline.Remove:
			if cur == nil || itemJSON(rec.Old) != itemJSON(cur) || rec.New != nil {
				return fmt.Errorf("bad remove of %s", k)
			}
			removedAt[k] = rec.Time
		}
		if rec.TTL {
			ttl, ok := rec.Old["ttl"].(*types.AttributeValueMemberN)
			if rec.Kind != pipeline.Remove || !ok {
				return fmt.Errorf("TTL record for %s without a ttl", k)
			}
			if intAttr(rec.Old, "ttl") > rec.Time.Unix() {
				return fmt.Errorf("%s expired before its ttl %s", k, ttl.Value)
			}
		}
		if rec.Kind == pipeline.Remove {
			delete(shadow, k)
		} else {
			shadow[k] = rec.New
		}
		// Stamps: time never goes back; sequence numbers increase globally.
		if last.Seq != "" && (rec.Time.Before(last.Time) || !seqLess(last.Seq, rec.Seq)) {
			return fmt.Errorf("record %s after %s: time or sequence goes back", rec.Seq, last.Seq)
		}
		if prev, ok := lastSeqInShard[rec.Shard]; ok && !seqLess(prev, rec.Seq) {
			return fmt.Errorf("shard %d: seq %s after %s", rec.Shard, rec.Seq, prev)
		}
		pk, _, _ := keyStrings(rec.Keys)
		if rec.Shard != ShardOf(pk, 5) || len(rec.EventID) != 32 || rec.Time.Nanosecond()%int(time.Millisecond) != 0 {
			return fmt.Errorf("bad stamp %+v", rec)
		}
		lastSeqInShard[rec.Shard] = rec.Seq
		lengths[len(rec.Seq)]++
		last = rec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if noops == 0 {
		t.Error("the workload wrote no no-op writes")
	}
	if len(lengths) < 2 || lengths[21] == 0 {
		t.Errorf("sequence-number lengths %v: want 21 and longer", lengths)
	}
	items := s.Table().Items()
	if len(items) != len(shadow) {
		t.Fatalf("table has %d items, records leave %d", len(items), len(shadow))
	}
	for _, it := range items {
		if itemJSON(shadow[key(it)]) != itemJSON(it) {
			t.Fatalf("table and records disagree on %s", key(it))
		}
	}
	t.Logf("%d ops, %d no-ops, %d items, seq lengths %v", ops, noops, len(items), lengths)
}

// --- Workload ---------------------------------------------------------------

func TestWorkloadCoverage(t *testing.T) {
	h := run(t, Workload{Seed: 3, Changes: 30000, Skew: 1.1})
	if len(h.Records) != 30000 {
		t.Fatalf("%d records, want 30000", len(h.Records))
	}
	got := map[string]int{}
	lastKind := map[itemKey]pipeline.Kind{}
	perKey := map[itemKey]int{}
	seenTypes := map[string]bool{}
	for i, r := range h.Records {
		k := key(r.Keys)
		perKey[k]++
		got["action:"+r.Action]++
		oldT, newT := entityType(r.Old), entityType(r.New)
		seenTypes[entityType(r.Image())] = true
		if r.Kind == pipeline.Insert && lastKind[k] == pipeline.Remove {
			got["recreate after delete"]++
			if i > 0 && h.Records[i-1].Kind == pipeline.Remove && key(h.Records[i-1].Keys) == k {
				got["immediate recreate"]++
			}
			if entityType(h.Records[i].New) != "" && r.New["version"].(*typesN).Value != "1" {
				t.Errorf("re-created %s with version %s", k, r.New["version"].(*typesN).Value)
			}
		}
		if r.Kind == pipeline.Modify && oldT != newT {
			got["type change "+oldT+"->"+newT]++
		}
		if r.TTL {
			got["ttl removal"]++
		}
		if i > 0 && r.Time.Equal(h.Records[i-1].Time) {
			got["same ms"]++
		}
		if r.New != nil && newT == "Player" {
			switch r.New["season"].(type) {
			case nil:
				got["player without season"]++
			case *types2NULL:
				got["player with NULL season"]++
			}
		}
		if newT == "CartItem" && intAttr(r.New, "quantity") == 0 {
			got["quantity 0"]++
		}
		if newT == "Order" {
			got["status "+strAttr(r.New, "status")]++
		}
		lastKind[k] = r.Kind
	}
	for _, want := range []string{
		"recreate after delete", "immediate recreate", "ttl removal", "same ms",
		"type change Order->ArchivedOrder", "type change ArchivedOrder->Order",
		"type change Document->Template", "type change Template->Document",
		"player without season", "player with NULL season", "quantity 0",
		"status PENDING", "status PAID", "status SHIPPED", "status CANCELLED",
		"action:order-pay", "action:order-ship", "action:order-cancel", "action:player-rating",
		"action:match-score", "action:cart-quantity", "action:comment-pin", "action:comment-expire",
	} {
		if got[want] == 0 {
			t.Errorf("no %q in 30,000 changes", want)
		}
	}
	for _, typ := range []string{"Player", "Match", "Workspace", "Document", "Template", "Comment", "User", "Cart", "CartItem", "Order", "ArchivedOrder"} {
		if !seenTypes[typ] {
			t.Errorf("no %s items", typ)
		}
	}

	// Hot keys: with Skew 1.1 the busiest 1% of keys take a large share; the
	// uniform workload spreads out more.
	share := func(h *History) float64 {
		counts := make([]int, 0, len(perKey))
		per := map[itemKey]int{}
		for _, r := range h.Records {
			per[key(r.Keys)]++
		}
		for _, c := range per {
			counts = append(counts, c)
		}
		slices.Sort(counts)
		slices.Reverse(counts)
		top := 0
		for _, c := range counts[:max(1, len(counts)/100)] {
			top += c
		}
		return float64(top) / float64(len(h.Records))
	}
	hot, uniform := share(h), share(run(t, Workload{Seed: 3, Changes: 30000}))
	if hot < 0.1 || hot < 1.5*uniform {
		t.Errorf("top 1%% of keys take %.1f%% of changes with skew, %.1f%% without", 100*hot, 100*uniform)
	}
	t.Logf("top 1%% of keys: %.1f%% (skew 1.1) vs %.1f%% (uniform); %d items; %v", 100*hot, 100*uniform, h.Table.Len(), got)
}

type (
	typesN     = types.AttributeValueMemberN
	types2NULL = types.AttributeValueMemberNULL
)

// TestSeedProjectionsAcceptItems: every image the workload writes is valid
// for every seed projection that reads its type.
func TestSeedProjectionsAcceptItems(t *testing.T) {
	for _, skew := range []float64{0, 1.2} {
		h := run(t, Workload{Seed: 11, Changes: 20000, Skew: skew})
		readers := map[string][]projections.Projection{}
		for _, p := range seed.All() {
			for _, typ := range p.EntityTypes() {
				readers[typ] = append(readers[typ], p)
			}
		}
		check := func(item pipeline.Item, where string) {
			if item == nil {
				return
			}
			for _, p := range readers[entityType(item)] {
				if _, err := p.Contribute(item); err != nil {
					t.Fatalf("%s: %s rejects %s: %v", where, p.Name(), itemJSON(item), err)
				}
			}
		}
		contributed := 0
		for _, r := range h.Records {
			check(r.Old, r.Seq+" old")
			check(r.New, r.Seq+" new")
			if len(readers[entityType(r.Image())]) > 0 {
				contributed++
			}
		}
		for _, it := range h.Table.Items() {
			check(it, "final item")
		}
		if contributed < len(h.Records)/2 {
			t.Errorf("only %d of %d records are read by a projection", contributed, len(h.Records))
		}
	}
}

// --- Encoding ---------------------------------------------------------------

func TestStreamsEventDecodes(t *testing.T) {
	h := run(t, Workload{Seed: 5, Changes: 4000, Skew: 0.8})
	data := StreamsEvent(h.Records)
	if !json.Valid(data) {
		t.Fatal("invalid JSON")
	}
	changes, err := pipeline.DecodeStreamsEvent(data, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != len(h.Records) {
		t.Fatalf("%d changes from %d records", len(changes), len(h.Records))
	}
	for i, c := range changes {
		r := &h.Records[i]
		compareChange(t, r, &c)
		if c.Position.SequenceNumber != r.Seq || c.EventID != r.EventID || c.Table != TableName || c.Region != Region {
			t.Fatalf("record %d: position %+v, event %s", i, c.Position, c.EventID)
		}
		if c.Precision != pipeline.Second || !c.Time.Equal(r.Time.Truncate(time.Second)) {
			t.Fatalf("record %d: time %v (%v), want %v in seconds", i, c.Time, c.Precision, r.Time)
		}
	}
	// The per-shard events are the same records.
	n := 0
	for _, events := range StreamsShards(h.Records) {
		got, err := pipeline.DecodeStreamsEvent(Payload(events), pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range got {
			if c.Position.SequenceNumber != events[j].ID || h.Records[events[j].Index].Seq != events[j].ID {
				t.Fatalf("shard event %d: id %s, seq %s", j, events[j].ID, c.Position.SequenceNumber)
			}
		}
		n += len(got)
	}
	if n != len(h.Records) {
		t.Fatalf("shards hold %d records of %d", n, len(h.Records))
	}
}

// TestStreamsEventShape compares the encoder's output with the fixture's
// structure: same members, same order.
func TestStreamsEventShape(t *testing.T) {
	tb := NewStream(1, time.UnixMilli(1796034001000), 1)
	ops := []Op{
		{Kind: Put, Item: pipeline.Item{"PK": str("WS#acme"), "SK": str("DOC#d1#CMT#c9"), "EntityType": str("Comment"), "ttl": num(1795996800)}},
		{Kind: Expire, Item: pipeline.Item{"PK": str("WS#acme"), "SK": str("DOC#d1#CMT#c9")}},
	}
	var recs []Record
	for _, op := range ops {
		r, _, err := tb.Apply(op)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	var got, want struct {
		Records []json.RawMessage
	}
	if err := json.Unmarshal(StreamsEvent(recs), &got); err != nil {
		t.Fatal(err)
	}
	fixture := readFixture(t, "../../pipeline/testdata/streams/event.json")
	if err := json.Unmarshal(fixture, &want); err != nil {
		t.Fatal(err)
	}
	if a, b := memberOrder(t, got.Records[1]), memberOrder(t, want.Records[3]); a != b {
		t.Errorf("TTL REMOVE members:\n got %s\nwant %s", a, b)
	}
	if a, b := memberOrder(t, got.Records[0]), memberOrder(t, want.Records[0]); a != b {
		t.Errorf("INSERT members:\n got %s\nwant %s", a, b)
	}
}

func TestKinesisEventDecodes(t *testing.T) {
	h := run(t, Workload{Seed: 6, Changes: 4000, Skew: 0.8})
	krs := ToKinesis(h.Records, 0.05, 6, NewKinesisRand(6))
	data := KinesisEvent(krs)
	changes, err := pipeline.DecodeKinesisEvent(data, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != len(krs) {
		t.Fatalf("%d changes from %d records", len(changes), len(krs))
	}
	for i, c := range changes {
		kr := &krs[i]
		compareChange(t, &kr.Record, &c)
		if c.Position.SequenceNumber != kr.KinesisSeq || c.EventID != uuid(kr.EventID) || c.Table != TableName {
			t.Fatalf("record %d: position %+v, event %s, table %s", i, c.Position, c.EventID, c.Table)
		}
		if c.Position.Shard != fmt.Sprintf("shardId-%012d", kr.KinesisShard) || c.Position.Stream != KinesisStreamARN {
			t.Fatalf("record %d: shard %q stream %q", i, c.Position.Shard, c.Position.Stream)
		}
		if c.Precision != pipeline.Millisecond || !c.Time.Equal(kr.Time) {
			t.Fatalf("record %d: time %v (%v), want %v", i, c.Time, c.Precision, kr.Time)
		}
	}
	var ev struct {
		Records []struct {
			Kinesis struct {
				PartitionKey string  `json:"partitionKey"`
				Arrival      float64 `json:"approximateArrivalTimestamp"`
			} `json:"kinesis"`
		}
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	for i, r := range ev.Records {
		if len(r.Kinesis.PartitionKey) != 32 || strings.ToUpper(r.Kinesis.PartitionKey) != r.Kinesis.PartitionKey {
			t.Fatalf("partition key %q", r.Kinesis.PartitionKey)
		}
		if d := r.Kinesis.Arrival - float64(krs[i].Arrival.UnixMilli())/1000; d > 1e-6 || d < -1e-6 {
			t.Fatalf("arrival %v, want %v", r.Kinesis.Arrival, krs[i].Arrival)
		}
	}
	// The payload has the fixture's members, in its order.
	var payload map[string]any
	if err := json.Unmarshal(AppendKinesisPayload(nil, &krs[0].Record), &payload); err != nil {
		t.Fatal(err)
	}
	var fix []json.RawMessage
	if err := json.Unmarshal(readFixture(t, "../../pipeline/testdata/kinesis/event-ms.payloads.json"), &fix); err != nil {
		t.Fatal(err)
	}
	ttl := -1
	for i := range krs {
		if krs[i].TTL {
			ttl = i
			break
		}
	}
	if ttl < 0 {
		t.Fatal("no TTL record")
	}
	if a, b := memberOrder(t, AppendKinesisPayload(nil, &krs[ttl].Record)), memberOrder(t, fix[2]); a != b {
		t.Errorf("TTL payload members:\n got %s\nwant %s", a, b)
	}
	var fixEvent struct{ Records []json.RawMessage }
	if err := json.Unmarshal(readFixture(t, "../../pipeline/testdata/kinesis/event-ms.json"), &fixEvent); err != nil {
		t.Fatal(err)
	}
	if a, b := memberOrder(t, AppendKinesisRecord(nil, &krs[0])), memberOrder(t, fixEvent.Records[0]); a != b {
		t.Errorf("Kinesis record members:\n got %s\nwant %s", a, b)
	}
}

// compareChange checks a decoded change against the record it came from.
func compareChange(t *testing.T, r *Record, c *pipeline.Change) {
	t.Helper()
	if c.Kind != r.Kind || c.TTL != r.TTL {
		t.Fatalf("%s: kind %v ttl %v, want %v %v", r.Seq, c.Kind, c.TTL, r.Kind, r.TTL)
	}
	for _, p := range [][2]pipeline.Item{{c.Keys, r.Keys}, {c.Old, r.Old}, {c.New, r.New}} {
		if (p[0] == nil) != (p[1] == nil) || itemJSON(p[0]) != itemJSON(p[1]) {
			t.Fatalf("%s: image\n got %s\nwant %s", r.Seq, itemJSON(p[0]), itemJSON(p[1]))
		}
	}
	if c.OldType != entityType(r.Old) || c.NewType != entityType(r.New) {
		t.Fatalf("%s: types %q %q", r.Seq, c.OldType, c.NewType)
	}
	if !c.HasVersion || c.Version != intAttr(r.Image(), "version") {
		t.Fatalf("%s: version %d (%v)", r.Seq, c.Version, c.HasVersion)
	}
	if c.SizeBytes <= 0 {
		t.Fatalf("%s: SizeBytes %d", r.Seq, c.SizeBytes)
	}
}

func readFixture(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// memberOrder lists an object's member names, recursively, in order.
func memberOrder(t *testing.T, data []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []string
	var walk func(depth int) error
	walk = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok && d == '{' {
			for dec.More() {
				name, err := dec.Token()
				if err != nil {
					return err
				}
				if depth < 2 {
					out = append(out, strings.Repeat(".", depth)+name.(string))
				}
				// Images and keys: their members are the item's, not the format's.
				if n := name.(string); n == "Keys" || n == "NewImage" || n == "OldImage" {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					continue
				}
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		if d, ok := tok.(json.Delim); ok && d == '[' {
			for dec.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(0); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// --- Kinesis delivery -------------------------------------------------------

func TestToKinesis(t *testing.T) {
	h := run(t, Workload{Seed: 9, Changes: 5000, Skew: 1.2})
	const window = 8
	krs := ToKinesis(h.Records, 0.1, window, NewKinesisRand(9))
	copies := make([]int, len(h.Records))
	maxSeen := -1
	reordered, itemReordered := 0, 0
	lastSeq := map[int]string{}
	lastArrival := map[int]time.Time{}
	lastOfItem := map[itemKey]int{}
	for i, kr := range krs {
		copies[kr.Index]++
		if kr.EventID != h.Records[kr.Index].EventID || kr.Seq != h.Records[kr.Index].Seq {
			t.Fatalf("copy %d does not carry record %d", i, kr.Index)
		}
		if maxSeen-kr.Index >= window {
			t.Fatalf("record %d delivered after record %d: further apart than the window", kr.Index, maxSeen)
		}
		if kr.Index < maxSeen {
			reordered++
		}
		maxSeen = max(maxSeen, kr.Index)
		k := key(kr.Keys)
		if prev, ok := lastOfItem[k]; ok && prev > kr.Index {
			itemReordered++
		}
		lastOfItem[k] = kr.Index
		if prev, ok := lastSeq[kr.KinesisShard]; ok && !seqLess(prev, kr.KinesisSeq) {
			t.Fatalf("shard %d: Kinesis seq %s after %s", kr.KinesisShard, kr.KinesisSeq, prev)
		}
		lastSeq[kr.KinesisShard] = kr.KinesisSeq
		if kr.Arrival.Before(lastArrival[kr.KinesisShard]) || kr.Arrival.Before(kr.Time) {
			t.Fatalf("shard %d: arrival goes back", kr.KinesisShard)
		}
		lastArrival[kr.KinesisShard] = kr.Arrival
	}
	dups := 0
	for i, n := range copies {
		if n == 0 {
			t.Fatalf("record %d lost", i)
		}
		dups += n - 1
	}
	if dups < len(h.Records)/20 || dups > len(h.Records)/5 {
		t.Errorf("%d duplicates of %d records at rate 0.1", dups, len(h.Records))
	}
	if reordered == 0 || itemReordered == 0 {
		t.Errorf("no reordering (%d) or none within an item (%d)", reordered, itemReordered)
	}
	t.Logf("%d copies, %d duplicates, %d reordered, %d within an item", len(krs), dups, reordered, itemReordered)

	// Window 1 and no duplicates: the stream's order, one copy each.
	plain := ToKinesis(h.Records, 0, 1, NewKinesisRand(9))
	if len(plain) != len(h.Records) {
		t.Fatalf("%d copies, want %d", len(plain), len(h.Records))
	}
	for i, kr := range plain {
		if kr.Index != i || kr.Duplicate {
			t.Fatalf("copy %d is record %d", i, kr.Index)
		}
	}
}

// --- Event source mapping ---------------------------------------------------

// testShard returns n events with increasing sequence numbers.
func testShard(n, first int) []Event {
	events := make([]Event, n)
	for i := range events {
		id := seqNumber(uint64(first + i))
		events[i] = Event{Index: first + i, ID: id, Data: []byte(`{"id":"` + id + `"}`)}
	}
	return events
}

// ids reads the IDs of a test payload.
func ids(t *testing.T, payload []byte) []string {
	var ev struct{ Records []struct{ ID string } }
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ev.Records {
		out = append(out, r.ID)
	}
	return out
}

type call struct {
	shard, from, to int
	redelivery      bool
}

// script runs m over shards with invoke, returning the deliveries made.
func script(t *testing.T, m *ESM, shards [][]Event, invoke func(n int, ids []string) ([]byte, error)) ([]call, Stats, error) {
	t.Helper()
	var calls []call
	m.Trace = func(d Delivery) { calls = append(calls, call{d.Shard, d.From, d.To, d.Redelivery}) }
	n := 0
	st, err := m.Run(context.Background(), shards, func(_ context.Context, payload []byte) ([]byte, error) {
		n++
		return invoke(n, ids(t, payload))
	})
	return calls, st, err
}

func failures(ids ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"batchItemFailures":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"itemIdentifier":%q}`, id)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func TestESMPartialFailureResumesAtLowest(t *testing.T) {
	shard := testShard(10, 0)
	calls, st, err := script(t, &ESM{BatchSize: 4}, [][]Event{shard}, func(n int, ids []string) ([]byte, error) {
		if n == 1 {
			return failures(ids[2], ids[1]), nil // lowest: ids[1]
		}
		return []byte(`{"batchItemFailures":[]}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{0, 0, 4, false}, {0, 1, 5, false}, {0, 5, 9, false}, {0, 9, 10, false}}
	if !slices.Equal(calls, want) {
		t.Fatalf("deliveries %v, want %v", calls, want)
	}
	if st.PartialFailures != 1 || st.Retries != 1 || st.Invocations != 4 || st.Records != 4+4+4+1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestESMWholeBatchFailures(t *testing.T) {
	for name, resp := range map[string][]byte{
		"unknown id":  failures("123456789012345678901234"),
		"empty id":    failures(""),
		"null id":     []byte(`{"batchItemFailures":[{"itemIdentifier":null}]}`),
		"wrong key":   []byte(`{"batchItemFailures":[{"itemId":"x"}]}`),
		"not json":    []byte(`oops`),
		"mixed known": nil, // set below: a known and an unknown ID
	} {
		t.Run(name, func(t *testing.T) {
			shard := testShard(6, 0)
			calls, st, err := script(t, &ESM{BatchSize: 4}, [][]Event{shard}, func(n int, ids []string) ([]byte, error) {
				if n == 1 {
					if resp == nil {
						return failures(ids[3], "999999999999999999999999"), nil
					}
					return resp, nil
				}
				return nil, nil // an empty response is a success
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []call{{0, 0, 4, false}, {0, 0, 4, false}, {0, 4, 6, false}}
			if !slices.Equal(calls, want) || st.WholeFailures != 1 || st.Bisections != 0 {
				t.Fatalf("deliveries %v stats %+v", calls, st)
			}
		})
	}
	// Successes in every form.
	for _, resp := range []string{"", "null", "{}", `{"batchItemFailures":null}`, `{"batchItemFailures":[]}`} {
		calls, _, err := script(t, &ESM{BatchSize: 4}, [][]Event{testShard(4, 0)}, func(int, []string) ([]byte, error) {
			return []byte(resp), nil
		})
		if err != nil || len(calls) != 1 {
			t.Fatalf("response %q: %v deliveries, err %v", resp, calls, err)
		}
	}
}

func TestESMBisect(t *testing.T) {
	shard := testShard(8, 0)
	poison := shard[5].ID
	invoke := func(_ int, ids []string) ([]byte, error) {
		if len(ids) > 1 && slices.Contains(ids, poison) {
			return nil, errors.New("boom")
		}
		return nil, nil // alone, the record goes through: a transient fault
	}
	calls, st, err := script(t, &ESM{BatchSize: 8, Bisect: true}, [][]Event{shard}, invoke)
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{0, 0, 8, false}, {0, 0, 4, false}, {0, 4, 8, false}, {0, 4, 6, false}, {0, 4, 5, false}, {0, 5, 6, false}, {0, 6, 8, false}}
	if !slices.Equal(calls, want) {
		t.Fatalf("deliveries %v, want %v", calls, want)
	}
	if st.Bisections != 3 || st.Errors != 3 {
		t.Fatalf("stats %+v", st)
	}

	// Without bisection the whole batch is retried, up to MaxAttempts.
	calls, st, err = script(t, &ESM{BatchSize: 8, MaxAttempts: 5}, [][]Event{shard}, invoke)
	if err == nil || len(calls) != 5 || st.Errors != 5 || st.Retries != 4 {
		t.Fatalf("without bisect: %v, stats %+v, err %v", calls, st, err)
	}
	for _, c := range calls {
		if c != (call{0, 0, 8, false}) {
			t.Fatalf("retried %v, want the whole batch", c)
		}
	}

	// A partial failure inside a bisected half resumes inside it, then the
	// second half follows.
	calls, _, err = script(t, &ESM{BatchSize: 8, Bisect: true}, [][]Event{shard}, func(n int, ids []string) ([]byte, error) {
		switch n {
		case 1:
			return nil, errors.New("boom")
		case 2:
			return failures(ids[2]), nil
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = []call{{0, 0, 8, false}, {0, 0, 4, false}, {0, 2, 4, false}, {0, 4, 8, false}}
	if !slices.Equal(calls, want) {
		t.Fatalf("deliveries %v, want %v", calls, want)
	}
}

func TestESMMaxAttempts(t *testing.T) {
	shard := testShard(3, 0)
	// Bisection does not escape a record that always fails.
	calls, _, err := script(t, &ESM{BatchSize: 3, Bisect: true, MaxAttempts: 4}, [][]Event{shard}, func(int, []string) ([]byte, error) {
		return nil, errors.New("always")
	})
	if err == nil || !strings.Contains(err.Error(), "no progress") {
		t.Fatalf("err %v after %v", err, calls)
	}
	if len(calls) != 4 {
		t.Fatalf("%d deliveries, want 4", len(calls))
	}
	// A record always reported as failed.
	_, _, err = script(t, &ESM{BatchSize: 3, MaxAttempts: 3}, [][]Event{shard}, func(_ int, ids []string) ([]byte, error) {
		return failures(ids[0]), nil
	})
	if err == nil {
		t.Fatal("no error for a record that never succeeds")
	}
}

func TestESMRedeliver(t *testing.T) {
	shard := testShard(10, 0)
	calls, st, err := script(t, &ESM{BatchSize: 4, RedeliverRate: 1}, [][]Event{shard}, func(int, []string) ([]byte, error) {
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{0, 0, 4, false}, {0, 0, 4, true}, {0, 4, 8, false}, {0, 4, 8, true}, {0, 8, 10, false}, {0, 8, 10, true}}
	if !slices.Equal(calls, want) || st.Redeliveries != 3 {
		t.Fatalf("deliveries %v stats %+v", calls, st)
	}
	// At a rate of 0.3, about 30% of batches come twice, deterministically.
	count := func() int {
		_, st, err := script(t, &ESM{BatchSize: 1, RedeliverRate: 0.3, Seed: 4}, [][]Event{testShard(1000, 0)}, func(int, []string) ([]byte, error) {
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return st.Redeliveries
	}
	if a, b := count(), count(); a != b || a < 200 || a > 400 {
		t.Fatalf("redeliveries %d and %d", a, b)
	}
}

// TestESMDefaultBatchSize: a zero BatchSize is Lambda's default, 100.
func TestESMDefaultBatchSize(t *testing.T) {
	calls, _, err := script(t, &ESM{}, [][]Event{testShard(150, 0)}, func(int, []string) ([]byte, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := []call{{0, 0, 100, false}, {0, 100, 150, false}}; !slices.Equal(calls, want) {
		t.Fatalf("deliveries %v, want %v", calls, want)
	}
}

// TestESMVaryBatches: batches hold 1 to BatchSize records, contiguous from
// the checkpoint; the retry after a partial failure starts at the reported
// record and is, in turn, the rest of the batch, a shorter run, or a new
// batch of any size.
func TestESMVaryBatches(t *testing.T) {
	shard := testShard(3000, 0)
	var (
		sizes                 = map[int]bool{}
		rest, shorter, longer int
		last                  call
		reported              = -1
	)
	m := &ESM{BatchSize: 20, VaryBatches: true, Seed: 3}
	m.Trace = func(d Delivery) {
		c := call{d.Shard, d.From, d.To, d.Redelivery}
		if c.to <= c.from || c.to-c.from > 20 {
			t.Fatalf("batch %v: want 1 to 20 records", c)
		}
		sizes[c.to-c.from] = true
		if reported >= 0 {
			if c.from != reported {
				t.Fatalf("after record %d was reported, batch %v", reported, c)
			}
			switch {
			case c.to == last.to:
				rest++
			case c.to < last.to:
				shorter++
			default:
				longer++
			}
		} else if c.from != last.to {
			t.Fatalf("batch %v does not follow %v", c, last)
		}
		last, reported = c, -1
		if len(d.Response) > 0 {
			reported = c.from + 2 // the response names the batch's third record
		}
	}
	n := 0
	_, err := m.Run(context.Background(), [][]Event{shard}, func(_ context.Context, payload []byte) ([]byte, error) {
		n++
		if got := ids(t, payload); n%3 == 0 && len(got) > 2 {
			return failures(got[2]), nil
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) < 15 {
		t.Errorf("only %d batch sizes of 20 seen", len(sizes))
	}
	if rest < 20 || shorter < 20 || longer < 5 { // only a new batch can be longer
		t.Errorf("retries: %d the rest of the batch, %d shorter, %d longer; want each often", rest, shorter, longer)
	}
}

// TestESMDuplicates: with DuplicateRate, a batch is invoked twice and the
// first response is lost; the second decides.
func TestESMDuplicates(t *testing.T) {
	shard := testShard(10, 0)
	calls, st, err := script(t, &ESM{BatchSize: 4, DuplicateRate: 1}, [][]Event{shard}, func(n int, ids []string) ([]byte, error) {
		if n == 1 {
			return nil, errors.New("lost: the second invocation decides")
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{0, 0, 4, false}, {0, 0, 4, false}, {0, 4, 8, false}, {0, 4, 8, false}, {0, 8, 10, false}, {0, 8, 10, false}}
	if !slices.Equal(calls, want) || st.Duplicates != 3 || st.Invocations != 6 || st.Errors != 0 {
		t.Fatalf("deliveries %v stats %+v", calls, st)
	}
}

func TestESMRoundRobinAndReplay(t *testing.T) {
	shards := [][]Event{testShard(6, 0), testShard(2, 6), nil, testShard(4, 8)}
	calls, _, err := script(t, &ESM{BatchSize: 2}, shards, func(int, []string) ([]byte, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := []call{{0, 0, 2, false}, {1, 0, 2, false}, {3, 0, 2, false}, {0, 2, 4, false}, {3, 2, 4, false}, {0, 4, 6, false}}
	if !slices.Equal(calls, want) {
		t.Fatalf("deliveries %v, want %v", calls, want)
	}

	// A window replay delivers only events with Index in [from, to).
	m := &ESM{BatchSize: 100}
	var got []string
	_, err = m.ReplayWindow(context.Background(), shards, 4, 9, func(_ context.Context, p []byte) ([]byte, error) {
		got = append(got, ids(t, p)...)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{seqNumber(4), seqNumber(5), seqNumber(6), seqNumber(7), seqNumber(8)}
	if !slices.Equal(got, wantIDs) {
		t.Fatalf("window replay delivered %v", got)
	}
	got = nil
	st, err := m.Replay(context.Background(), shards, func(_ context.Context, p []byte) ([]byte, error) {
		got = append(got, ids(t, p)...)
		return nil, nil
	})
	if err != nil || len(got) != 12 || st.Records != 12 {
		t.Fatalf("full replay: %d records, %+v, %v", len(got), st, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Run(ctx, shards, func(context.Context, []byte) ([]byte, error) { return nil, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
}

// TestESMWithProcessor runs whole histories through pipeline's Processor with
// transient handler failures, invocation failures, bisection and
// redelivery, over both paths, and checks at-least-once, in-order delivery
// per item (Streams) and at-least-once delivery of every change (Kinesis).
func TestESMWithProcessor(t *testing.T) {
	h := run(t, Workload{Seed: 21, Changes: 5000, Skew: 1.0, Shards: 3})
	cfg := pipeline.Config{Logger: slog.New(slog.DiscardHandler)}

	// A handler that fails the first attempt of one record in every.
	type handler struct {
		attempts map[string]int
		log      []string // IDs of applied changes, in order
	}
	newHandler := func(every uint64, id func(c *pipeline.Change) string) (*handler, pipeline.BatchHandler) {
		hd := &handler{attempts: map[string]int{}}
		return hd, pipeline.BatchHandlerFunc(func(_ context.Context, changes []pipeline.Change) error {
			for i := range changes {
				k := id(&changes[i])
				hd.attempts[k]++
				if hd.attempts[k] == 1 && splitmix(hashStrings(k))%every == 0 {
					return &pipeline.BatchError{Index: i, Err: errors.New("transient")}
				}
				hd.log = append(hd.log, k)
			}
			return nil
		})
	}

	t.Run("streams", func(t *testing.T) {
		hd, bh := newHandler(10, func(c *pipeline.Change) string { return c.Position.SequenceNumber })
		flaky := &FlakyInvoke{Invoke: pipeline.NewStreamsProcessor(bh, cfg).Invoke, FailBefore: 0.03, FailAfter: 0.03, Seed: 1}
		m := &ESM{BatchSize: 50, Bisect: true, RedeliverRate: 0.2, Seed: 1}
		st, err := m.Run(context.Background(), StreamsShards(h.Records), flaky.Call)
		if err != nil {
			t.Fatal(err)
		}
		index := map[string]int{}
		for i, r := range h.Records {
			index[r.Seq] = i
		}
		// First applications: every record, and per item in stream order.
		applied := map[string]bool{}
		lastOfItem := map[itemKey]int{}
		for _, seq := range hd.log {
			if applied[seq] {
				continue
			}
			applied[seq] = true
			i := index[seq]
			k := key(h.Records[i].Keys)
			if prev, ok := lastOfItem[k]; ok && prev > i {
				t.Fatalf("record %d of %s applied first after record %d", i, k, prev)
			}
			lastOfItem[k] = i
		}
		if len(applied) != len(h.Records) {
			t.Fatalf("%d of %d records applied", len(applied), len(h.Records))
		}
		_, failed := flaky.Faults()
		if st.PartialFailures == 0 || st.Errors == 0 || st.Bisections == 0 || st.Redeliveries == 0 || failed == 0 || len(hd.log) <= len(h.Records) {
			t.Fatalf("not every fault happened: %+v, %d injected, %d applications", st, failed, len(hd.log))
		}
		t.Logf("%+v; %d applications of %d records", st, len(hd.log), len(h.Records))
	})

	t.Run("kinesis", func(t *testing.T) {
		krs := ToKinesis(h.Records, 0.05, 10, NewKinesisRand(21))
		hd, bh := newHandler(50, func(c *pipeline.Change) string { return c.Position.SequenceNumber })
		m := &ESM{BatchSize: 100, Bisect: true, RedeliverRate: 0.05, Seed: 2}
		st, err := m.Run(context.Background(), KinesisShards(krs), pipeline.NewKinesisProcessor(bh, cfg).Invoke)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, id := range hd.log {
			seen[id] = true
		}
		byEvent := map[string]bool{}
		for _, kr := range krs {
			if !seen[kr.KinesisSeq] {
				t.Fatalf("Kinesis record %s never applied", kr.KinesisSeq)
			}
			byEvent[kr.EventID] = true
		}
		if len(byEvent) != len(h.Records) {
			t.Fatalf("%d distinct changes of %d", len(byEvent), len(h.Records))
		}
		t.Logf("%+v; %d Kinesis records for %d changes", st, len(krs), len(h.Records))
	})
}

// --- Faults -----------------------------------------------------------------

// memStore is a minimal in-memory projections.Store.
type memStore struct {
	mu      sync.Mutex
	ledgers map[string]driver.LedgerEntry
	commits int
}

func (s *memStore) ReadLedgers(_ context.Context, keys []string) (map[string]driver.LedgerEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]driver.LedgerEntry{}
	for _, k := range keys {
		if e, ok := s.ledgers[k]; ok {
			out[k] = e
		}
	}
	return out, nil
}

func (s *memStore) Commit(_ context.Context, tx *driver.Tx) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range tx.Ledgers {
		s.ledgers[l.Key] = driver.LedgerEntry{Rev: l.ExpectRev + 1, Body: l.Body}
	}
	if tx.Len() > 0 {
		s.commits++
	}
	return nil
}

func TestFaultyStore(t *testing.T) {
	ctx := context.Background()
	tx := func(i int) *driver.Tx {
		return &driver.Tx{Ledgers: []driver.LedgerPut{{Key: fmt.Sprint("k", i)}}}
	}
	inner := &memStore{ledgers: map[string]driver.LedgerEntry{}}
	f := NewFaultyStore(inner, 1)
	f.CommitFailBefore = 1
	if err := f.Commit(ctx, tx(1)); !errors.Is(err, ErrInjected) || errors.Is(err, driver.ErrContention) || inner.commits != 0 {
		t.Fatalf("fail before: %v, %d commits", err, inner.commits)
	}
	f.CommitFailBefore, f.CommitFailAfter = 0, 1
	if err := f.Commit(ctx, tx(1)); !errors.Is(err, ErrInjected) || inner.commits != 1 {
		t.Fatalf("fail after: %v, %d commits", err, inner.commits)
	}
	if err := f.Commit(ctx, &driver.Tx{}); err != nil {
		t.Fatalf("empty tx: %v", err)
	}
	f.CommitFailAfter, f.ReadFail = 0, 1
	if _, err := f.ReadLedgers(ctx, []string{"k1"}); !errors.Is(err, ErrInjected) {
		t.Fatalf("read: %v", err)
	}
	f.ReadFail = 0
	if got, err := f.ReadLedgers(ctx, []string{"k1"}); err != nil || got["k1"].Rev != 1 {
		t.Fatalf("read through: %v %v", got, err)
	}
	want := StoreFaults{Commits: 2, Reads: 2, CommitsFailedBefore: 1, CommitsFailedAfter: 1, ReadsFailed: 1}
	if got := f.Faults(); got != want || got.Total() != 3 {
		t.Fatalf("faults %+v, want %+v", got, want)
	}

	// Rates: deterministic whatever the goroutines' order, and a retry of
	// the same transaction gets a fresh roll.
	counts := func() StoreFaults {
		f := &FaultyStore{Store: &memStore{ledgers: map[string]driver.LedgerEntry{}}, Seed: 9, CommitFailBefore: 0.2, CommitFailAfter: 0.1, ReadFail: 0.1}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 250 {
					for f.Commit(ctx, tx(g*1000+i)) != nil {
					}
					_, _ = f.ReadLedgers(ctx, []string{fmt.Sprint("k", i)}) // injected failures are what is counted
				}
			}()
		}
		wg.Wait()
		return f.Faults()
	}
	a, b := counts(), counts()
	if a != b {
		t.Fatalf("faults differ between runs: %+v vs %+v", a, b)
	}
	if r := float64(a.CommitsFailedBefore) / float64(a.Commits); r < 0.15 || r > 0.25 {
		t.Fatalf("fail-before rate %.2f, want about 0.2 (%+v)", r, a)
	}
}

// billedStore is a memStore that estimates every commit at 3 write units.
type billedStore struct{ *memStore }

func (billedStore) WriteUnits(*driver.Tx) float64 { return 3 }

// TestFaultyStorePassesOnWriteUnits: FaultyStore passes on its store's
// write-unit estimate, so that the demo and the exactly-once tests still
// count what the commits cost; over a store without one, it has none.
func TestFaultyStorePassesOnWriteUnits(t *testing.T) {
	tx := &driver.Tx{Ledgers: []driver.LedgerPut{{Key: "k"}}}
	tests := []struct {
		name  string
		store driver.Store
		want  float64
	}{
		{"estimating store", billedStore{&memStore{ledgers: map[string]driver.LedgerEntry{}}}, 3},
		{"store without an estimate", &memStore{ledgers: map[string]driver.LedgerEntry{}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := driver.WriteUnitsOf(NewFaultyStore(tt.store, 1), tx); got != tt.want {
				t.Errorf("WriteUnitsOf(FaultyStore) = %v, want %v", got, tt.want)
			}
		})
	}
}

// --- Speed ------------------------------------------------------------------

// go test -run XXX -bench . ./internal/sim/
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				run(b, Workload{Seed: 1, Changes: n, Skew: 1.0})
			}
		})
	}
}

func BenchmarkEncode100k(b *testing.B) {
	h := run(b, Workload{Seed: 1, Changes: 100_000, Skew: 1.0})
	b.Run("StreamsShards", func(b *testing.B) {
		for b.Loop() {
			StreamsShards(h.Records)
		}
	})
	b.Run("ToKinesis+KinesisShards", func(b *testing.B) {
		for b.Loop() {
			KinesisShards(ToKinesis(h.Records, 0.01, 4, NewKinesisRand(1)))
		}
	})
}
