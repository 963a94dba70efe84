package repartition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Options configures a repartition. The zero value is ready to use.
type Options struct {
	// Transform, when set, rewrites items of the types it names.
	Transform *projections.Transform
	// Compression of the output. Default gzip.
	Compression Compression
	// Level is the compression level (DefaultLevel: the codec's default).
	Level int
	// MaxPartBytes starts a new part once a part holds this many
	// uncompressed bytes. Default 512 MiB.
	MaxPartBytes int64
	// SkipMD5 skips checking data files against the manifest's md5Checksum.
	SkipMD5 bool
	// Decode configures the decoding of items, which its Schema names: the
	// entity type's attribute (default EntityType), the version's, and the
	// table's key attributes, of which every item must have one (default:
	// the incremental exports' keys with an overlay, else PK, SK).
	Decode pipeline.Options
	// Progress, when set, is called now and then, from several goroutines,
	// with the uncompressed bytes and the items read since its last call.
	Progress func(bytes, items int64)
	// Now returns the time recorded in the summary. Default time.Now.
	Now func() time.Time
	// Owner is the run, in the output's claim (ClaimKey). Default: this
	// process (objstore.NewOwner). The steps of one Step Functions
	// execution share one, named by the execution.
	Owner objstore.Owner
	// Takeover takes the claim over from whatever run holds it: the caller
	// asserts that it is gone (a run of another machine that crashed).
	Takeover bool
	// TakeoverAdvice is what the error of a claim another run holds tells
	// the operator to do, if that run is gone, to take it over. Default:
	// the command's flag, "rerun with --takeover". OpenJob (Step Functions)
	// names its job field instead.
	TakeoverAdvice string
}

func (o Options) withDefaults() Options {
	if o.Decode.TypeAttribute == "" {
		o.Decode.TypeAttribute = pipeline.DefaultTypeAttribute
	}
	if o.Compression == "" {
		o.Compression = Gzip
	}
	if o.Level == 0 {
		o.Level = DefaultLevel
	}
	if o.MaxPartBytes <= 0 {
		o.MaxPartBytes = 512 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TakeoverAdvice == "" {
		o.TakeoverAdvice = "rerun with --takeover"
	}
	return o
}

// maxSourceID is the longest source ID: part-<id>-<seq of up to 6
// digits>.json.zst fits in a file name.
const maxSourceID = objstore.MaxSegmentBytes - len("part--000000.json.zst")

// Repartitioner splits one export (optionally with an incremental overlay)
// into per-entity output under out.
type Repartitioner struct {
	src         *export.Export
	overlay     *export.Overlay
	out         objstore.Store
	opts        Options
	fingerprint string
	ids         map[string]string // data file key → source ID
	files       map[string]export.DataFile
	c           claims
}

// NewRepartitioner prepares a repartition of src into out. overlay may be
// nil.
func NewRepartitioner(src *export.Export, overlay *export.Overlay, out objstore.Store, opts Options) (*Repartitioner, error) {
	opts = opts.withDefaults()
	if _, err := ParseCompression(string(opts.Compression)); err != nil {
		return nil, err
	}
	zw, err := newCompressor(opts.Compression, opts.Level, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("repartition: %s level %d: %w", opts.Compression, opts.Level, err)
	}
	_ = zw.Close()
	if overlay == nil {
		overlay = &export.Overlay{}
	}
	if len(overlay.KeyAttributes) > 0 {
		if keys := opts.Decode.KeyAttributes; len(keys) > 0 && !sameNames(keys, overlay.KeyAttributes) {
			return nil, fmt.Errorf("repartition: key attributes %v, but the incremental exports' keys are %v", keys, overlay.KeyAttributes)
		}
		opts.Decode.KeyAttributes = overlay.KeyAttributes
	}
	r := &Repartitioner{src: src, overlay: overlay, out: out, opts: opts, ids: map[string]string{}, files: map[string]export.DataFile{}}
	h := sha256.New()
	tname := ""
	if opts.Transform != nil {
		tname = opts.Transform.Name
	}
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n%s\n%d\n%d\n", FormatVersion, src.ManifestSHA256, overlay.Fingerprint(),
		opts.Decode.TypeAttribute, tname, opts.Compression, opts.Level, opts.MaxPartBytes)
	if keys := opts.Decode.KeyAttributes; len(keys) > 0 && !slices.Equal(keys, pipeline.DefaultKeyAttributes()) {
		// The key attributes decide which lines are valid: another set is
		// another run. (Absent for the default, as before it was configurable.)
		fmt.Fprintf(h, "keys %q\n", keys)
	}
	r.fingerprint = hex.EncodeToString(h.Sum(nil))[:32]
	seen := map[string]bool{overlaySource: true}
	files := append([]export.DataFile(nil), src.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].DataFileS3Key < files[j].DataFileS3Key })
	for i, f := range files {
		key := src.DataKey(f)
		id := path.Base(key)
		for _, ext := range []string{".gz", ".json"} {
			id = strings.TrimSuffix(id, ext)
		}
		// The ID names the part files, part-<id>-<seq>.json.zst, and the
		// record, _parts/<id>.json: it is kept short enough for both.
		id = objstore.FitName("", id, "", maxSourceID)
		if id == "" || seen[id] {
			id = fmt.Sprintf("%s-%d", id, i)
		}
		seen[id] = true
		r.ids[key] = id
		r.files[key] = f
	}
	if err := checkOutput(out, r); err != nil {
		return nil, err
	}
	if r.opts.Owner.ID == "" {
		r.opts.Owner = objstore.NewOwner(fmt.Sprintf("repartition of %s (fingerprint %s)", src, r.fingerprint))
	}
	return r, nil
}

