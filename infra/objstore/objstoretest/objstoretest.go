// Package objstoretest is the conformance suite every objstore.Store
// passes: the directory store, the S3 store on gofakes3 (in process) and the
// S3 store on moto (integration). What it checks is what the commands rely
// on: missing objects, atomic and listed writes, key order and prefixes,
// streaming writes that appear only on Commit, the key limits, the
// conditional writes of claims and checkpoints (exactly one of racing
// creates wins; a swap or a delete from a stale version fails), the
// objects' modification times, and Sweep. The tests of
// the stores' users share its helpers: OneWins for races, Faulty for
// objects that fail at their end or cannot be replaced.
package objstoretest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/internal/namehash"
)

// Run runs the suite on stores made by newStore, each call a fresh, empty
// store.
func Run(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	cases := []suiteCase{
		{"Missing", testMissing},
		{"PutListOpen", testPutListOpen},
		{"CreateCommitAbort", testCreateCommitAbort},
		{"LargeStreamedObject", testLargeStreamedObject},
		{"KeyLimits", testKeyLimits},
		{"PutIfAbsent", testPutIfAbsent},
		{"RacingCreatesOneWins", testRacingCreatesOneWins},
		{"Swap", testSwap},
		{"DeleteIf", testDeleteIf},
		{"Modified", testModified},
		{"SweepKeepsObjects", testSweepKeepsObjects},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.test(t, newStore(t))
		})
	}
}

type suiteCase struct {
	name string
	test func(t *testing.T, st objstore.Store)
}

// testMissing: missing objects: ErrNotFound to Open and Get, no error to Delete, nothing listed.
func testMissing(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	if _, err := st.Open(ctx, "no/such.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Open of a missing object: %v, want ErrNotFound", err)
	}
	if _, _, err := st.Get(ctx, "no/such.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Get of a missing object: %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, "no/such.json"); err != nil {
		t.Errorf("Delete of a missing object: %v", err)
	}
	if err := st.List(ctx, "", func(o objstore.Object) error { return fmt.Errorf("listed %s", o.Key) }); err != nil {
		t.Errorf("List of an empty store: %v", err)
	}
}

