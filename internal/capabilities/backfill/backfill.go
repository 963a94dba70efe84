// Package backfill builds a projection set's aggregates from a DynamoDB
// export — the table as it was at the export's time — so that the table's
// stream need only carry what came after: a table is older than its stream
// (DynamoDB Streams keep 24 hours, a Kinesis stream at most 365 days).
//
// Every item of the export goes through the engine like a change of its
// own, ordered by the export's point in time and the item's version
// (engine.Token): an item's state that the store holds already, newer
// than the export's (a shadow projector filling the store from the stream
// meanwhile), is kept, and a stream change older than the export's state
// is skipped. So a backfill may run into an empty store or one the stream
// is filling, and the stream's changes from before the export's time to
// the present (retried, redelivered, the Kinesis form's duplicates and
// reordering) apply exactly once through every path: the aggregates end as
// a recomputation from the table's final items gives them.
//
// The work is one job per export, split by data file: each file's items
// are streamed in batches through the engine (memory stays flat whatever
// the table's size), with the additions to aggregates that many items
// touch deferred to the file's partial and folded when the file is done
// (engine.Partial), so that thousands of files in parallel do not
// write one hot aggregate thousands of times. A file whose partial is
// folded is done; a file that stopped half-way (a crash, a killed
// process, a retried Lambda invocation) is redone, its applied items
// skipped by their ledger entries. The store records the job in a marker
// (Marker): the export, its point in time and, once every file is done,
// that it is complete; replay refuses a window that starts after it.
// docs/backfill.md has the guarantee, what it rests on, and the road.
package backfill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// MarkerKey is the ledger key of a store's backfill marker.
const MarkerKey = "#tributary/backfill"

// OverlayFile names the pseudo data file of a job that holds the items of
// its incremental exports (the overlay): what they created or changed
// after the full export.
const OverlayFile = "(incremental exports)"

// Marker is what a store records of the backfill that built it.
type Marker struct {
	// Export is the full export's ARN (or its location, without a
	// manifest), and Incrementals the incremental exports applied on top.
	Export       string   `json:"export"`
	Incrementals []string `json:"incrementals,omitempty"`
	// TableARN and TableID are the table the export is of, as its
	// manifest-summary.json names it (empty without a manifest; a marker
	// of an earlier release has neither, and its Export ARN names the
	// table).
	TableARN string `json:"tableArn,omitempty"`
	TableID  string `json:"tableId,omitempty"`
	// KeyAttributes are the attributes the job keys the export's items
	// by: its item ledger entries' keys are theirs.
	KeyAttributes []string `json:"keyAttributes,omitempty"`
	// Job identifies the job: the export's content and the projection set.
	Job string `json:"job"`
	// AsOf is the point in time the backfill's items are as of: the full
	// export's time, or the end of the last incremental export. The
	// stream must be applied from this time's second on.
	AsOf time.Time `json:"asOf"`
	// Files is the number of the job's data files (the overlay's counted).
	Files int `json:"files"`
	// Started and Completed are when the job began and when its last file
	// was folded (zero until then).
	Started   time.Time `json:"started"`
	Completed time.Time `json:"completed,omitzero"`
	// CaughtUp is when a replay of the stream from at or before AsOf's
	// second completed into the store (zero until one did): replays from
	// later are then harmless.
	CaughtUp time.Time `json:"caughtUp,omitzero"`
	// Failed counts the export's items the projections could not take,
	// in every data file (FailedItemsError).
	Failed int64 `json:"failed,omitempty"`
	// Mixed lists the data files some of whose items a run applied from
	// an object that is not the exported one: the store holds them under
	// the export's tokens, and no run of the job can tell them from the
	// export's own. Only a backfill into a new store can be trusted.
	Mixed []MixedFile `json:"mixed,omitempty"`
}

// MixedFile is a data file some of whose items a run applied from an
// object that is not the exported one (Marker.Mixed, Job.Mixed), and how
// the object differs.
type MixedFile struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// FailedItemsError is a finished job some of whose export items the
// projections could not take: they are in no aggregate or row, and the
// gate (verify) cannot agree while the export holds them. Each is applied
// when its item next changes on the stream; otherwise, fix the
// projections and backfill a new table. Finish returns it every time it is
// called on such a job, from what the store records.
type FailedItemsError struct {
	Job      string
	Items    int64
	Files    int
	Examples []string // the first failures of the first such files
}

func (e *FailedItemsError) Error() string {
	ex := ""
	if len(e.Examples) > 0 {
		ex = " (e.g. " + e.Examples[0] + ")"
	}
	return fmt.Sprintf("backfill %s: %d items in %d data files could not be projected%s: they are in no aggregate; each is applied when its item next changes on the stream, or fix the projections and backfill a new table", e.Job, e.Items, e.Files, ex)
}

// fileFailures is what the store records of a data file's items the
// projections could not take (failedKey).
type fileFailures struct {
	Failed   int64    `json:"failed"`
	Examples []string `json:"examples,omitempty"`
}

// maxExamples is how many failures of a file its record keeps.
const maxExamples = 5

