package verify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// Work is where a parted check's steps hand each other what they found:
// an object store (S3 under the Verify state machine's work location, or a
// directory). objstore.S3 and objstore.Dir implement it.
type Work interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	List(ctx context.Context, prefix string, fn func(objstore.Object) error) error
	Put(ctx context.Context, key string, body []byte) error
	// PutIfAbsent writes an object only if none is there (the plan and a
	// step's notes: the first attempt's stand), else fails with
	// objstore.ErrPreconditionFailed.
	PutIfAbsent(ctx context.Context, key string, body []byte) (string, error)
	Create(ctx context.Context, key string) (objstore.Writer, error)
	Delete(ctx context.Context, key string) error
	String() string
}

// Parted is Check cut into steps that run apart, each in a process of its
// own, beside one another: the Verify state machine's plan, its maps of
// scan steps (a segment of the table each), file steps (a data file each),
// join steps and compare steps (a partition each), and its finish, which
// returns Check's Result. The steps hand each other partitions through
// Work, under Prefix/<job>/; each step runs after every step of the map
// before it, and any step may run again (a retry, a redrive): it first
// removes what it handed over before, then hands over anew, and records
// that it is done last. Memory holds what Check's does, per step.
type Parted struct {
	// Full and Overlay are the export and its incremental exports (nil:
	// none): every step of a job opens the same ones.
	Full    *export.Export
	Overlay *export.Overlay
	// Table is the table checked; Segment returns segment i of n of it
	// for a parallel scan (nil: the table has one segment, Table).
	Table   driver.Reader
	Segment func(i, n int) (driver.Reader, error)
	Work    Work
	Prefix  string
	// Options are Check's; Options.MaxNamed bounds the differences the
	// result names.
	Options     Options
	Projections []projections.Projection
	// Segments is how many segments the plan scans the table in (default
	// 16; 1 without Segment); Parts how many partitions it cuts the
	// check into (default: by the export's size, see Plan).
	Segments, Parts int
}

// Plan is what a parted check's plan decided: every step of the job reads
// it (Prefix/<job>/plan.json).
type Plan struct {
	Job string `json:"job"`
	// AsOf is the export's point in time (zero: not known).
	AsOf time.Time `json:"asOf"`
	// Files are the data files the file steps read, sorted, and
	// backfill's "(incremental exports)" last when there are some.
	Files []string `json:"files"`
	// Segments and Parts are how many scan steps, and join and compare
	// steps, the job has.
	Segments int `json:"segments"`
	Parts    int `json:"parts"`
	// Export names the export and its incrementals, and Items how many
	// items the manifests count (0: not known).
	Export string `json:"export"`
	Items  int64  `json:"items"`
	// Projections are the projections checked, with their fingerprints:
	// a step of the job over other definitions is refused.
	Projections []string `json:"projections"`
}

// overlayFile names a parted check's pseudo data file of the items of the
// incremental exports (backfill's name for it).
const overlayFile = "(incremental exports)"

// maxObjects bounds the objects the file steps hand over, files × parts,
// when the plan chooses the parts (each is a PUT and a GET).
const maxObjects = 250_000

// itemsPerPart is about how many export items a part is planned for.
const itemsPerPart = 1_000_000

// Plan plans the job of this check for run (one execution: a name unique
// to it): it opens nothing of the table, reads the export's manifests
// only, and records the plan under Prefix/<job>/plan.json. Without Parts,
// the parts are the items counted over 1,000,000, rounded up to a power of
// two, at most engine.MaxParts, then halved while files × parts is
// over 250,000 objects.
func (c *Parted) Plan(ctx context.Context, run string) (*Plan, error) {
	if run == "" {
		return nil, errors.New("verify plan: no run name")
	}
	p := &Plan{AsOf: Watermark(c.Full, c.Overlay), Segments: c.Segments, Parts: c.Parts, Export: c.exportName()}
	for _, f := range c.Full.Files {
		p.Files = append(p.Files, f.DataFileS3Key)
		p.Items += f.ItemCount
	}
	sort.Strings(p.Files)
	for i := 1; i < len(p.Files); i++ {
		if p.Files[i] == p.Files[i-1] {
			return nil, fmt.Errorf("verify plan: the manifest of %s names the data file %s twice", c.Full, p.Files[i])
		}
	}
	if c.Overlay != nil && c.Overlay.Len() > 0 {
		p.Files = append(p.Files, overlayFile)
		p.Items += int64(c.Overlay.Len())
	}
	if p.Segments <= 0 {
		p.Segments = 16
	}
	if c.Segment == nil {
		p.Segments = 1
	}
	if p.Parts <= 0 {
		p.Parts = choosePartitions(p.Items, len(p.Files))
	}
	p.Projections = c.projectionIDs()
	h := sha256.Sum256([]byte(strings.Join(append([]string{run, p.Export}, p.Projections...), "\n")))
	p.Job = hex.EncodeToString(h[:10])
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	// The first plan of a job stands: a plan run again (a retry, a late
	// attempt) answers it, whatever the table's size now says, so that
	// every step of the job is cut the same way.
	_, err = c.Work.PutIfAbsent(ctx, c.key(p.Job, "plan.json"), body)
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		return c.ReadPlan(ctx, p.Job)
	}
	if err != nil {
		return nil, fmt.Errorf("verify plan: %w", err)
	}
	return p, nil
}

