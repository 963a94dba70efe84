package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

var update = flag.Bool("update", false, "rewrite golden files")

// readEvent returns testdata/event.json: ten records, seven of them TTL
// removals across four entity segments and two dates, plus an insert, a
// user's delete and an update, which are not archived.
func readEvent(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "event.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dumpArchive renders every object under a directory: its key, then its
// decompressed lines.
func dumpArchive(t testing.TB, root string) []byte {
	t.Helper()
	ctx := context.Background()
	a := Open(objstore.NewDir(root), "")
	var out bytes.Buffer
	err := objstore.NewDir(root).List(ctx, "", func(o objstore.Object) error {
		out.WriteString("== " + o.Key + "\n")
		return a.ReadLines(ctx, o.Key, func(_ int, line []byte) error {
			out.Write(line)
			out.WriteByte('\n')
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestGoldenLayout pins the object layout and the line format: the keys
// (entity and date partitions, names from the first record of each group)
// and every line, through the real Lambda event decoding path. Processing
// the event again must give the same bytes (a redelivery overwrites).
func TestGoldenLayout(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	h := New(objstore.NewDir(root), Options{Prefix: "ttl-archive/app", Logger: quiet})
	proc := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet})
	event := readEvent(t)
	out, err := proc.Invoke(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("response %s", out)
	}
	first := dumpArchive(t, root)
	checkGolden(t, "layout.golden", first)

	if st := h.Stats(); st.Archived != 7 || st.Ignored != 3 || st.Objects != 5 || st.FailedPuts != 0 {
		t.Errorf("stats %+v, want 7 archived, 3 ignored, 5 objects", st)
	}

	if _, err := proc.Invoke(ctx, event); err != nil {
		t.Fatal(err)
	}
	if again := dumpArchive(t, root); !bytes.Equal(again, first) {
		t.Errorf("redelivery changed the archive:\n%s", again)
	}
}

// failingPutter fails the writes of keys containing any of the substrings.
type failingPutter struct {
	inner Putter
	fail  []string
}

func (f failingPutter) Put(ctx context.Context, key string, body []byte) error {
	for _, s := range f.fail {
		if strings.Contains(key, s) {
			return errors.New("injected failure of " + key)
		}
	}
	return f.inner.Put(ctx, key, body)
}

func response(t *testing.T, out []byte) []string {
	t.Helper()
	var r struct {
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// TestFailureReportsFirstRecord: when one object of the batch fails (here
// the group whose first record is the batch's seventh), the batch's first
// record is reported, although the other objects were written.
func TestFailureReportsFirstRecord(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	h := New(failingPutter{store, []string{"entity=CartItem"}}, Options{Logger: quiet})
	proc := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet})
	out, err := proc.Invoke(ctx, readEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := response(t, out); len(got) != 1 || got[0] != "4421584500000000017450439091" {
		t.Fatalf("reported %v, want the batch's first record", got)
	}
	if n := len(store.objects(t)); n != 4 {
		t.Errorf("%d objects written, want the 4 that did not fail", n)
	}
	if st := h.Stats(); st.FailedPuts != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestNoOldImageIsCut: a TTL removal without an old image (a stream that is
// not NEW_AND_OLD_IMAGES) cannot be archived. The records before it are
// archived as a batch of their own and it is reported as a permanent
// failure; nothing from after it is written.
func TestNoOldImageIsCut(t *testing.T) {
	ctx := context.Background()
	event := readEvent(t)
	// Strip the old image of the fifth record (seq ...095).
	var ev struct{ Records []map[string]json.RawMessage }
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(ev.Records[4]["dynamodb"], &d); err != nil {
		t.Fatal(err)
	}
	delete(d, "OldImage")
	ev.Records[4]["dynamodb"], _ = json.Marshal(d)
	event, _ = json.Marshal(ev)

	store := newTestStore(t)
	h := New(store, Options{Logger: quiet})
	proc := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet})
	res, err := proc.Process(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report != "4421584500000000017450439095" || len(res.Failed) != 1 || !errors.Is(res.Failed[0].Err, pipeline.ErrPermanent) {
		t.Fatalf("result %+v, want a permanent failure of seq ...095", res)
	}
	var keys []string
	for k := range store.objects(t) {
		keys = append(keys, k)
	}
	if len(keys) != 2 {
		t.Errorf("objects %v, want the two groups of records before the cut", keys)
	}
	for _, k := range keys {
		if !strings.HasSuffix(k, "4421584500000000017450439091.jsonl.gz") && !strings.HasSuffix(k, "4421584500000000017450439093.jsonl.gz") {
			t.Errorf("unexpected object %s", k)
		}
	}
}

// TestRefusesStreamsWithoutOldImages: the archiver archives old images, so
// it refuses a stream whose view type has none (KEYS_ONLY, NEW_IMAGE) at
// its first record, archiving nothing, and takes the two that have them.
func TestRefusesStreamsWithoutOldImages(t *testing.T) {
	ctx := context.Background()
	for view, ok := range map[string]bool{"keys-only": false, "new-image": false, "old-image": true, "new-and-old-images": true} {
		t.Run(view, func(t *testing.T) {
			event, err := os.ReadFile(filepath.Join("..", "..", "..", "pipeline", "testdata", "streams", "view-"+view+".json"))
			if err != nil {
				t.Fatal(err)
			}
			ttl := bytes.Replace(event, []byte(`"eventName": "REMOVE",`), []byte(`"eventName": "REMOVE", "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},`), 1)
			store := newTestStore(t)
			h := New(store, Options{Logger: quiet})
			_, err = pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet}).Process(ctx, ttl)
			var ve *pipeline.ViewError
			n := len(store.objects(t))
			switch {
			case ok && (err != nil || n != 1):
				t.Fatalf("%d objects, %v; want the TTL removal archived", n, err)
			case !ok && (!errors.As(err, &ve) || !strings.Contains(err.Error(), "OLD_IMAGE or NEW_AND_OLD_IMAGES is needed (the archiver archives the old image of each TTL removal)") || n != 0):
				t.Fatalf("%d objects, %v; want the stream refused", n, err)
			}
		})
	}
}

// TestIgnoresNonTTL: inserts, updates and users' deletes are counted and
// never archived, even with no filter in front of the function.
func TestIgnoresNonTTL(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	var metrics bytes.Buffer
	h := New(store, Options{Logger: quiet, Metrics: &metrics, Function: "archiver-test"})
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(readEvent(t), &ev); err != nil {
		t.Fatal(err)
	}
	// Only the insert, the user's delete and the update.
	only := []json.RawMessage{ev.Records[1], ev.Records[3], ev.Records[8]}
	event, _ := json.Marshal(map[string]any{"Records": only})
	out, err := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet}).Invoke(ctx, event)
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	if len(store.objects(t)) != 0 {
		t.Errorf("archived %d objects from non-TTL records", len(store.objects(t)))
	}
	if st := h.Stats(); st.Ignored != 3 || st.Archived != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, want := range []string{`"Function":"archiver-test"`, `"IgnoredRecords":3`, `"ArchivedItems":0`} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics.String())
		}
	}
}

// TestConcurrentWritesBounded: objects are written at most Concurrency at a
// time.
func TestConcurrentWritesBounded(t *testing.T) {
	ctx := context.Background()
	w := genWorkload(workloadConfig{seed: 7, shards: 1, records: 2000, startItems: 500, meanGap: 2e9})
	ttl := w.ttlRecords()
	cp := newCountingPutter(newTestStore(t), 3)
	h := New(cp, Options{Logger: quiet, Concurrency: 3})
	if _, err := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: quiet}).Invoke(ctx, eventJSON(ttl)); err != nil {
		t.Fatal(err)
	}
	if cp.max.Load() > 3 || cp.max.Load() < 2 {
		t.Errorf("at most %d writes at once, want 2..3", cp.max.Load())
	}
}