// WindowGap says whether a replay into a store with marker m, from the
// given start time (zero: the stream's trim horizon), leaves out changes
// the backfill's export does not hold either: a start after the second of
// the export's time, while nothing has caught the store up from the
// stream yet; or a stream that keeps too little (retention, counted back
// from now) to reach back to the export's time. The error says what to do;
// nil when there is no gap (or no marker).
func WindowGap(m *Marker, start time.Time, retention time.Duration, now time.Time) error {
	if m == nil {
		return nil
	}
	from := m.AsOf.Truncate(time.Second)
	if !start.IsZero() && start.After(from) {
		if !m.CaughtUp.IsZero() {
			return nil
		}
		return fmt.Errorf("the store was backfilled as of %s, and nothing has caught it up from the stream since: a replay from %s would leave out the changes in between. Start at %s (--start %s), or, if a projector has applied the stream to it since before then, say so with --caught-up",
			m.AsOf.Format(time.RFC3339Nano), start.UTC().Format(time.RFC3339), from.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if horizon := now.Add(-retention); retention > 0 && from.Before(horizon) {
		return fmt.Errorf("the store was backfilled as of %s, but the stream keeps only %s (from about %s): the changes in between are gone. Take a new export (the stream keeps everything after it), backfill it into a new store, and replay from its time",
			m.AsOf.Format(time.RFC3339Nano), retention, horizon.UTC().Format(time.RFC3339))
	}
	return nil
}

// MarkCaughtUp records in st's marker that the stream has been applied
// from at or before the backfill's time (a replay that began there
// completed).
func MarkCaughtUp(ctx context.Context, st driver.Store, now time.Time) error {
	for range 3 {
		m, rev, err := ReadMarker(ctx, st)
		if err != nil || m == nil || !m.CaughtUp.IsZero() {
			return err
		}
		m.CaughtUp = now.UTC()
		body, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding the backfill marker: %w", err)
		}
		err = st.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: MarkerKey, ExpectRev: rev, Body: body}}})
		if errors.As(err, new(*driver.ConflictError)) {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing the backfill marker: %w", err)
		}
		return nil
	}
	return errors.New("backfill: the store's backfill marker kept changing")
}

// ReadMarker returns the store's backfill marker, or nil when no backfill
// wrote to it.
func ReadMarker(ctx context.Context, st driver.Store) (*Marker, int64, error) {
	got, err := st.ReadLedgers(ctx, []string{MarkerKey})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the backfill marker: %w", err)
	}
	e := got[MarkerKey]
	if e.Rev == 0 {
		return nil, 0, nil
	}
	var m Marker
	if err := json.Unmarshal(e.Body, &m); err != nil {
		return nil, 0, fmt.Errorf("the backfill marker is corrupt: %w", err)
	}
	return &m, e.Rev, nil
}

// Options configures a job. The zero value is ready to use.
type Options struct {
	// Decode names the items' attributes (the table's schema).
	Decode pipeline.Options
	// BatchSize is how many items go through the engine at once. Default
	// 1,000.
	BatchSize int
	// SkipMD5 skips checking data files against the manifest's checksums.
	SkipMD5 bool
	// AsOf, when set, is the export's point in time, for an export whose
	// manifest does not say it (one read without a manifest).
	AsOf time.Time
	// Progress, when set, is called now and then, from several goroutines,
	// with the items read since its last call.
	Progress func(items int64)
	// MaxFailures bounds the items a job lists as failed (it counts them
	// all). Default 100.
	MaxFailures int
	// Handoff, when set, is the stream a replay catches the store up from
	// after the job: Run refuses (a *HandoffError) a job that would finish
	// after the stream has trimmed the export's second, unless a projector
	// was attached to the store before the export.
	Handoff *Handoff
}

// Failure is an export item the projections could not take: a record the
// projector would have failed as permanent. Its ledger entry is not
// written, so that the stream's later changes apply to it as to a new item.
type Failure struct {
	File string
	Line int
	Keys string
	Err  error
}

func (f Failure) Error() string {
	return fmt.Sprintf("%s line %d (item %s): %v", f.File, f.Line, f.Keys, f.Err)
}

// FileResult is what backfilling one data file did.
type FileResult struct {
	File  string
	Items int64 // items read (the overlay's: its items that exist)
	// Done is true when the file had been backfilled before (its partial
	// folded): nothing was read.
	Done bool
	// Failed counts the items the projections could not take, Failures
	// lists the first of them.
	Failed   int64
	Failures []Failure
}

// Summary is a job's totals.
type Summary struct {
	Files, FilesDone int
	Items            int64
	Failed           int64
	Failures         []Failure // the first MaxFailures
	Stats            engine.Stats
	Complete         bool
}

// Job is one export's backfill into one store.
type Job struct {
	full    *export.Export
	overlay *export.Overlay
	engine  *engine.Engine
	store   driver.Store
	opts    Options
	id      string
	asOf    time.Time
	marker  Marker
	files   []string // data file keys as manifest-files.json names them, sorted; OverlayFile last
	byKey   map[string]export.DataFile
	index   map[string]int // each file's place in files

	mu       sync.Mutex
	failures []Failure
	failed   atomic.Int64
	read     atomic.Int64 // items read, for the hand-off's estimate
}