// Fingerprint identifies the run's inputs and settings; a rerun with the
// same fingerprint resumes, one with another redoes.
func (r *Repartitioner) Fingerprint() string { return r.fingerprint }

// dataFiles returns the keys of the source data files, largest (by item
// count) first: the order that keeps every worker busy to the end.
func (r *Repartitioner) dataFiles() []string {
	keys := make([]string, 0, len(r.files))
	for k := range r.files {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := r.files[keys[i]], r.files[keys[j]]
		if a.ItemCount != b.ItemCount {
			return a.ItemCount > b.ItemCount
		}
		return keys[i] < keys[j]
	})
	return keys
}

// begin starts (or resumes) a run: it takes the output's claim (refusing
// an output another run is writing) and removes what crashed writes left
// there. If the output already holds a complete run of the same inputs and
// settings, it releases the claim and returns that summary, and the caller
// has nothing to do (unless force, which discards it). A summary of other
// inputs or settings is deleted first, so that the output never looks
// complete while it is being rewritten.
func (r *Repartitioner) begin(ctx context.Context, force bool) (*RunSummary, error) {
	if err := r.hold(ctx); err != nil {
		return nil, err
	}
	b, err := objstore.ReadAll(ctx, r.out, SummaryKey)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return nil, r.sweep(ctx)
	case err != nil:
		return nil, err
	}
	var s RunSummary
	if err := json.Unmarshal(b, &s); err == nil && s.Fingerprint == r.fingerprint && !force && currentSegments(&s) {
		r.count(func(rp *Report) { rp.AlreadyComplete = true })
		return &s, r.release(ctx)
	}
	if err := r.sweep(ctx); err != nil {
		return nil, err
	}
	if err := r.out.Delete(ctx, SummaryKey); err != nil {
		return nil, err
	}
	if force {
		// Redo every source: forget the records of this fingerprint.
		var keys []string
		if err := r.out.List(ctx, recordsDir, func(o objstore.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
			return nil, err
		}
		for _, k := range keys {
			if err := r.out.Delete(ctx, k); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

// record returns the committed record of a source, or nil when the source
// is not done under this run's fingerprint.
func (r *Repartitioner) record(ctx context.Context, sourceID string) (*SourceRecord, error) {
	b, err := objstore.ReadAll(ctx, r.out, recordKey(sourceID))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec SourceRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Fingerprint != r.fingerprint || rec.Version != FormatVersion {
		return nil, nil
	}
	for _, p := range rec.Parts {
		if path.Dir(p.Key) != EntitySegment(p.Entity) {
			// Written by a version that named long types by a shorter
			// hash: redone under the present name (the old parts are
			// then orphans, which Finish removes).
			return nil, nil
		}
	}
	return &rec, nil
}

// currentSegments reports whether a summary's entities are under the
// segments this version gives their types: a summary of a version that
// named long types by a shorter hash is not taken as complete, so that the
// run redoes those types under their present names.
func currentSegments(s *RunSummary) bool {
	for _, e := range s.Entities {
		if e.Segment != EntitySegment(e.Entity) {
			return false
		}
	}
	return true
}

// sourceID returns the source ID of a data file key.
func (r *Repartitioner) sourceID(dataKey string) (string, bool) {
	id, ok := r.ids[dataKey]
	return id, ok
}

// sameNames reports whether a and b hold the same names, in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