// projectionIDs names the projections checked, with their fingerprints.
func (c *Parted) projectionIDs() []string {
	ids := make([]string, 0, len(c.Projections))
	for _, ps := range c.Projections {
		ids = append(ids, ps.Name()+"@"+projections.Fingerprint(ps))
	}
	sort.Strings(ids)
	return ids
}

func choosePartitions(items int64, files int) int {
	n := 1
	if items > itemsPerPart {
		n = 1 << bits.Len64(uint64((items-1)/itemsPerPart))
	}
	n = min(n, engine.MaxParts)
	for n > 1 && files*n > maxObjects {
		n /= 2
	}
	return n
}

func (c *Parted) exportName() string {
	names := []string{c.Full.String()}
	if c.Overlay != nil {
		for _, e := range c.Overlay.Exports {
			names = append(names, e.String())
		}
	}
	return strings.Join(names, " + ")
}

func (c *Parted) key(job string, parts ...string) string {
	return path.Join(append([]string{c.Prefix, job}, parts...)...)
}

// ReadPlan reads a job's plan, and refuses one of another export.
func (c *Parted) ReadPlan(ctx context.Context, job string) (*Plan, error) {
	b, err := objstore.ReadAll(ctx, c.Work, c.key(job, "plan.json"))
	if err != nil {
		return nil, fmt.Errorf("verify job %s: its plan: %w", job, err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("verify job %s: its plan %s: %w", job, objstore.Name(c.Work, c.key(job, "plan.json")), err)
	}
	if p.Export != c.exportName() {
		return nil, fmt.Errorf("verify job %s is of %s, not of %s", job, p.Export, c.exportName())
	}
	if p.Job != job {
		return nil, fmt.Errorf("verify job %s: its plan is job %s's", job, p.Job)
	}
	if ids := c.projectionIDs(); !slices.Equal(p.Projections, ids) {
		return nil, fmt.Errorf("verify job %s checks projections %s, not %s (the projections changed since its plan): start the check again", job, strings.Join(p.Projections, ", "), strings.Join(ids, ", "))
	}
	// A plan read back is held to what Plan writes: a check of fewer
	// segments, parts or files than the table and the export have would
	// leave some unread.
	var files []string
	for _, f := range c.Full.Files {
		files = append(files, f.DataFileS3Key)
	}
	sort.Strings(files)
	if c.Overlay != nil && c.Overlay.Len() > 0 {
		files = append(files, overlayFile)
	}
	switch {
	case p.Segments < 1 || c.Segment == nil && p.Segments != 1:
		return nil, fmt.Errorf("verify job %s: its plan has %d scan segments", job, p.Segments)
	case p.Parts < 1 || p.Parts > engine.MaxParts || p.Parts&(p.Parts-1) != 0:
		return nil, fmt.Errorf("verify job %s: its plan has %d parts: want a power of two from 1 to %d", job, p.Parts, engine.MaxParts)
	case !slices.Equal(p.Files, files):
		return nil, fmt.Errorf("verify job %s: its plan names %d data files, the export %d: not this export's plan", job, len(p.Files), len(files))
	}
	return &p, nil
}

// notes are what a step found, recorded last (Prefix/<job>/notes/<step>):
// the check's counts and lists are their sums.
type notes struct {
	Items    int64    `json:"items,omitempty"`
	Changed  int64    `json:"changed,omitempty"`
	Unfolded []string `json:"unfolded,omitempty"`
	Mixed    []string `json:"mixed,omitempty"`
	Refused  []string `json:"refused,omitempty"`
	Unjudged []string `json:"unjudged,omitempty"`
	// A compare step's.
	Differences []string `json:"differences,omitempty"`
	More        int64    `json:"more,omitempty"`
	Aggregates  int      `json:"aggregates,omitempty"`
	Rows        int      `json:"rows,omitempty"`
	// Bytes is how many bytes the step handed over; Objects names each
	// object, of this attempt of the step: the steps after it read exactly
	// these, and refuse to go on when one is gone or of another size.
	Bytes   int64    `json:"bytes"`
	Objects []handed `json:"objects,omitempty"`
}

// handed is an object a step handed over: of a set's partition (or the
// in-tick entries, set "intick").
type handed struct {
	Set  string `json:"set"`
	Part int    `json:"part"`
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// setInTick names a scan step's in-tick ledger entries among its objects.
const setInTick = "intick"

// Step is what one step did.
type Step struct {
	// Name names the step (scan-000003, file-000012, join-0005, compare-0005).
	Name string `json:"step"`
	// Items read (file), Bytes handed over, Differences found (compare).
	Items       int64 `json:"items,omitempty"`
	Bytes       int64 `json:"bytes,omitempty"`
	Differences int64 `json:"differences,omitempty"`
}

func stepName(kind string, i int) string {
	if kind == "scan" || kind == "file" {
		return fmt.Sprintf("%s-%06d", kind, i)
	}
	return fmt.Sprintf("%s-%04d", kind, i)
}

// check returns a new check of plan, parted.
func (c *Parted) check(p *Plan) (*engine.AsOfCheck, error) {
	o := c.Options
	opts := o.Decode
	check := engine.NewAsOfCheck(Effective(p.AsOf), opts.TypeAttribute, c.Projections...)
	check.VersionAttribute = opts.WithDefaults().VersionAttribute
	check.Dir, check.MaxNamed, check.Keep = o.Dir, o.MaxNamed, o.Keep
	check.PartitionBytes = o.PartitionBytes
	check.KeyAttributes, check.Writes = KeyAttributes(opts, c.Overlay), Writes(c.Overlay)
	if err := check.Parted(p.Parts); err != nil {
		return nil, errors.Join(err, check.Close())
	}
	return check, nil
}

// handoff hands over what check spilled (nil: nothing) and extra
// objects, under keys of this attempt of the step alone, and records n
// as the step's notes, last: naming the objects, it is what the steps
// after it read. An attempt run beside another of the same step (a retry
// while the first still runs) writes objects of its own; the notes
// written last name one attempt's, whole.
func (c *Parted) handoff(ctx context.Context, p *Plan, step string, check *engine.AsOfCheck, extra map[string][]byte, n *notes) error {
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	attempt := step + "." + hex.EncodeToString(nonce[:])
	put := func(set string, part int, r io.Reader) error {
		key := c.key(p.Job, set, partName(part), attempt)
		w, err := c.Work.Create(ctx, key)
		if err != nil {
			return err
		}
		k, err := io.Copy(w, r)
		if err != nil {
			w.Abort()
			return fmt.Errorf("verify step %s: handing over %s %d: %w", step, set, part, err)
		}
		if err := w.Commit(ctx); err != nil {
			return err
		}
		n.Bytes += k
		n.Objects = append(n.Objects, handed{Set: set, Part: part, Key: key, Size: k})
		return nil
	}
	for set, body := range extra {
		if err := put(set, 0, bytes.NewReader(body)); err != nil {
			return err
		}
	}
	if check != nil {
		if err := check.Handoff(put); err != nil {
			return err
		}
	}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	// The first attempt's notes stand: what the steps after it read was
	// handed over by one attempt, whatever another one, finishing later,
	// found. This attempt then answers the first one's (its own objects
	// are read by nobody).
	_, err = c.Work.PutIfAbsent(ctx, c.key(p.Job, "notes", step), body)
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		first, err := c.notesOf(ctx, p, step)
		if err != nil {
			return err
		}
		*n = first[0]
		return nil
	}
	return err
}

func partName(p int) string { return fmt.Sprintf("%04d", p) }

// stepsOf names the steps of kind of a plan.
func stepsOf(p *Plan, kind string) []string {
	n := p.Parts
	switch kind {
	case "scan":
		n = p.Segments
	case "file":
		n = len(p.Files)
	}
	names := make([]string, n)
	for i := range n {
		names[i] = stepName(kind, i)
	}
	return names
}

// notesOf reads the notes of every step of the kinds given (or of a step
// given by its name), refusing to go on before each is done.
func (c *Parted) notesOf(ctx context.Context, p *Plan, kinds ...string) ([]notes, error) {
	var steps []string
	for _, k := range kinds {
		if strings.Contains(k, "-") {
			steps = append(steps, k) // one step, by its name
			continue
		}
		steps = append(steps, stepsOf(p, k)...)
	}
	all := make([]notes, len(steps))
	err := parallel(ctx, len(steps), func(i int) error {
		key := c.key(p.Job, "notes", steps[i])
		b, err := objstore.ReadAll(ctx, c.Work, key)
		if errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("verify job %s: step %s is not done: run it first", p.Job, steps[i])
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &all[i]); err != nil {
			return fmt.Errorf("verify job %s: the notes of step %s (%s): %w", p.Job, steps[i], objstore.Name(c.Work, key), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// open opens an object a step handed over, refusing one that is gone.
func (c *Parted) open(ctx context.Context, p *Plan, o handed) (io.ReadCloser, error) {
	r, err := c.Work.Open(ctx, o.Key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("verify job %s: %s, which a step handed over, is gone (the work bucket's rule expires a job's objects: start the check again): %w", p.Job, objstore.Name(c.Work, o.Key), err)
	}
	return r, err
}

// parallel runs fn(0) … fn(n-1), 16 at a time, and returns the first error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range min(16, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// Scan is scan step segment: the segment's ledger entries, aggregate
// shards and rows.
func (c *Parted) Scan(ctx context.Context, p *Plan, segment int) (_ *Step, err error) {
	if segment < 0 || segment >= p.Segments {
		return nil, fmt.Errorf("verify job %s: no scan segment %d (it has %d)", p.Job, segment, p.Segments)
	}
	step := stepName("scan", segment)
	table := c.Table
	if c.Segment != nil {
		t, err := c.Segment(segment, p.Segments)
		if err != nil {
			return nil, err
		}
		table = t
	}
	check, err := c.check(p)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, check.Close()) }()
	// One read of the segment where the table can, not three.
	if err := check.AddTable(ctx, table); err != nil {
		return nil, fmt.Errorf("verify step %s: %w", step, err)
	}
	var tick bytes.Buffer
	if err := check.WriteInTick(&tick); err != nil {
		return nil, err
	}
	n := &notes{Changed: check.Changed, Unfolded: check.Unfolded, Mixed: check.Mixed}
	if err := c.handoff(ctx, p, step, check, map[string][]byte{setInTick: tick.Bytes()}, n); err != nil {
		return nil, err
	}
	return &Step{Name: step, Bytes: n.Bytes}, nil
}

// readInTick adds the in-tick ledger entries of every scan step (their
// notes) to check.
func (c *Parted) readInTick(ctx context.Context, p *Plan, check *engine.AsOfCheck, scans []notes) error {
	_, err := c.load(ctx, p, scans, setInTick, 0, func(r io.Reader, what string) error { return check.ReadInTick(r, what) })
	return err
}

// File is the file step of one of the plan's files.
func (c *Parted) File(ctx context.Context, p *Plan, file string) (_ *Step, err error) {
	index := slices.Index(p.Files, file)
	if index < 0 {
		return nil, fmt.Errorf("verify job %s: %q is not one of its %d data files", p.Job, file, len(p.Files))
	}
	step := stepName("file", index)
	check, err := c.check(p)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, check.Close()) }()
	scans, err := c.notesOf(ctx, p, "scan")
	if err != nil {
		return nil, err
	}
	if err := c.readInTick(ctx, p, check, scans); err != nil {
		return nil, err
	}
	check.StartAt(int64(index+1) << 40)
	keys := KeyAttributes(c.Options.Decode, c.Overlay)
	batch := make([]pipeline.Item, 0, 256)
	add := func(it pipeline.Item) error {
		batch = append(batch, it)
		if len(batch) == cap(batch) {
			err := check.AddExportItems(batch, keys)
			batch = batch[:0]
			return err
		}
		return nil
	}
	if file == overlayFile {
		for _, e := range c.Overlay.Entries() {
			if e.Item != nil {
				if err := add(e.Item); err != nil {
					return nil, err
				}
			}
		}
	} else if err := dataFileItems(ctx, c.Full, c.Overlay, c.Options.Decode, c.Options.SkipMD5, file, add); err != nil {
		return nil, fmt.Errorf("verify step %s (%s): %w", step, file, err)
	}
	if err := check.AddExportItems(batch, keys); err != nil {
		return nil, err
	}
	n := &notes{Items: check.Items, Changed: check.Changed, Unjudged: check.Unjudged}
	if err := c.handoff(ctx, p, step, check, nil, n); err != nil {
		return nil, err
	}
	return &Step{Name: step, Items: n.Items, Bytes: n.Bytes}, nil
}

// dataFileItems passes the items of one data file of full to add, but
// for those overlay (nil: none) holds: those come after every data file's
// (the overlay's file step; Check's order too).
func dataFileItems(ctx context.Context, full *export.Export, overlay *export.Overlay, opts pipeline.Options, skipMD5 bool, file string, add func(pipeline.Item) error) error {
	i := slices.IndexFunc(full.Files, func(f export.DataFile) bool { return f.DataFileS3Key == file })
	if i < 0 {
		return fmt.Errorf("%s is not a data file of %s", file, full)
	}
	f := full.Files[i]
	if overlay != nil && len(overlay.KeyAttributes) > 0 {
		opts.KeyAttributes = overlay.KeyAttributes
	}
	dec := pipeline.NewExportDecoder(opts)
	name := objstore.Name(full.Store(), full.DataKey(f))
	_, err := full.ReadLines(ctx, f, skipMD5, func(line []byte, n int) error {
		ch, err := export.DecodeItem(dec, line, name, n)
		if err != nil {
			return err
		}
		if overlay != nil && overlay.Len() > 0 {
			if _, ok := overlay.Lookup(overlay.KeyOf(ch.New)); ok {
				return nil
			}
		}
		return add(ch.New)
	})
	return err
}

// exportItems passes every item of full with overlay (nil: none) applied
// to add, in the order a parted check numbers them: each data file's, in
// the order of their names, but for the items the overlay holds, then the
// overlay's.
func exportItems(ctx context.Context, full *export.Export, overlay *export.Overlay, opts pipeline.Options, skipMD5 bool, add func(pipeline.Item) error) error {
	files := make([]string, 0, len(full.Files))
	for _, f := range full.Files {
		files = append(files, f.DataFileS3Key)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := dataFileItems(ctx, full, overlay, opts, skipMD5, f, add); err != nil {
			return err
		}
	}
	if overlay != nil {
		for _, e := range overlay.Entries() {
			if e.Item != nil {
				if err := add(e.Item); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// load reads the objects the steps of steps handed over of set's
// partition part, each through read, and checks each is whole: there,
// and of the size handed over. It returns the bytes read.
func (c *Parted) load(ctx context.Context, p *Plan, steps []notes, set string, part int, read func(r io.Reader, what string) error) (int64, error) {
	var n int64
	for _, st := range steps {
		for _, o := range st.Objects {
			if o.Set != set || o.Part != part {
				continue
			}
			r, err := c.open(ctx, p, o)
			if err != nil {
				return n, err
			}
			what := objstore.Name(c.Work, o.Key)
			cr := &countingReader{r: r}
			err = read(cr, what)
			if err == nil {
				_, err = io.Copy(io.Discard, cr) // a reader that stopped early: the size below
			}
			n += cr.n
			if err := errors.Join(err, r.Close()); err != nil {
				return n, err
			}
			if cr.n != o.Size {
				return n, fmt.Errorf("verify job %s: %s is %d bytes, but %d were handed over: not the object its step wrote", p.Job, what, cr.n, o.Size)
			}
		}
	}
	return n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Join is the join step of item partition part.
func (c *Parted) Join(ctx context.Context, p *Plan, part int) (_ *Step, err error) {
	if part < 0 || part >= p.Parts {
		return nil, fmt.Errorf("verify job %s: no partition %d (it has %d)", p.Job, part, p.Parts)
	}
	scans, err := c.notesOf(ctx, p, "scan")
	if err != nil {
		return nil, err
	}
	files, err := c.notesOf(ctx, p, "file")
	if err != nil {
		return nil, err
	}
	step := stepName("join", part)
	check, err := c.check(p)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, check.Close()) }()
	if err := c.readInTick(ctx, p, check, scans); err != nil {
		return nil, err
	}
	load := func(r io.Reader, what string) error { return check.Load(engine.HandoffItems, part, r, what) }
	if _, err := c.load(ctx, p, append(scans, files...), engine.HandoffItems, part, load); err != nil {
		return nil, err
	}
	if err := check.Join(part); err != nil {
		return nil, fmt.Errorf("verify step %s: %w", step, err)
	}
	n := &notes{Changed: check.Changed, Unjudged: check.Unjudged, Refused: check.Refused}
	if err := c.handoff(ctx, p, step, check, nil, n); err != nil {
		return nil, err
	}
	return &Step{Name: step, Bytes: n.Bytes}, nil
}

// Compare is the compare step of part.
func (c *Parted) Compare(ctx context.Context, p *Plan, part int) (_ *Step, err error) {
	if part < 0 || part >= p.Parts {
		return nil, fmt.Errorf("verify job %s: no partition %d (it has %d)", p.Job, part, p.Parts)
	}
	steps, err := c.notesOf(ctx, p, "scan", "file", "join")
	if err != nil {
		return nil, err
	}
	step := stepName("compare", part)
	check, err := c.check(p)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, check.Close()) }()
	load := func(r io.Reader, what string) error { return check.Load(engine.HandoffParts, part, r, what) }
	read, err := c.load(ctx, p, steps, engine.HandoffParts, part, load)
	if err != nil {
		return nil, err
	}
	diff, err := check.ComparePart(ctx, part)
	if err != nil {
		return nil, fmt.Errorf("verify step %s: %w", step, err)
	}
	n := &notes{Differences: diff, More: check.More}
	n.Aggregates, n.Rows = check.Expected()
	if err := c.handoff(ctx, p, step, nil, nil, n); err != nil {
		return nil, err
	}
	// n is now the first attempt's notes, which stand.
	return &Step{Name: step, Bytes: read, Differences: int64(len(n.Differences)) + n.More}, nil
}

// Finish sums every step's notes into Check's Result, after every compare
// step is done.
func (c *Parted) Finish(ctx context.Context, p *Plan) (*Result, error) {
	compares, err := c.notesOf(ctx, p, "compare")
	if err != nil {
		return nil, err
	}
	all, err := c.notesOf(ctx, p, "scan", "file", "join")
	if err != nil {
		return nil, err
	}
	all = append(all, compares...)
	res := &Result{AsOf: p.AsOf}
	var lines []string
	for _, n := range all {
		res.Items += n.Items
		res.Changed += n.Changed
		res.Unfolded = append(res.Unfolded, n.Unfolded...)
		res.Mixed = append(res.Mixed, n.Mixed...)
		res.Unjudged = append(res.Unjudged, n.Unjudged...)
		res.Aggregates += n.Aggregates
		res.Rows += n.Rows
		res.More += n.More
		res.Spilled += n.Bytes
		lines = append(lines, n.Differences...)
		for _, r := range n.Refused {
			res.Refused = append(res.Refused, r)
			if c.Options.Keep == nil || c.Options.Keep(r) {
				lines = append(lines, r)
			}
		}
	}
	sort.Strings(res.Unfolded)
	sort.Strings(res.Mixed)
	sort.Strings(res.Unjudged)
	sort.Strings(res.Refused)
	sort.Strings(lines)
	if m := c.Options.MaxNamed; m > 0 && len(lines) > m {
		res.More += int64(len(lines) - m)
		lines = lines[:m]
	}
	res.Differences = lines
	return res, nil
}

// Remove removes every object of a job (after Finish: its result is
// returned, and nothing reads them again).
func (c *Parted) Remove(ctx context.Context, job string) error {
	var keys []string
	err := c.Work.List(ctx, c.key(job)+"/", func(o objstore.Object) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return err
	}
	return parallel(ctx, len(keys), func(i int) error { return c.Work.Delete(ctx, keys[i]) })
}