// Open prepares the backfill of full (with the incremental exports of
// overlay on top, or nil) through engine, an engine of the store's set
// (engine.Open), writing to store. The export's point in time must be
// known (its manifest's exportTime, or Options.AsOf).
func Open(full *export.Export, overlay *export.Overlay, eng *engine.Engine, store driver.Store, set *projections.Set, opts Options) (*Job, error) {
	if full.Summary.Incremental() {
		return nil, fmt.Errorf("backfill: %s is an incremental export; give the full export, and this one as an incremental", full)
	}
	if overlay == nil {
		overlay = &export.Overlay{}
	}
	if given := opts.Decode.Schema.KeyAttributes; len(given) > 0 && len(overlay.KeyAttributes) > 0 && !sameNames(given, overlay.KeyAttributes) {
		return nil, fmt.Errorf("backfill: the incremental exports key the table's items by %s (their lines' Keys), but the key attributes given are %s (--key-attributes, KEY_ATTRIBUTES, or the environment's): give the table's own",
			strings.Join(overlay.KeyAttributes, ","), strings.Join(given, ","))
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = 100
	}
	asOf := full.Time()
	if !opts.AsOf.IsZero() {
		if !asOf.IsZero() && !asOf.Equal(opts.AsOf) {
			return nil, fmt.Errorf("backfill: %s says its time is %s, not %s", full, asOf.Format(time.RFC3339Nano), opts.AsOf.Format(time.RFC3339Nano))
		}
		asOf = opts.AsOf
	}
	if asOf.IsZero() {
		return nil, fmt.Errorf("backfill: %s does not say its point in time (no manifest-summary.json exportTime): give it (--export-time)", full)
	}
	what := "exportTime"
	if !opts.AsOf.IsZero() {
		what = "the time given for it (--export-time)"
	}
	if err := export.CheckTime(full, what, asOf, time.Now()); err != nil {
		return nil, fmt.Errorf("backfill: %w", err)
	}
	m := Marker{Export: full.Summary.ExportARN, TableARN: full.Summary.TableARN, TableID: full.Summary.TableID}
	if m.Export == "" {
		m.Export = full.String()
	}
	if m.TableARN == "" {
		m.TableARN = tableOfExport(full.Summary.ExportARN)
	}
	for _, e := range overlay.Exports {
		t := e.Time()
		if t.IsZero() {
			return nil, fmt.Errorf("backfill: the incremental export %s does not say its exportToTime", e)
		}
		if t.After(asOf) {
			asOf = t
		}
		name := e.Summary.ExportARN
		if name == "" {
			name = e.String()
		}
		m.Incrementals = append(m.Incrementals, name)
	}
	// The job is the export, the set and how items are read: a run that
	// read them by another attribute (a wrong type attribute projects
	// nothing) is another job, not one a rerun passes over as done.
	schema := opts.Decode.Schema.WithDefaults()
	h := sha256.New()
	fmt.Fprintf(h, "backfill 1\n%s\n%s\n%s\n%q %q %q\n", full.ManifestSHA256, overlay.Fingerprint(), set.String(),
		schema.TypeAttribute, schema.VersionAttribute, schema.KeyAttributes)
	if full.ManifestSHA256 == "" {
		fmt.Fprintf(h, "%s\n", full.String())
	}
	j := &Job{
		full: full, overlay: overlay, engine: eng, store: store, opts: opts,
		id: hex.EncodeToString(h.Sum(nil))[:16], asOf: asOf.UTC(), byKey: map[string]export.DataFile{},
	}
	for _, f := range full.Files {
		j.files = append(j.files, f.DataFileS3Key)
		j.byKey[f.DataFileS3Key] = f
	}
	sort.Strings(j.files)
	if overlay.Len() > 0 {
		j.files = append(j.files, OverlayFile)
	}
	j.index = make(map[string]int, len(j.files))
	for i, f := range j.files {
		j.index[f] = i
	}
	m.Job, m.AsOf, m.Files, m.KeyAttributes = j.id, j.asOf, len(j.files), j.keyAttributes()
	j.marker = m
	return j, nil
}

// sameNames reports whether a and b hold the same names, in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// ID identifies the job: its export's content, its overlay's and the
// projection set.
func (j *Job) ID() string { return j.id }

// AsOf is the point in time the job's items are as of.
func (j *Job) AsOf() time.Time { return j.asOf }

// Files returns the job's data files (the keys manifest-files.json gives),
// sorted, then OverlayFile when there are incremental exports.
func (j *Job) Files() []string { return append([]string(nil), j.files...) }

// Begin records the job in the store's marker, unless the marker records
// it already. A marker of another job is replaced: the store is being
// backfilled from another export. It refuses a store the export cannot be
// laid over: one where an earlier job applied items of a data file read
// from another object (Marker.Mixed); one another table's export was
// backfilled into (checkTable);
// one whose projection-set marker was written after the export's time (a
// shadow that started filling it from the stream after that time has
// missed the changes in between, which the export does not hold either),
// or one an older export's backfill built that nothing has kept current
// from the stream since (checkCoverage); one whose item ledger entries
// are keyed by other attributes than the job's (checkKeys).
func (j *Job) Begin(ctx context.Context) error {
	cur, _, err := ReadMarker(ctx, j.store)
	if err != nil {
		return err
	}
	if cur == nil || cur.Job != j.id {
		if cur != nil && len(cur.Mixed) > 0 {
			return refuse(fmt.Errorf("backfill: the store holds items of %s that job %s read from an object that is not the exported one (%s), under that export's tokens: no backfill can tell them from an export's own, and another export laid over them would keep those it does not change. Backfill into a new, empty store",
				cur.Mixed[0].File, cur.Job, cur.Mixed[0].Error))
		}
		if err := j.checkTable(cur); err != nil {
			return err
		}
		if err := j.checkCoverage(ctx, cur); err != nil {
			return err
		}
	}
	if err := j.checkKeys(ctx); err != nil {
		return err
	}
	for range 3 {
		cur, rev, err := ReadMarker(ctx, j.store)
		if err != nil {
			return err
		}
		if cur != nil && cur.Job == j.id {
			j.marker = *cur
			return nil
		}
		m := j.marker
		m.Started = time.Now().UTC()
		m.Completed = time.Time{}
		if err := j.writeMarker(ctx, m, rev); err != nil {
			if errors.As(err, new(*driver.ConflictError)) {
				continue
			}
			return err
		}
		j.marker = m
		return nil
	}
	return errors.New("backfill: the store's backfill marker kept changing")
}

