package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
)

// runRepartition is `tributary repartition`: split an export by entity type.
func runRepartition(ctx context.Context, e *Env, args []string) error {
	fs := e.FlagSet("repartition", "")
	var sf exportFlags
	sf.register(fs)
	fs.StringVar(&sf.kmsKey, "kms-key-id", "", "encrypt S3 output with SSE-KMS under this key (default SSE-S3)")
	out := fs.String("out", "", "output: a directory or s3://bucket/prefix (required)")
	transform := fs.String("transform", "", "rewrite items with a registered transform (see --list-transforms)")
	list := fs.Bool("list-transforms", false, "list the registered transforms and exit")
	workers := fs.Int("workers", runtime.NumCPU(), "data files repartitioned at once (each also compresses its entity types in parallel)")
	compression := fs.String("compression", "gzip", "output compression: gzip, zstd or none (ImportTable reads all three)")
	level := fs.Int("level", repartition.DefaultLevel, "compression level (-1: the codec's default: gzip 5, zstd 3)")
	partMB := fs.Int64("max-part-mb", 512, "start a new part file after this many MB of uncompressed lines")
	force := fs.Bool("force", false, "redo everything, even a complete output of the same inputs")
	takeover := fs.Bool("takeover", false, "take the output over from the run that holds it (its claim, "+repartition.ClaimKey+"): say so only when that run is gone")
	noSync := fs.Bool("no-sync", false, "do not fsync local output (faster; a power cut may then lose committed files)")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if *list {
		for _, name := range e.Environment.TransformNames() {
			t, _ := e.Environment.Transform(name)
			fmt.Fprintf(e.Stdout, "%-16s %s (types: %s)\n", t.Name, t.Doc, strings.Join(t.Types(), ", "))
		}
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	comp, err := repartition.ParseCompression(*compression)
	if err != nil {
		return fmt.Errorf("%w: --compression: %v", errUsage, err)
	}
	if *workers < 1 {
		return fmt.Errorf("%w: --workers must be at least 1", errUsage)
	}
	if *partMB < 1 {
		return fmt.Errorf("%w: --max-part-mb must be at least 1", errUsage)
	}
	if err := sf.resolve(e); err != nil {
		return err
	}
	opts := repartition.Options{Decode: pipeline.Options{Schema: sf.schema}, Compression: comp, Level: *level, MaxPartBytes: *partMB << 20, SkipMD5: sf.skipMD5, Takeover: *takeover}
	if *transform != "" {
		t, err := e.Environment.Transform(*transform)
		if err != nil {
			return fmt.Errorf("%w: --transform: %v", errUsage, err)
		}
		opts.Transform = t
	}
	outLoc, err := objstore.Parse(*out)
	if err != nil {
		return fmt.Errorf("%w: --out: %v", errUsage, err)
	}
	sf.noSync = *noSync
	src, overlay, err := sf.open(ctx, e)
	if err != nil {
		return err
	}
	outStore, err := sf.store(ctx, outLoc)
	if err != nil {
		return err
	}
	prog := newByteProgress(e.Stderr, "repartition", src.Summary.ItemCount+overlay.Lines)
	opts.Progress = prog.add
	r, err := repartition.NewRepartitioner(src, overlay, outStore, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "repartition %s (%d data files, %d items", src, len(src.Files), src.Summary.ItemCount)
	if overlay.Len() > 0 {
		fmt.Fprintf(e.Stdout, "; %d incremental exports touching %d items", len(overlay.Exports), overlay.Len())
	}
	fmt.Fprintf(e.Stdout, ") into %s\n", outStore)
	start := time.Now()
	s, err := r.Run(ctx, *workers, *force)
	prog.done()
	if err != nil {
		return err
	}
	rep := r.Report()
	if o := rep.TookOver; o != nil {
		fmt.Fprintf(e.Stdout, "took over the output from %s, which is gone\n", o)
	}
	if rep.Swept > 0 {
		fmt.Fprintf(e.Stdout, "removed %d temporary files and incomplete uploads that a crashed run left\n", rep.Swept)
	}
	switch {
	case rep.AlreadyComplete:
		fmt.Fprintf(e.Stdout, "already complete: %s was written %s by a run of the same inputs and settings (--force redoes it)\n", repartition.SummaryKey, s.Finished)
	case rep.Resumed > 0:
		fmt.Fprintf(e.Stdout, "resumed: %d of %d data files were done by an earlier run; this run did the rest and wrote the summary\n", rep.Resumed, rep.Resumed+rep.Done)
	}
	printSummary(e.Stdout, s, time.Since(start), prog.bytes.Load())
	return nil
}

// printSummary prints a run's per-entity table and totals.
func printSummary(w io.Writer, s *repartition.RunSummary, took time.Duration, read int64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PARTITION\tENTITY TYPE\tITEMS\tPARTS\tMB\tMB UNCOMPRESSED\t")
	for _, en := range s.Entities {
		name := en.Entity
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t\n", quote.Printable(en.Segment), quote.Printable(name), en.ItemCount, en.Parts, float64(en.Bytes)/1e6, float64(en.UncompressedBytes)/1e6)
	}
	// A report for people, like the fmt.Fprint calls around it: a failed
	// write to the terminal has nowhere better to be reported.
	_ = tw.Flush()
	t := s.Totals
	fmt.Fprintf(w, "%d items in, %d out", t.SourceItems, t.OutputItems)
	if s.Transform != "" {
		fmt.Fprintf(w, " (transform %s: %d dropped, %d added)", s.Transform, t.Dropped, t.Added)
	}
	if len(s.Incrementals) > 0 {
		fmt.Fprintf(w, " (incremental: %d replaced, %d deleted, %d inserted)", t.Replaced, t.Deleted, t.Inserted)
	}
	if t.OrphansRemoved > 0 {
		fmt.Fprintf(w, "; removed %d stale objects of an earlier run", t.OrphansRemoved)
	}
	fmt.Fprintln(w)
	if read > 0 && took > 0 {
		fmt.Fprintf(w, "read %.0f MB uncompressed in %.1fs: %.0f MB/s\n", float64(read)/1e6, took.Seconds(), float64(read)/1e6/took.Seconds())
	}
}

// exportFlags are the flags that name an export and how to read it, shared
// by repartition and verify.
type exportFlags struct {
	export       string
	incrementals stringList
	attrs        schemaFlags
	// schema is the attributes the export's items are read by, from attrs
	// and the environment (resolve): no key attributes when neither names
	// them, so that an overlay's incremental exports say what they are.
	schema     pipeline.Schema
	skipMD5    bool
	noManifest bool
	kmsKey     string
	noSync     bool
	// reads, when set, counts what the command reads of the export, for
	// the progress of a command that has no count of its own (verify).
	reads *readCounter
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (f *exportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.export, "export", "", "the full export: its directory (…/AWSDynamoDB/<ExportId>) or a prefix holding one export; a directory or s3://bucket/prefix (required)")
	fs.Var(&f.incrementals, "incremental", "an incremental export to apply on top (repeatable; applied in time order)")
	f.attrs.register(fs, typeFlag|versionFlag|keysFlag)
	fs.BoolVar(&f.skipMD5, "skip-md5", false, "do not hash data files nor check them against the manifest's md5Checksum (faster; gzip CRCs and item counts are still checked)")
	fs.BoolVar(&f.noManifest, "allow-missing-manifest", false, "read an export directory without manifests (e.g. a local server's export): nothing can be reconciled")
}

// resolve sets f.schema from the flags and e's environment, after
// parsing (and after a --projections spec is applied to e).
func (f *exportFlags) resolve(e *Env) error {
	s, err := e.schema(f.attrs)
	if err != nil {
		return err
	}
	if len(e.Environment.Schema.KeyAttributes) == 0 && len(f.attrs.keyList()) == 0 {
		s.KeyAttributes = nil // the incremental exports' keys, or the decoders' PK, SK
	}
	f.schema = s
	return nil
}

// open opens the export and the overlay of its incremental exports; resolve
// must have been called.
func (f *exportFlags) open(ctx context.Context, e *Env) (*export.Export, *export.Overlay, error) {
	if f.export == "" {
		return nil, nil, fmt.Errorf("%w: --export is required", errUsage)
	}
	loc, err := objstore.Parse(f.export)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: --export: %v", errUsage, err)
	}
	oo := export.OpenOptions{AllowMissingManifest: f.noManifest}
	src, err := export.OpenExportAt(ctx, loc, f.source(ctx), oo)
	if err != nil {
		return nil, nil, err
	}
	if src.Summary.Incremental() {
		return nil, nil, fmt.Errorf("%w: --export %s is an incremental export; give the full export, and this one with --incremental", errUsage, f.export)
	}
	if src.NoManifest {
		fmt.Fprintf(e.Stderr, "%s: %s has no manifest: item counts and checksums cannot be reconciled\n", e.Name, src)
	}
	var incs []*export.Export
	for _, s := range f.incrementals {
		l, err := objstore.Parse(s)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --incremental: %v", errUsage, err)
		}
		inc, err := export.OpenExportAt(ctx, l, f.source(ctx), export.OpenOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("--incremental %s: %w", s, err)
		}
		incs = append(incs, inc)
	}
	ov, err := export.LoadOverlay(ctx, src, incs, pipeline.Options{Schema: f.schema}, f.skipMD5)
	if err != nil {
		return nil, nil, err
	}
	return src, ov, nil
}

