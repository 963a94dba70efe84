package archive_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/capabilities/archive/lake"
	"github.com/tributary/tributary/pipeline"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// position identifies a removal: its stream and sequence number.
func position(m archive.Meta) string { return m.StreamARN + "\x00" + m.SequenceNumber }

// simArchive is an archive the exactly-once simulation wrote (prefix
// "archive"): the archiver's real output under faults, retries and
// redeliveries.
func simArchive(t *testing.T, seed uint64) archive.SimArchive {
	t.Helper()
	return archive.NewSimArchive(t, seed, 1000)
}

// open opens the archive at the root of src, with both forms.
func open(src archive.Source, prefix string) *archive.Archive {
	return archive.Open(src, prefix).WithCompacted(lake.Decode)
}

// allLines returns every line the archive's readers give, sorted: what
// `archive cat` prints, as a multiset.
func allLines(t *testing.T, src archive.Source) []string {
	t.Helper()
	ctx := context.Background()
	a := open(src, "archive")
	objs, _, err := a.Objects(ctx, archive.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		if err := a.ReadObject(ctx, o, func(_ int, line []byte) error { out = append(out, string(line)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(out)
	return out
}

// restored returns what restore gives: every selected item's DynamoDB
// JSON, by item key.
func restored(t *testing.T, src archive.Source) map[string]string {
	t.Helper()
	ctx := context.Background()
	sel, err := open(src, "archive").Select(ctx, archive.Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = sel.Each(ctx, func(_ archive.ObjectInfo, item pipeline.Item, raw json.RawMessage) error {
		out[pipeline.ItemKey(pipeline.Item{"PK": item["PK"], "SK": item["SK"]})] = string(raw)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compactedPositions returns every stream position the compacted objects
// hold, failing on one held twice.
func compactedPositions(t *testing.T, st *objstore.Dir) map[string]bool {
	t.Helper()
	ctx := context.Background()
	a := open(st, "")
	seen := map[string]bool{}
	err := st.List(ctx, "archive/"+archive.CompactedDir+"/", func(o objstore.Object) error {
		if !strings.HasSuffix(o.Key, archive.CompactedExt) {
			return nil
		}
		return a.ReadLines(ctx, o.Key, func(n int, line []byte) error {
			l, err := archive.ParseLine(line)
			if err != nil {
				return err
			}
			p := position(l.Archive)
			if seen[p] {
				return fmt.Errorf("%s row %d: position %s held twice", o.Key, n, l.Archive.SequenceNumber)
			}
			seen[p] = true
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// jsonObjects returns the JSON-lines objects of the archive.
func jsonObjects(t *testing.T, st *objstore.Dir) []string {
	t.Helper()
	var keys []string
	err := st.List(context.Background(), "archive/", func(o objstore.Object) error {
		if k, ok := archive.ParseKey(strings.TrimPrefix(o.Key, "archive/")); ok && !k.Compacted {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// crashStore fails, drawn from a seed, the writes, removals and reads a
// compaction makes: before the call (nothing happened) or after it
// (the call took effect but its caller saw an error, as with a crash
// right after it, or a lost response).
type crashStore struct {
	*objstore.Dir
	mu      sync.Mutex
	rng     *rand.Rand
	p       float64
	crashes int
}

var errCrash = errors.New("injected crash")

func (s *crashStore) fail() (before, after bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng.Float64() >= s.p {
		return false, false
	}
	s.crashes++
	if s.rng.IntN(2) == 0 {
		return true, false
	}
	return false, true
}

func (s *crashStore) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	before, after := s.fail()
	if before {
		return "", errCrash
	}
	v, err := s.Dir.PutIfAbsent(ctx, key, body)
	if after && err == nil {
		return "", errCrash
	}
	return v, err
}

func (s *crashStore) DeleteIf(ctx context.Context, key, version string) error {
	before, after := s.fail()
	if before {
		return errCrash
	}
	err := s.Dir.DeleteIf(ctx, key, version)
	if after && err == nil {
		return errCrash
	}
	return err
}

func (s *crashStore) Get(ctx context.Context, key string) ([]byte, string, error) {
	if before, _ := s.fail(); before {
		return nil, "", errCrash
	}
	return s.Dir.Get(ctx, key)
}

// TestCompactExactlyOnce is compaction's guarantee: whatever crashes come
// (between the Parquet write and the removals, in the removals, in the
// lease's writes, after a write that took effect), every run that follows
// leaves the archive with each removal exactly once across both forms, no
// position in two compacted objects, the same lines for `archive cat` and
// the same items for restore; a last clean run leaves only Parquet; a late
// object (a redriven batch re-creating its object, whole or with more
// lines) after that adds nothing twice.
func TestCompactExactlyOnce(t *testing.T) {
	seeds := 6
	if archive.RaceDetector || testing.Short() {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed+1), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sim := simArchive(t, seed+1)
			dir := sim.Dir
			beforeLines, beforeItems := allLines(t, dir), restored(t, dir)
			originals := map[string][]byte{}
			for _, k := range jsonObjects(t, dir) {
				b, err := objstore.ReadAll(ctx, dir, k)
				if err != nil {
					t.Fatal(err)
				}
				originals[k] = b
			}
			st := &crashStore{Dir: dir, rng: rand.New(rand.NewPCG(seed, 28)), p: 0.08}
			// Crashed runs leave their lease; a later run takes it over
			// once expired, which the clock moves past.
			clock := time.Now()
			opts := func() lake.Options {
				clock = clock.Add(time.Hour)
				return lake.Options{Prefix: "archive", MaxInputBytes: 4 << 10, Logger: quiet, Now: func() time.Time { return clock }}
			}
			runs := 0
			for ; runs < 200; runs++ {
				_, err := lake.Compact(ctx, st, opts())
				if err != nil && !errors.Is(err, errCrash) {
					t.Fatalf("run %d: %v", runs, err)
				}
				if err := sim.Check(ctx, dir, lake.Decode); err != nil {
					t.Fatalf("after run %d (err %v):\n%v", runs, err, err)
				}
				compactedPositions(t, dir)
				if err == nil && len(jsonObjects(t, dir)) == 0 {
					break
				}
			}
			if st.crashes == 0 || runs < 2 {
				t.Fatalf("the faults exercised too little: %d crashes over %d runs", st.crashes, runs)
			}
			st.p = 0
			res, err := lake.Compact(ctx, st, opts())
			if err != nil || len(res.Written) != 0 || res.Inputs != 0 {
				t.Fatalf("a rerun is no no-op: %+v %v", res, err)
			}
			if got := allLines(t, dir); !equalStrings(got, beforeLines) {
				t.Fatalf("archive cat after compaction: %d lines, before %d", len(got), len(beforeLines))
			}
			if got := restored(t, dir); !equalMaps(got, beforeItems) {
				t.Fatalf("restore after compaction: %d items, before %d", len(got), len(beforeItems))
			}
			held := len(compactedPositions(t, dir))

			// Late objects: one re-created as it was, one re-created with
			// the lines of another object of its partition too.
			keys := make([]string, 0, len(originals))
			for k := range originals {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			late := keys[len(keys)/2]
			if err := dir.Put(ctx, late, originals[late]); err != nil {
				t.Fatal(err)
			}
			var merged []byte
			for _, k := range keys {
				if k != late && filepath.Dir(k) == filepath.Dir(keys[0]) {
					a, _ := archive.Gunzip(originals[keys[0]])
					b, _ := archive.Gunzip(originals[k])
					merged = archive.Gzip(append(a, b...))
					break
				}
			}
			if merged != nil {
				if err := dir.Put(ctx, keys[0], merged); err != nil {
					t.Fatal(err)
				}
			}
			if err := sim.Check(ctx, dir, lake.Decode); merged == nil && err != nil {
				t.Fatalf("with a late object: %v", err)
			}
			res, err = lake.Compact(ctx, st, opts())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Written) != 0 || res.Rows != 0 || len(jsonObjects(t, dir)) != 0 {
				t.Fatalf("late objects compacted again: %+v, left %v", res, jsonObjects(t, dir))
			}
			if got := len(compactedPositions(t, dir)); got != held {
				t.Fatalf("compacted positions %d, before the late objects %d", got, held)
			}
			if err := sim.Check(ctx, dir, lake.Decode); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d runs, %d injected crashes; %d objects (%d bytes) became %d rows", runs, st.crashes, len(originals), totalSize(originals), held)
		})
	}
}

func totalSize(m map[string][]byte) int {
	n := 0
	for _, b := range m {
		n += len(b)
	}
	return n
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// stallStore holds a compaction inside its first partition (after it took
// the lease) until released, so that another can run meanwhile.
type stallStore struct {
	*objstore.Dir
	once    sync.Once
	inside  chan struct{}
	release chan struct{}
}

func (s *stallStore) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	v, err := s.Dir.PutIfAbsent(ctx, key, body)
	if strings.Contains(key, "/"+archive.LeaseDir+"/") {
		s.once.Do(func() { close(s.inside); <-s.release })
	}
	return v, err
}

// TestCompactConcurrent: two compactions at once, interleaved at every
// point the seed picks (the second starts while the first holds a
// partition), leave each removal in one compacted object; the partition
// one holds the other leaves (Busy) and takes at its next run. A lease
// left by a crashed run is taken over once expired, not before.
func TestCompactConcurrent(t *testing.T) {
	ctx := context.Background()
	sim := simArchive(t, 7)
	dir := sim.Dir
	before := restored(t, dir)
	st := &stallStore{Dir: dir, inside: make(chan struct{}), release: make(chan struct{})}
	var first lake.Result
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, firstErr = lake.Compact(ctx, st, lake.Options{Prefix: "archive", Owner: "first", Logger: quiet})
	}()
	<-st.inside
	second, err := lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Owner: "second", Logger: quiet})
	close(st.release)
	<-done
	if err != nil || firstErr != nil {
		t.Fatal(err, firstErr)
	}
	if len(second.Busy) != 1 {
		t.Fatalf("the second run found %v busy, want the first's partition", second.Busy)
	}
	third, err := lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Owner: "third", Logger: quiet})
	if err != nil || len(third.Busy) != 0 || len(jsonObjects(t, dir)) != 0 {
		t.Fatalf("third run: %+v %v, left %v", third, err, jsonObjects(t, dir))
	}
	compactedPositions(t, dir)
	if err := sim.Check(ctx, dir, lake.Decode); err != nil {
		t.Fatal(err)
	}
	if got := restored(t, dir); !equalMaps(got, before) {
		t.Fatalf("restore: %d items, before %d", len(got), len(before))
	}
	t.Logf("first %d written, second %d written (%d busy), third %d", len(first.Written), len(second.Written), len(second.Busy), len(third.Written))

	// Random interleavings: several runs at once, each on its own goroutine.
	for seed := range uint64(4) {
		sim := simArchive(t, 20+seed)
		dir := sim.Dir
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					res, err := lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Owner: fmt.Sprint("run", i), Logger: quiet})
					if err != nil || len(res.Busy) == 0 {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		compactedPositions(t, dir)
		if err := sim.Check(ctx, dir, lake.Decode); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestCompactOlderThanAndKeep: objects younger than --older-than stay as
// they are; 0 takes them all. Kept objects are read once: readers leave
// them out, and a later run neither reads nor writes them again.
func TestCompactOlderThanAndKeep(t *testing.T) {
	ctx := context.Background()
	sim := simArchive(t, 3)
	dir := sim.Dir
	n := len(jsonObjects(t, dir))
	before := allLines(t, dir)
	res, err := lake.Compact(ctx, dir, lake.Options{Prefix: "archive", OlderThan: time.Hour, Logger: quiet})
	if err != nil || res.Young != n || res.Partitions != 0 || len(res.Written) != 0 {
		t.Fatalf("an hour: %+v %v, want %d young", res, err, n)
	}
	res, err = lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Keep: true, Logger: quiet})
	if err != nil || res.Kept != n || res.Removed != 0 || len(jsonObjects(t, dir)) != n {
		t.Fatalf("keep: %+v %v", res, err)
	}
	a := open(dir, "archive")
	objs, _, err := a.Objects(ctx, archive.Filter{})
	if err != nil || a.Covered() != int64(n) {
		t.Fatalf("covered %d of %d: %v", a.Covered(), n, err)
	}
	for _, o := range objs {
		if !o.Compacted {
			t.Fatalf("%s listed beside the compacted object holding it", o.Key)
		}
	}
	if got := allLines(t, dir); !equalStrings(got, before) {
		t.Fatalf("cat with kept objects: %d lines, want %d", len(got), len(before))
	}
	res, err = lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Keep: true, Logger: quiet})
	if err != nil || len(res.Written) != 0 || res.Duplicates != 0 || res.Kept != n {
		t.Fatalf("second keep run: %+v %v", res, err)
	}
	res, err = lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Logger: quiet})
	if err != nil || res.Removed != n || len(res.Written) != 0 {
		t.Fatalf("removing kept objects: %+v %v", res, err)
	}
}

// TestParquetSchemaIsTheDeclaredColumns holds the columns the Glue table
// declares (lake.Columns, which the template's test holds the template
// to) against the schema of a file compaction wrote: names, order aside,
// and physical and logical types as Athena maps them.
func TestParquetSchemaIsTheDeclaredColumns(t *testing.T) {
	ctx := context.Background()
	sim := simArchive(t, 5)
	typed := []lake.TypedColumn{{Attribute: "status", Type: "string"}, {Attribute: "amount", Type: "double"}, {Attribute: "flag", Type: "boolean"}}
	res, err := lake.Compact(ctx, sim.Dir, lake.Options{Prefix: "archive", Typed: typed, Logger: quiet})
	if err != nil || len(res.Written) == 0 {
		t.Fatal(res, err)
	}
	b, err := objstore.ReadAll(ctx, sim.Dir, res.Written[0])
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	athena := func(n parquet.Node) string {
		var lt any
		if l := n.Type().LogicalType(); l != nil {
			lt = l.Value
		}
		switch v := lt.(type) {
		case *format.StringType:
			return "string"
		case *format.TimestampType:
			if _, ok := v.Unit.Value.(*format.MicroSeconds); ok && v.IsAdjustedToUTC {
				return "timestamp"
			}
		}
		switch {
		case n.Type().Kind() == parquet.Double:
			return "double"
		case n.Type().Kind() == parquet.Boolean:
			return "boolean"
		}
		return n.Type().String()
	}
	got := map[string]string{}
	for _, fld := range f.Schema().Fields() {
		got[fld.Name()] = athena(fld)
	}
	want := map[string]string{}
	for _, c := range lake.Columns {
		want[c.Name] = c.Type
	}
	for _, c := range typed {
		want[c.Name()] = c.Type
	}
	if !equalMaps(got, want) {
		t.Fatalf("written schema %v, declared %v", got, want)
	}
}

// duckdbPython returns the Python that has the pinned DuckDB
// (.ci/servers.sh install puts it in .tools/bench-venv; servers.sh run
// names it in TRIBUTARY_DUCKDB_PYTHON).
func duckdbPython(t *testing.T) string {
	py := os.Getenv("TRIBUTARY_DUCKDB_PYTHON")
	if py == "" {
		if os.Getenv("TRIBUTARY_REQUIRE_INTEGRATION") != "" {
			t.Fatal("TRIBUTARY_DUCKDB_PYTHON is not set: run through .ci/servers.sh run")
		}
		t.Skip("no DuckDB: run through .ci/servers.sh run (make test-integration)")
	}
	return py
}

// TestCompactDuckDBIntegration: DuckDB, standing in for Athena's Parquet
// reader, reads the compacted archive in its directory form with hive
// partitioning and counts per entity and date exactly the items archived.
func TestCompactDuckDBIntegration(t *testing.T) {
	py := duckdbPython(t)
	ctx := context.Background()
	sim := simArchive(t, 11)
	dir := sim.Dir
	want := map[string]int{}
	a := open(dir, "archive")
	objs, _, err := a.Objects(ctx, archive.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		// DuckDB percent-decodes hive partition values (Athena's
		// projection does not: it reads the segment as written).
		ent, err := url.PathUnescape(o.EntitySegment)
		if err != nil {
			t.Fatal(err)
		}
		err = a.ReadObject(ctx, o, func(int, []byte) error { want[ent+"|"+o.Date]++; return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(dir.Root(), "archive", archive.CompactedDir, "*", "*", "*.parquet")
	script := `import duckdb, json, sys
rows = duckdb.sql("SELECT entity, CAST(date AS VARCHAR), count(*), count(DISTINCT sequence_number) FROM read_parquet(?, hive_partitioning=true, hive_types_autocast=false) GROUP BY ALL", params=[sys.argv[1]]).fetchall()
print(json.dumps(rows))`
	out, err := exec.CommandContext(ctx, py, "-c", script, glob).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var rows [][]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]int{}
	for _, r := range rows {
		if r[2] != r[3] {
			t.Errorf("%v: %v rows, %v distinct positions", r[:2], r[2], r[3])
		}
		got[fmt.Sprint(r[0], "|", r[1])] = int(r[2].(float64))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("DuckDB counts per entity and date:\n%v\nwant (the items archived):\n%v", got, want)
	}
	t.Logf("%d partitions, counts equal", len(got))
}

// BenchmarkCompact measures compaction over the simulation's archive, with
// reading it (archive cat's work) as the baseline in the same run, and
// reports per partition the objects and bytes before and after, and the
// bytes a one-column query (count by entity_type) reads: Parquet's column
// chunks and footer against every JSON-lines byte.
func BenchmarkCompact(b *testing.B) {
	ctx := context.Background()
	sim := archive.NewSimArchive(b, 1, 8000)
	var objs, inBytes int64
	src := sim.Dir
	_ = src.List(ctx, "archive/", func(o objstore.Object) error { objs++; inBytes += o.Size; return nil })
	parts := map[string]bool{}
	for _, k := range jsonObjects(&testing.T{}, src) {
		parts[filepath.Dir(k)] = true
	}
	b.Run("read-baseline", func(b *testing.B) {
		for b.Loop() {
			a := open(src, "archive")
			os, _, _ := a.Objects(ctx, archive.Filter{})
			for _, o := range os {
				_ = a.ReadObject(ctx, o, func(int, []byte) error { return nil })
			}
		}
		b.ReportMetric(float64(objs)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		b.ReportMetric(float64(inBytes)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
	})
	var last lake.Result
	b.Run("compact", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := objstore.NewDir(b.TempDir()).WithoutSync()
			_ = src.List(ctx, "archive/", func(o objstore.Object) error {
				body, err := objstore.ReadAll(ctx, src, o.Key)
				if err == nil {
					err = dir.Put(ctx, o.Key, body)
				}
				return err
			})
			b.StartTimer()
			res, err := lake.Compact(ctx, dir, lake.Options{Prefix: "archive", Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			last = res
			{
				b.StopTimer()
				var col, total int64
				_ = dir.List(ctx, "archive/"+archive.CompactedDir+"/", func(o objstore.Object) error {
					if !strings.HasSuffix(o.Key, archive.CompactedExt) {
						return nil
					}
					body, _ := objstore.ReadAll(ctx, dir, o.Key)
					f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
					if err != nil {
						return err
					}
					total += o.Size
					// What a reader of one column fetches: the footer (its
					// length, in the last 8 bytes) and the column's chunks.
					col += 8 + int64(binary.LittleEndian.Uint32(body[len(body)-8:]))
					for _, rg := range f.Metadata().RowGroups {
						for _, c := range rg.Columns {
							if len(c.MetaData.PathInSchema) == 1 && c.MetaData.PathInSchema[0] == "entity_type" {
								col += c.MetaData.TotalCompressedSize
							}
						}
					}
					return nil
				})
				b.ReportMetric(float64(col), "parquet-one-column-bytes")
				b.ReportMetric(float64(total), "parquet-bytes")
				b.StartTimer()
			}
		}
		b.ReportMetric(float64(last.Inputs)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		b.ReportMetric(float64(last.InputBytes)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(last.Inputs), "json-objects")
		b.ReportMetric(float64(last.InputBytes), "json-bytes")
		b.ReportMetric(float64(len(last.Written)), "parquet-objects")
		b.ReportMetric(float64(len(parts)), "partitions")
		b.ReportMetric(float64(last.Rows), "rows")
	})
}