// checkCoverage refuses a store the export cannot be laid over without
// losing changes (an empty one excepted: nothing in it can be stale):
//
//   - one that holds state from after the export's time without the
//     changes in between: a shadow began to fill it from the stream after
//     that time (its projection-set marker's time), or an earlier backfill
//     from a newer export built it. The changes in between are in neither,
//     and an item deleted meanwhile would come back;
//   - one that an earlier backfill from an older export built, unless
//     the stream has kept it current since that export's time: a shadow
//     attached before it (the projection-set marker at or before it), or a
//     replay from it that completed (the backfill marker's CaughtUp). A
//     backfill deletes nothing the store holds (a full export holds no
//     deletions, and the incremental exports' only leave the full
//     export's items out): an item deleted between the two exports' times
//     would stay in the store.
//
// A rerun of the same job is not checked here (Begin): it is the same
// export over its own state.
func (j *Job) checkCoverage(ctx context.Context, prior *Marker) error {
	set, err := engine.ReadMarker(ctx, j.store)
	if err != nil {
		return err
	}
	var why error
	if prior != nil && prior.AsOf.Before(j.asOf) {
		if !prior.CaughtUp.IsZero() || set != nil && !set.Since.After(prior.AsOf) {
			return nil
		}
		from := prior.AsOf.Truncate(time.Second).Format(time.RFC3339)
		deletions := "an export holds no deletions"
		if len(j.overlay.Exports) > 0 {
			deletions = "a backfill deletes nothing the store holds: the full export holds no deletions, and the incremental exports' deletions only leave the full export's items out"
		}
		why = fmt.Errorf("backfill: the store holds the backfill of an older export (%s, as of %s), and nothing shows that the stream has kept it current since: an item deleted before this export's time, %s, would stay in the store (%s). Backfill this export into a new, empty store; or first apply the stream to this one from %s on (a replay from then records it caught up), then run this again (docs/backfill.md)",
			prior.Export, prior.AsOf.UTC().Format(time.RFC3339Nano), j.asOf.Format(time.RFC3339Nano), deletions, from)
	} else {
		if set == nil {
			return nil
		}
		since := set.Since
		if prior != nil && prior.AsOf.Before(since) {
			since = prior.AsOf
		}
		if !since.After(j.asOf) {
			return nil
		}
		why = fmt.Errorf("backfill: the store holds state since %s, after the export's time, %s: the stream's changes in between are in neither. Take an export after %s, or replay the stream from %s into the store (docs/backfill.md)",
			since.UTC().Format(time.RFC3339), j.asOf.Format(time.RFC3339Nano), since.UTC().Format(time.RFC3339), j.asOf.Truncate(time.Second).Format(time.RFC3339))
	}
	if r, ok := j.store.(driver.Reader); ok {
		empty, err := engine.Empty(ctx, r)
		if err != nil || empty {
			return err
		}
	}
	return refuse(why)
}

// checkTable refuses a store whose backfill marker is of an export of
// another table than the job's: another tableArn, or another tableId (a
// table deleted and created again under its name keeps its ARN, not its
// ID). Each is compared where both markers name it: a marker of an
// earlier release names the table by its export's ARN alone, an export
// read without its manifest names none.
func (j *Job) checkTable(prior *Marker) error {
	if prior == nil {
		return nil
	}
	arn := prior.TableARN
	if arn == "" {
		arn = tableOfExport(prior.Export)
	}
	for _, f := range []struct{ name, was, is, note string }{
		{"tableArn", arn, j.marker.TableARN, ""},
		{"tableId", prior.TableID, j.marker.TableID, " (a table deleted and created again under its name keeps its ARN, not its ID)"},
	} {
		if f.was == "" || f.is == "" || f.was == f.is {
			continue
		}
		return refuse(fmt.Errorf("backfill: the store holds the backfill of an export of another table (%s, %s %s), and this export, %s, is of %s %s%s: a store holds the projections of one table. Backfill this export into a new, empty store",
			prior.Export, f.name, f.was, j.marker.Export, f.name, f.is, f.note))
	}
	return nil
}

// tableOfExport is the table ARN that an export's ARN names
// (arn:PARTITION:dynamodb:REGION:ACCOUNT:table/NAME/export/ID), or "" for
// anything else (an export's location).
func tableOfExport(arn string) string {
	table, _, ok := strings.Cut(arn, "/export/")
	if !ok || !strings.HasPrefix(table, "arn:") || !strings.Contains(table, ":dynamodb:") || !strings.Contains(table, ":table/") {
		return ""
	}
	return table
}