// store opens a location: a directory, or S3 through the default AWS
// configuration.
func (f *exportFlags) store(ctx context.Context, l objstore.Location) (objstore.Store, error) {
	return openLocation(ctx, l, "", objstore.S3Options{KMSKeyID: f.kmsKey}, f.noSync)
}

// source is store for reading exports.
func (f *exportFlags) source(ctx context.Context) func(objstore.Location) (export.Source, error) {
	return func(l objstore.Location) (export.Source, error) {
		st, err := f.store(ctx, l)
		if err != nil || f.reads == nil {
			return st, err
		}
		return countingSource{Source: st, c: f.reads}, nil
	}
}

// countReads makes the export's reads counted for a progress line of
// verb's, whose total and per-file counts count.start sets once the
// export is open.
func (f *exportFlags) countReads(e *Env, verb string) *readCounter {
	f.reads = &readCounter{prog: newByteProgress(e.Stderr, verb, 0)}
	return f.reads
}

// readCounter counts the bytes read of an export's data files and, as
// each is read to its end, its items (the manifest's count).
type readCounter struct {
	prog  *byteProgress
	items map[string]int64 // data file name (unique in an export) → items; set by start
}

// start sets the totals from the open export (and its incremental
// exports' lines).
func (c *readCounter) start(src *export.Export, overlay *export.Overlay) {
	c.items = map[string]int64{}
	for _, df := range src.Files {
		c.items[path.Base(df.DataFileS3Key)] = df.ItemCount
	}
	c.prog.total = src.Summary.ItemCount
	if overlay != nil {
		c.prog.total += overlay.Lines
	}
}