// testPutListOpen: written objects are listed in key order with their sizes, by byte prefixes, read back whole, replaced by a second Put and removed by Delete.
func testPutListOpen(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	objs := map[string]string{
		"entity=Order/part-a-0000.json.gz":       "order a",
		"entity=Order/_manifest.json":            "{}",
		"entity=Order%2FArchived%3A2026/x.json":  "escaped",
		"entity=Orders/part-b-0000.json.gz":      "not an Order",
		"entity=Comment/part-a-0000.json.gz":     "",
		"AWSDynamoDB/01/data/ü ß/z.json.gz":      "unicode and a space",
		"_summary.json":                          "last",
		"deep/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o.txt": strings.Repeat("x", 1000),
	}
	for k, v := range objs {
		if err := st.Put(ctx, k, []byte(v)); err != nil {
			t.Fatalf("Put %s: %v", k, err)
		}
	}
	var keys []string
	err := st.List(ctx, "", func(o objstore.Object) error {
		keys = append(keys, o.Key)
		if o.Size != int64(len(objs[o.Key])) {
			t.Errorf("%s listed with %d bytes, want %d", o.Key, o.Size, len(objs[o.Key]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(objs) {
		t.Fatalf("listed %d objects, want %d: %q", len(keys), len(objs), keys)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("listed out of key order: %q before %q", keys[i-1], keys[i])
		}
	}
	for k, v := range objs {
		b, err := objstore.ReadAll(ctx, st, k)
		if err != nil || string(b) != v {
			t.Errorf("Open %s: %q, %v; want %q", k, b, err, v)
		}
		g, ver, err := st.Get(ctx, k)
		if err != nil || string(g) != v || ver == "" {
			t.Errorf("Get %s: %q, version %q, %v", k, g, ver, err)
		}
	}
	// A prefix that is not a segment boundary selects by bytes.
	for prefix, want := range map[string]int{"entity=Order/": 2, "entity=Order": 4, "entity=Or": 4, "entity=Comment/part-": 1, "deep/a/b/c/": 1, "nothing/": 0} {
		n := 0
		if err := st.List(ctx, prefix, func(o objstore.Object) error {
			if !strings.HasPrefix(o.Key, prefix) {
				t.Errorf("List(%q) gave %s", prefix, o.Key)
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("List(%q): %d objects, want %d", prefix, n, want)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := st.List(ctx, "", func(objstore.Object) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("List stopped by fn: %v after %d calls, want fn's error after 1", err, n)
	}
	// Put replaces; Delete removes.
	if err := st.Put(ctx, "_summary.json", []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if b, _ := objstore.ReadAll(ctx, st, "_summary.json"); string(b) != "replaced" {
		t.Errorf("after a second Put: %q", b)
	}
	if err := st.Delete(ctx, "_summary.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open(ctx, "_summary.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Open after Delete: %v", err)
	}
}

// testCreateCommitAbort: a streamed object appears only on Commit, once; an aborted one never.
func testCreateCommitAbort(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	w, err := st.Create(ctx, "entity=A/part-0.json")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Open(ctx, "entity=A/part-0.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("an uncommitted object can be opened: %v", err)
	}
	if n := count(t, st, ""); n != 0 {
		t.Errorf("%d objects listed before Commit", n)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w.Abort() // a no-op after Commit
	if b, err := objstore.ReadAll(ctx, st, "entity=A/part-0.json"); err != nil || string(b) != "line\nline\nline\n" {
		t.Errorf("committed object: %q, %v", b, err)
	}
	if err := w.Commit(ctx); err == nil {
		t.Error("a second Commit succeeded")
	}
	a, err := st.Create(ctx, "entity=A/part-1.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("dropped")); err != nil {
		t.Fatal(err)
	}
	a.Abort()
	a.Abort()
	if _, err := st.Open(ctx, "entity=A/part-1.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("an aborted object can be opened: %v", err)
	}
	if n := count(t, st, ""); n != 1 {
		t.Errorf("%d objects listed, want the committed one", n)
	}
}

// testLargeStreamedObject: an object larger than an S3 store's part size, streamed or put, reads back whole.
func testLargeStreamedObject(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	// Larger than an S3 store's default part size: a multipart upload.
	big := make([]byte, 9<<20+123)
	rand.Read(big)
	w, err := st.Create(ctx, "big/object.bin")
	if err != nil {
		t.Fatal(err)
	}
	for b := big; len(b) > 0; {
		n := min(len(b), 1<<20)
		if _, err := w.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := objstore.ReadAll(ctx, st, "big/object.bin")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(big))
	}
	if err := st.Put(ctx, "big/put.bin", big); err != nil {
		t.Fatal(err)
	}
	if got, _ := objstore.ReadAll(ctx, st, "big/put.bin"); !bytes.Equal(got, big) {
		t.Errorf("Put of %d bytes read back as %d", len(big), len(got))
	}
}

// testKeyLimits: keys that are not clean relative paths, or are too long, are refused by every write; the longest segment is not.
func testKeyLimits(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	for _, bad := range []string{"", "/a", "a/", "a//b", "a/./b", "a/../b", `a\b`, "a\x00b", strings.Repeat("s", objstore.MaxSegmentBytes+1), "a/" + strings.Repeat("s", objstore.MaxSegmentBytes+1) + "/b", strings.Repeat("abcdefg/", objstore.MaxKeyBytes/8) + "x"} {
		if err := st.Put(ctx, bad, []byte("x")); err == nil {
			t.Errorf("Put accepted the key %.40q… (%d bytes)", bad, len(bad))
		}
		if w, err := st.Create(ctx, bad); err == nil {
			w.Abort()
			t.Errorf("Create accepted the key %.40q… (%d bytes)", bad, len(bad))
		}
		if _, err := st.PutIfAbsent(ctx, bad, []byte("x")); err == nil || errors.Is(err, objstore.ErrPreconditionFailed) {
			t.Errorf("PutIfAbsent of the key %.40q…: %v, want an invalid-key error", bad, err)
		}
	}
	longest := strings.Repeat("s", objstore.MaxSegmentBytes)
	if err := st.Put(ctx, "d/"+longest, []byte("x")); err != nil {
		t.Errorf("Put of a %d-byte segment: %v", len(longest), err)
	}
	if n := count(t, st, ""); n != 1 {
		t.Errorf("%d objects after the refused keys, want 1", n)
	}
}

// testPutIfAbsent: a create of an existing key fails and leaves the object as it was.
func testPutIfAbsent(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	v1, err := st.PutIfAbsent(ctx, "_run.json", []byte(`{"first":true}`))
	if err != nil || v1 == "" {
		t.Fatalf("PutIfAbsent of a new key: %q, %v", v1, err)
	}
	if _, err := st.PutIfAbsent(ctx, "_run.json", []byte(`{"second":true}`)); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("PutIfAbsent of an existing key: %v, want ErrPreconditionFailed", err)
	}
	b, v, err := st.Get(ctx, "_run.json")
	if err != nil || string(b) != `{"first":true}` || v != v1 {
		t.Errorf("after the refused create: %q version %q (created %q), %v", b, v, v1, err)
	}
	if n := count(t, st, ""); n != 1 {
		t.Errorf("%d objects listed, want 1", n)
	}
}

// testRacingCreatesOneWins: of racing creates of one key exactly one wins, and its object is the one kept.
func testRacingCreatesOneWins(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	won := OneWins(t, 8, objstore.ErrPreconditionFailed, func(i int) error {
		_, err := st.PutIfAbsent(ctx, "claims/_run.json", []byte(fmt.Sprintf(`{"run":%d}`, i)))
		return err
	})
	if b, _ := objstore.ReadAll(ctx, st, "claims/_run.json"); string(b) != fmt.Sprintf(`{"run":%d}`, won) {
		t.Errorf("the object holds %s, written by a run that lost", b)
	}
}

// testSwap: a swap succeeds from the current version only, never creates, and of two swaps from one version one wins.
func testSwap(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	v1, err := st.PutIfAbsent(ctx, "cp/job.json", []byte("rev 1"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := st.Swap(ctx, "cp/job.json", []byte("rev 2"), v1)
	if err != nil || v2 == "" || v2 == v1 {
		t.Fatalf("Swap from the current version: %q (was %q), %v", v2, v1, err)
	}
	if _, err := st.Swap(ctx, "cp/job.json", []byte("stale"), v1); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("Swap from a stale version: %v, want ErrPreconditionFailed", err)
	}
	if b, v, _ := st.Get(ctx, "cp/job.json"); string(b) != "rev 2" || v != v2 {
		t.Errorf("after the stale swap: %q version %q, want rev 2 version %q", b, v, v2)
	}
	if _, err := st.Swap(ctx, "cp/missing.json", []byte("x"), v2); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("Swap of a missing object: %v, want ErrPreconditionFailed", err)
	}
	if _, err := st.Open(ctx, "cp/missing.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("the refused swap created the object: %v", err)
	}
	// Of two swaps from one version, one wins.
	OneWins(t, 2, objstore.ErrPreconditionFailed, func(i int) error {
		_, err := st.Swap(ctx, "cp/job.json", []byte(fmt.Sprintf("rev 3 by %d", i)), v2)
		return err
	})
}

// testDeleteIf: a conditional delete removes the current version only, and fails on a missing object.
func testDeleteIf(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	if err := st.Put(ctx, "in/a.jsonl.gz", []byte("rev 1")); err != nil {
		t.Fatal(err)
	}
	_, v1, err := st.Get(ctx, "in/a.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "in/a.jsonl.gz", []byte("rev 2, rewritten")); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteIf(ctx, "in/a.jsonl.gz", v1); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("DeleteIf of a stale version: %v, want ErrPreconditionFailed", err)
	}
	b, v2, err := st.Get(ctx, "in/a.jsonl.gz")
	if err != nil || string(b) != "rev 2, rewritten" {
		t.Fatalf("the refused delete removed the rewrite: %q, %v", b, err)
	}
	if err := st.DeleteIf(ctx, "in/a.jsonl.gz", v2); err != nil {
		t.Fatalf("DeleteIf of the current version: %v", err)
	}
	if _, err := st.Open(ctx, "in/a.jsonl.gz"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("after DeleteIf: %v, want ErrNotFound", err)
	}
	if err := st.DeleteIf(ctx, "in/a.jsonl.gz", v2); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("DeleteIf of a missing object: %v, want ErrPreconditionFailed", err)
	}
	if err := st.DeleteIf(ctx, "no/dir/at/all.json", v2); !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("DeleteIf of a missing object (no directory): %v, want ErrPreconditionFailed", err)
	}
}

// testModified: List's Modified is when the object was last written, to the second.
func testModified(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	// List's Modified is when the object was last written, to S3's
	// second: compaction takes objects by it.
	modified := func() time.Time {
		t.Helper()
		var m time.Time
		n := 0
		if err := st.List(ctx, "m/", func(o objstore.Object) error { m = o.Modified; n++; return nil }); err != nil || n != 1 {
			t.Fatalf("List: %d objects, %v", n, err)
		}
		return m
	}
	before := time.Now().Truncate(time.Second)
	if err := st.Put(ctx, "m/x.json", []byte("1")); err != nil {
		t.Fatal(err)
	}
	m1 := modified()
	if after := time.Now().Add(time.Second); m1.Before(before.Add(-time.Second)) || m1.After(after) {
		t.Fatalf("Modified %s, written between %s and %s", m1, before, after)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := st.Put(ctx, "m/x.json", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if m2 := modified(); !m2.After(m1) {
		t.Errorf("Modified %s after a rewrite 1.1 s later, first written %s", m2, m1)
	}
}

// testSweepKeepsObjects: Sweep leaves committed objects alone.
func testSweepKeepsObjects(t *testing.T, st objstore.Store) {
	ctx := context.Background()
	if err := st.Put(ctx, "out/entity=A/part-0.json", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sweep(ctx, "out/"); err != nil {
		t.Fatal(err)
	}
	if b, err := objstore.ReadAll(ctx, st, "out/entity=A/part-0.json"); err != nil || string(b) != "kept" {
		t.Errorf("Sweep removed an object: %q, %v", b, err)
	}
	if _, err := st.Sweep(ctx, "nothing-here/"); err != nil {
		t.Errorf("Sweep of an empty prefix: %v", err)
	}
}

func count(t *testing.T, st objstore.Store, prefix string) int {
	t.Helper()
	n := 0
	if err := st.List(context.Background(), prefix, func(objstore.Object) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// OneWins runs try(0) … try(n-1) at once and checks that exactly one
// succeeds and that the others fail with an error matching lose; it
// returns the winner. It is the race of two runs for one place, which the
// stores' conditional writes, claims and checkpoints must decide.
func OneWins(t *testing.T, n int, lose error, try func(i int) error) int {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = try(i)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("tries %d and %d both succeeded", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, lose):
			t.Errorf("try %d: %v, want success or an error matching %v", i, err, lose)
		}
	}
	if won < 0 {
		t.Fatalf("none of %d tries succeeded", n)
	}
	return won
}

// SetNameHash makes objstore.FitName hash with h instead of SHA-256 until
// the returned function is called or the test ends, for tests of what the
// writers do when two names shorten to one, which no one can arrange with
// SHA-256. Tests that call it must not run in parallel with others that
// build names.
func SetNameHash(t testing.TB, h func(name string) [sha256.Size]byte) (restore func()) {
	t.Helper()
	restore = sync.OnceFunc(namehash.Set(h))
	t.Cleanup(restore)
	return restore
}