// Bounds of what checkKeys reads of the store's ledger: the item entries
// it compares, and the entries of any kind it reads to find them.
const (
	keyProbeItems   = 16
	keyProbeEntries = 1000
)

var errProbed = errors.New("probed")

// checkKeys refuses a store whose item ledger entries are keyed by other
// attributes than the job's: a ledger key names its item's key
// attributes (engine.LedgerKey), and those the stream writes are the
// table's. A job given key attributes that are not the table's would lay
// its items beside the stream's under other keys, and an item of a type no
// projection reads never meets another in the ledger to show it. It reads
// the first few item entries it finds (a store without a Reader is not
// checked; a key too long to be stored as it is names nothing).
func (j *Job) checkKeys(ctx context.Context) error {
	r, ok := j.store.(driver.Reader)
	if !ok {
		return nil
	}
	want := j.marker.KeyAttributes
	var seen, items int
	var other []string
	var example string
	err := r.ScanLedgers(ctx, func(key string, _ driver.LedgerEntry) error {
		seen++
		if names, ok := keyNames(key); ok {
			items++
			if !sameNames(names, want) {
				other, example = names, key
				return errProbed
			}
		}
		if items >= keyProbeItems || seen >= keyProbeEntries {
			return errProbed
		}
		return nil
	})
	if err != nil && !errors.Is(err, errProbed) {
		return fmt.Errorf("backfill: reading the store's ledger: %w", err)
	}
	if other == nil {
		return nil
	}
	return refuse(fmt.Errorf("backfill: the store holds items keyed by %s (e.g. %s), and this job keys the export's items by %s (--key-attributes, KEY_ATTRIBUTES, or the environment's): a store holds one table's items under the table's key attributes, which its stream's records carry, and an item under two keys would count twice. Give the table's own key attributes; if the store's entries are those of a backfill given others, backfill into a new, empty store",
		strings.Join(other, ","), engine.DescribeOwner(example), strings.Join(want, ",")))
}

// keyNames returns the key attribute names of the item whose ledger key
// is key, sorted; false for a key that names none (a marker's, a
// partial's, or one too long to be stored as it is).
func keyNames(key string) ([]string, bool) {
	if !strings.HasPrefix(key, "{") {
		return nil, false
	}
	var attrs map[string]json.RawMessage
	if json.Unmarshal([]byte(key), &attrs) != nil || len(attrs) == 0 {
		return nil, false
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, true
}

func (j *Job) writeMarker(ctx context.Context, m Marker, rev int64) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding the backfill marker: %w", err)
	}
	if err := j.store.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: MarkerKey, ExpectRev: rev, Body: body}}}); err != nil {
		return fmt.Errorf("writing the backfill marker: %w", err)
	}
	return nil
}

// failedKey is the ledger key of the record of a data file's failures.
func (j *Job) failedKey(file string) string {
	sum := sha256.Sum256([]byte(file))
	return MarkerKey + "/failed/" + j.id + "/" + hex.EncodeToString(sum[:8])
}

// recordFailures writes what a run of file could not take, before the
// file is folded: a run that stops before the fold runs the file again
// and writes its record again.
func (j *Job) recordFailures(ctx context.Context, file string, f fileFailures) error {
	key := j.failedKey(file)
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	got, err := j.store.ReadLedgers(ctx, []string{key})
	if err != nil {
		return fmt.Errorf("reading the failures of %s: %w", file, err)
	}
	if err := j.store.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: key, ExpectRev: got[key].Rev, Body: body}}}); err != nil {
		return fmt.Errorf("recording the failures of %s: %w", file, err)
	}
	return nil
}

// readRecords reads the ledger entry keyOf names of each of the job's
// files, a hundred at a time, and calls fn with the file and the entry
// (Rev 0: there is none). what names the records in errors.
func (j *Job) readRecords(ctx context.Context, what string, keyOf func(file string) string, fn func(file string, e driver.LedgerEntry) error) error {
	for i := 0; i < len(j.files); i += 100 {
		files := j.files[i:min(i+100, len(j.files))]
		keys := make([]string, len(files))
		for k, f := range files {
			keys[k] = keyOf(f)
		}
		got, err := j.store.ReadLedgers(ctx, keys)
		if err != nil {
			return fmt.Errorf("reading the job's %s: %w", what, err)
		}
		for k, f := range files {
			if err := fn(f, got[keys[k]]); err != nil {
				return fmt.Errorf("reading the job's %s: %s: %w", what, keys[k], err)
			}
		}
	}
	return nil
}