type countingSource struct {
	export.Source
	c *readCounter
}

func (s countingSource) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := s.Source.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return &countingReader{ReadCloser: rc, c: s.c, key: key}, nil
}

type countingReader struct {
	io.ReadCloser
	c   *readCounter
	key string
	eof bool
}

func (r *countingReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	items := int64(0)
	if err == io.EOF && !r.eof {
		r.eof = true
		items = r.c.items[path.Base(r.key)]
	}
	r.c.prog.add(int64(n), items)
	return n, err
}

// progressEvery is how often a long command writes a progress line when
// stderr is not a terminal (a script, a CI job, a log): one whole line
// each time, where a terminal gets one line rewritten every second.
var progressEvery = 30 * time.Second

// byteProgress prints a progress line (bytes, items, rate, ETA): on a
// terminal, one line rewritten every second; elsewhere a line of its own
// every progressEvery. add and print are safe for concurrent use.
type byteProgress struct {
	mu           sync.Mutex // one write to w at a time
	w            io.Writer
	verb         string
	unit         string // what add's first argument counts: "MB" (bytes), "WCU" or "items"
	total        int64
	bytes, items atomic.Int64
	start        time.Time
	last         atomic.Int64
	tty          bool
	every        time.Duration
}

func newByteProgress(w io.Writer, verb string, totalItems int64) *byteProgress {
	p := &byteProgress{w: w, verb: verb, unit: "MB", total: totalItems, start: time.Now(), tty: isTerminal(w), every: progressEvery}
	if p.tty {
		p.every = time.Second
	}
	p.last.Store(p.start.UnixNano())
	return p
}

func (p *byteProgress) add(bytes, items int64) {
	b, n := p.bytes.Add(bytes), p.items.Add(items)
	now := time.Now().UnixNano()
	last := p.last.Load()
	if now-last < int64(p.every) || !p.last.CompareAndSwap(last, now) {
		return
	}
	line := p.line(b, n, time.Since(p.start))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r"+line+"   ")
		return
	}
	fmt.Fprintln(p.w, line)
}

// print writes a whole line of its own beside the progress (on a
// terminal, over the progress line, which the next add writes again).
func (p *byteProgress) print(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, line)
}

// addItems adds n items to a progress whose unit is "items".
func (p *byteProgress) addItems(n int64) { p.add(n, n) }

// line is the progress: the amount, the items of how many, the rate and
// the time left at that rate.
func (p *byteProgress) line(b, n int64, elapsed time.Duration) string {
	el := max(elapsed.Seconds(), 1e-3)
	amount := float64(b)
	if p.unit == "MB" {
		amount /= 1e6
	}
	line := fmt.Sprintf("%s: %.0f %s, %d items", p.verb, amount, p.unit, n)
	if p.unit == "items" {
		line = fmt.Sprintf("%s: %d items", p.verb, n)
	}
	if p.total > 0 {
		pct := min(100, float64(n)*100/float64(p.total))
		eta := 0.0
		if n > 0 && n < p.total {
			eta = el * float64(p.total-n) / float64(n)
		}
		line += fmt.Sprintf(" of %d (%.0f%%), %.0f %s/s, ETA %s", p.total, pct, amount/el, p.unit, time.Duration(eta*float64(time.Second)).Round(time.Second))
	} else {
		line += fmt.Sprintf(", %.0f %s/s", amount/el, p.unit)
	}
	if !p.tty {
		line += fmt.Sprintf(", %s elapsed", elapsed.Round(time.Second))
	}
	return line
}

func (p *byteProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && time.Since(p.start) > time.Second {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