// readFailures totals the failure records of the job's files.
func (j *Job) readFailures(ctx context.Context) (*FailedItemsError, error) {
	fe := &FailedItemsError{Job: j.id}
	err := j.readRecords(ctx, "failures", j.failedKey, func(_ string, e driver.LedgerEntry) error {
		if e.Rev == 0 {
			return nil
		}
		var f fileFailures
		if err := json.Unmarshal(e.Body, &f); err != nil {
			return err
		}
		if f.Failed > 0 {
			fe.Items += f.Failed
			fe.Files++
			if len(fe.Examples) < maxExamples {
				fe.Examples = append(fe.Examples, f.Examples...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if fe.Items == 0 {
		return nil, nil
	}
	fe.Examples = fe.Examples[:min(len(fe.Examples), maxExamples)]
	return fe, nil
}

// ErrRefused matches the error of a job that no rerun of it can finish:
// the error says what to do instead.
var ErrRefused = errors.New("backfill refused")

type refusal struct{ error }

func (r refusal) Unwrap() []error { return []error{r.error, ErrRefused} }

// refuse makes err match ErrRefused.
func refuse(err error) error { return refusal{err} }

// mixedAdvice says what to do about a data file some of whose applied
// items came from an object that is not the exported one.
const mixedAdvice = "items read from it before the end of the file are in the store under the export's tokens, and no rerun can tell them from the export's own: backfill into a new store (the object must not change while it is read)"

// mixedKey is the ledger key of the record that items of a data file were
// applied from an object that is not the exported one.
func (j *Job) mixedKey(file string) string {
	sum := sha256.Sum256([]byte(file))
	return engine.MixedPrefix + j.id + "/" + hex.EncodeToString(sum[:8])
}

// recordMixed records in the store that items of file were applied from
// an object that is not the exported one (cause says how it differs), so
// that every later run of the job refuses the file rather than pass over
// those items as the export's; and in the backfill marker, so that what
// reads the store (verify) can name the file.
func (j *Job) recordMixed(ctx context.Context, file string, cause error) error {
	key := j.mixedKey(file)
	mf := MixedFile{File: file, Error: cause.Error()}
	body, err := json.Marshal(mf)
	if err != nil {
		return err
	}
	got, err := j.store.ReadLedgers(ctx, []string{key})
	if err != nil {
		return fmt.Errorf("reading the record of %s: %w", file, err)
	}
	if got[key].Rev == 0 {
		if err := j.store.Commit(ctx, &driver.Tx{Ledgers: []driver.LedgerPut{{Key: key, Body: body}}}); err != nil {
			return fmt.Errorf("recording that %s was read from another object: %w", file, err)
		}
	}
	for range 3 {
		cur, rev, err := ReadMarker(ctx, j.store)
		if err != nil {
			return err
		}
		if cur == nil || cur.Job != j.id || slices.ContainsFunc(cur.Mixed, func(m MixedFile) bool { return m.File == file }) {
			return nil
		}
		m := *cur
		m.Mixed = append(slices.Clone(m.Mixed), mf)
		err = j.writeMarker(ctx, m, rev)
		if errors.As(err, new(*driver.ConflictError)) {
			continue
		}
		return err
	}
	return errors.New("backfill: the store's backfill marker kept changing")
}

// Mixed returns the job's data files some of whose items a run applied
// from an object that is not the exported one (the records every later
// run refuses them by), in the job's order of files: the store holds
// those items under the export's tokens, and only a backfill into a new
// store can be trusted.
func (j *Job) Mixed(ctx context.Context) ([]MixedFile, error) {
	var out []MixedFile
	err := j.readRecords(ctx, "records of files read from another object", j.mixedKey, func(file string, e driver.LedgerEntry) error {
		if e.Rev == 0 {
			return nil
		}
		mf := MixedFile{File: file}
		_ = json.Unmarshal(e.Body, &mf) // a record, readable or not, names its file
		mf.File = file
		out = append(out, mf)
		return nil
	})
	return out, err
}

// checkMixed refuses file when a run recorded that items of it came from
// an object that is not the exported one (recordMixed).
func (j *Job) checkMixed(ctx context.Context, file string) error {
	key := j.mixedKey(file)
	got, err := j.store.ReadLedgers(ctx, []string{key})
	if err != nil {
		return fmt.Errorf("backfill of %s: reading its record: %w", file, err)
	}
	e := got[key]
	if e.Rev == 0 {
		return nil
	}
	var m struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(e.Body, &m) // a record, readable or not, refuses the file
	return refuse(fmt.Errorf("backfill of %s: an earlier run of job %s read it from an object that is not the exported one (%s): %s", file, j.id, m.Error, mixedAdvice))
}

// partialKey is the ledger key of a data file's partial.
func (j *Job) partialKey(file string) string {
	sum := sha256.Sum256([]byte(file))
	return engine.PartialPrefix + j.id + "/" + hex.EncodeToString(sum[:8])
}

// File backfills one data file (or OverlayFile): its items through the
// engine, in batches, into the file's partial, which it then folds. A file
// done before is passed over. An item the projections cannot take is
// counted and listed (Summary), and the file goes on; any other failure
// stops it, and running it again resumes it.
func (j *Job) File(ctx context.Context, file string) (FileResult, error) {
	res := FileResult{File: file}
	p, err := j.engine.OpenPartial(ctx, j.partialKey(file))
	if err != nil {
		return res, err
	}
	if p.Folded() {
		res.Done = true
		return res, nil
	}
	if err := j.checkMixed(ctx, file); err != nil {
		return res, err
	}
	var batch []pipeline.Change
	applied := false
	flush := func() error {
		applied = true
		err := j.apply(ctx, batch, p, &res)
		batch = batch[:0]
		return err
	}
	add := func(c pipeline.Change) error {
		res.Items++
		j.read.Add(1)
		batch = append(batch, c)
		if len(batch) >= j.opts.BatchSize {
			if j.opts.Progress != nil {
				j.opts.Progress(int64(len(batch)))
			}
			return flush()
		}
		return nil
	}
	if file == OverlayFile {
		err = j.overlayItems(add)
	} else {
		err = j.dataFile(ctx, file, add)
	}
	if err == nil && len(batch) > 0 {
		if j.opts.Progress != nil {
			j.opts.Progress(int64(len(batch)))
		}
		err = flush()
	}
	if err != nil && applied && errors.Is(err, export.ErrNotExported) {
		// The object changed while it was read, after its proof: items of
		// another object are in the store, under the export's tokens.
		err = errors.Join(err, j.recordMixed(ctx, file, err))
		return res, refuse(fmt.Errorf("backfill of %s: %w: %s", file, err, mixedAdvice))
	}
	if err != nil {
		return res, fmt.Errorf("backfill of %s: %w", file, err)
	}
	if res.Failed > 0 {
		f := fileFailures{Failed: res.Failed}
		for _, x := range res.Failures[:min(len(res.Failures), maxExamples)] {
			f.Examples = append(f.Examples, x.Error())
		}
		if err := j.recordFailures(ctx, file, f); err != nil {
			return res, fmt.Errorf("backfill of %s: %w", file, err)
		}
	}
	if err := j.engine.Fold(ctx, p); err != nil {
		return res, fmt.Errorf("backfill of %s: %w", file, err)
	}
	return res, nil
}

// dataFile passes the changes a full export's data file stands for to add:
// each item as of the job's point in time, but for those the overlay holds
// (passed from it instead, or deleted).
func (j *Job) dataFile(ctx context.Context, file string, add func(pipeline.Change) error) error {
	f, ok := j.byKey[file]
	if !ok {
		return fmt.Errorf("%s is not a data file of %s", file, j.full)
	}
	dec := pipeline.NewExportDecoder(j.decodeOptions())
	dec.ExportTime = j.asOf
	name := objstore.Name(j.full.Store(), j.full.DataKey(f))
	index := j.index[file]
	_, err := j.full.ReadExportedLines(ctx, f, j.opts.SkipMD5, func(line []byte, n int) error {
		c, err := export.DecodeItem(dec, line, name, n)
		if err != nil {
			return err
		}
		c.Position.Origin = j.origin(index, n)
		if j.overlay.Len() > 0 {
			if _, ok := j.overlay.Lookup(j.overlay.KeyOf(c.New)); ok {
				return nil // the overlay's state of the item is newer
			}
		}
		return add(c)
	})
	return err
}

// overlayItems passes the items the incremental exports left to add, each
// as of its last write.
func (j *Job) overlayItems(add func(pipeline.Change) error) error {
	for _, ent := range j.overlay.Entries() {
		if ent.Item == nil {
			continue
		}
		c := pipeline.Change{
			Kind: pipeline.Insert, New: ent.Item, NewType: ent.Type,
			Keys: keysOf(ent.Item, j.overlay.KeyAttributes),
			Time: ent.Time, Precision: pipeline.Microsecond, Version: ent.Version, HasVersion: ent.HasVersion,
			Position: pipeline.Position{Source: pipeline.SourceExport, Stream: OverlayFile},
		}
		if err := add(c); err != nil {
			return err
		}
	}
	return nil
}

func (j *Job) decodeOptions() pipeline.Options {
	opts := j.opts.Decode
	if len(j.overlay.KeyAttributes) > 0 {
		opts.KeyAttributes = j.overlay.KeyAttributes
	}
	return opts
}

func keysOf(item pipeline.Item, names []string) pipeline.Item {
	keys := make(pipeline.Item, len(names))
	for _, k := range names {
		if v, ok := item[k]; ok {
			keys[k] = v
		}
	}
	return keys
}

// apply runs a batch through the engine into p; an item the projections
// reject is recorded as a failure and the rest of the batch goes on. An
// item the export holds twice refuses the job.
func (j *Job) apply(ctx context.Context, batch []pipeline.Change, p *engine.Partial, res *FileResult) error {
	for len(batch) > 0 {
		err := j.engine.HandleBatchInto(ctx, batch, p)
		if err == nil {
			return nil
		}
		var be *pipeline.BatchError
		if !errors.As(err, &be) {
			return err
		}
		var held *engine.HeldError
		if errors.As(be.Err, &held) {
			// Every change of the batch but the held ones is applied.
			for _, h := range held.Held {
				if !errors.Is(h.Err, pipeline.ErrPermanent) {
					return j.refusal(h.Err)
				}
			}
			for _, h := range held.Held {
				j.failAt(batch[h.Index], h.Err, res)
			}
			return nil
		}
		if !errors.Is(err, pipeline.ErrPermanent) {
			return j.refusal(err)
		}
		j.failAt(batch[be.Index], be.Err, res)
		batch = batch[be.Index+1:]
	}
	return nil
}

// failAt records that the projections could not take change c.
func (j *Job) failAt(c pipeline.Change, err error, res *FileResult) {
	f := Failure{File: c.Position.Stream, Line: c.Position.Index + 1, Keys: pipeline.KeyString(c.Keys), Err: err}
	j.fail(f)
	res.Failed++
	if len(res.Failures) < maxExamples {
		res.Failures = append(res.Failures, f)
	}
}

// refusal is err, or, for an item the export holds twice, the job's
// refusal naming both places.
func (j *Job) refusal(err error) error {
	var dup *engine.DuplicateItemError
	if !errors.As(err, &dup) {
		return err
	}
	return refuse(fmt.Errorf("the export holds item %s twice, at %s and at %s: an export holds each item once, so either the key attributes it is read by (%s) are not the table's — give the table's own (--key-attributes, KEY_ATTRIBUTES), in a new store — or the export is corrupt",
		dup.Key, j.place(dup.First), j.place(dup.Second), strings.Join(j.keyAttributes(), ",")))
}

// keyAttributes are the attributes the job keys the export's items by:
// the incremental exports' (their lines' Keys), or those given, or the
// default.
func (j *Job) keyAttributes() []string {
	return j.decodeOptions().Schema.WithDefaults().KeyAttributes
}

// origin is where the job's export holds the item on line n of its data
// file file (pipeline.Position.Origin): the export's content and the
// file's place among the job's files, wherever the export is stored.
func (j *Job) origin(file, n int) string {
	return j.full.ManifestSHA256[:min(16, len(j.full.ManifestSHA256))] + "/" + strconv.Itoa(file) + ":" + strconv.Itoa(n)
}

// place renders an origin of the job's export as its data file and line.
func (j *Job) place(origin string) string {
	_, at, _ := strings.Cut(origin, "/")
	file, line, _ := strings.Cut(at, ":")
	i, err := strconv.Atoi(file)
	if err != nil || i < 0 || i >= len(j.files) || j.files[i] == OverlayFile {
		return origin
	}
	return objstore.Name(j.full.Store(), j.full.DataKey(j.byKey[j.files[i]])) + " line " + line
}

func (j *Job) fail(f Failure) {
	j.failed.Add(1)
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.failures) < j.opts.MaxFailures {
		j.failures = append(j.failures, f)
	}
}

// Run backfills every data file, workers at a time, then finishes the job
// (Finish). It stops at the first file that fails (the others it began
// are done first) and returns the summary so far; running it again
// resumes.
func (j *Job) Run(ctx context.Context, workers int) (Summary, error) {
	if err := j.Begin(ctx); err != nil {
		return Summary{}, err
	}
	ctx, stop, err := j.guard(ctx)
	if err != nil {
		return Summary{Files: len(j.files)}, err
	}
	defer stop()
	workers = max(workers, 1)
	var (
		sum      Summary
		mu       sync.Mutex
		firstErr error
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(j.files) {
					return
				}
				mu.Lock()
				stop := firstErr != nil
				mu.Unlock()
				if stop || ctx.Err() != nil {
					return
				}
				r, err := j.File(ctx, j.files[i])
				mu.Lock()
				sum.Items += r.Items
				if r.Done {
					sum.FilesDone++
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var handoff *HandoffError
	if errors.As(context.Cause(ctx), &handoff) {
		firstErr = handoff // the files stopped by it failed for it
	}
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	sum.Files = len(j.files)
	sum.Stats = j.engine.Stats()
	sum.Failed, sum.Failures = j.failed.Load(), j.Failures()
	if firstErr != nil {
		return sum, firstErr
	}
	complete, err := j.Finish(ctx)
	sum.Complete = complete
	return sum, err
}

// Failures returns the items the job could not take so far (the first
// MaxFailures).
func (j *Job) Failures() []Failure {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Failure(nil), j.failures...)
}

// Finish checks that every data file of the job is done (its partial
// folded) and records the job complete in the store's marker. It reports
// false, with no error, while files remain; they are named in the error
// of Pending. A job complete but for items the projections could not take
// reports true with a *FailedItemsError, on this call and every later one.
func (j *Job) Finish(ctx context.Context) (bool, error) {
	pending, err := j.Pending(ctx)
	if err != nil || len(pending) > 0 {
		return false, err
	}
	failed, err := j.readFailures(ctx)
	if err != nil {
		return false, err
	}
	for range 3 {
		cur, rev, err := ReadMarker(ctx, j.store)
		if err != nil {
			return false, err
		}
		if cur == nil || cur.Job != j.id {
			return false, fmt.Errorf("backfill: the store's marker is another job's (%v): a backfill from another export began since", cur)
		}
		if !cur.Completed.IsZero() {
			j.marker = *cur
			return true, failedErr(failed)
		}
		m := *cur
		m.Completed = time.Now().UTC()
		if failed != nil {
			m.Failed = failed.Items
		}
		if err := j.writeMarker(ctx, m, rev); err != nil {
			if errors.As(err, new(*driver.ConflictError)) {
				continue
			}
			return false, err
		}
		j.marker = m
		return true, failedErr(failed)
	}
	return false, errors.New("backfill: the store's backfill marker kept changing")
}

// failedErr is fe as an error: nil when there is none.
func failedErr(fe *FailedItemsError) error {
	if fe == nil {
		return nil
	}
	return fe
}

// Pending returns the job's data files not done yet (their partials not
// folded).
func (j *Job) Pending(ctx context.Context) ([]string, error) {
	var pending []string
	err := j.readRecords(ctx, "partials", j.partialKey, func(file string, e driver.LedgerEntry) error {
		if e.Rev == 0 || !engine.PartialFolded(e) {
			pending = append(pending, file)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pending, nil
}
