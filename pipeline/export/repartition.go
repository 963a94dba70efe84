package export

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/flate"

	"github.com/tributary/tributary/pipeline"
)

// Output layout of a repartition, under the output location:
//
//	entity=<Type>/part-<source>-<seq>.json.gz   item lines, {"Item":{...}}, as ImportTable reads them
//	entity=<Type>/_manifest.json                that entity's parts, item counts, bytes and checksums
//	_parts/<source>.json                        one record per source data file: the unit of resume
//	_summary.json                               written last: its presence means the output is complete
const (
	SummaryKey   = "_summary.json"
	recordsDir   = "_parts/"
	manifestName = "_manifest.json"
	// OverlaySource is the source ID of the items that incremental exports
	// add and the full export does not have.
	OverlaySource = "_incremental"
	formatVersion = "tributary-repartition/1"
)

// Options configures a repartition. The zero value is ready to use.
type Options struct {
	// TypeAttribute names the entity-type attribute. Default EntityType.
	TypeAttribute string
	// KeyAttributes names the table's key attributes, of which every item
	// must have one, as the decoders require. Default: the incremental
	// exports' keys with an overlay, else Decode's (PK, SK).
	KeyAttributes []string
	// Transform, when set, rewrites items of the types it names.
	Transform *Transform
	// Compression of the output. Default gzip.
	Compression Compression
	// Level is the compression level (DefaultLevel: the codec's default).
	Level int
	// MaxPartBytes starts a new part once a part holds this many
	// uncompressed bytes. Default 512 MiB.
	MaxPartBytes int64
	// SkipMD5 skips checking data files against the manifest's md5Checksum.
	SkipMD5 bool
	// Decode configures the decoding of items that are transformed or
	// overlaid (its TypeAttribute is set from TypeAttribute).
	Decode pipeline.Options
	// Progress, when set, is called now and then, from several goroutines,
	// with the uncompressed bytes and the items read since its last call.
	Progress func(bytes, items int64)
	// Now returns the time recorded in the summary. Default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.TypeAttribute == "" {
		o.TypeAttribute = pipeline.DefaultTypeAttribute
	}
	o.Decode.TypeAttribute = o.TypeAttribute
	if len(o.KeyAttributes) > 0 {
		o.Decode.KeyAttributes = o.KeyAttributes
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
	return o
}

// PartInfo describes one output part.
type PartInfo struct {
	Key               string `json:"key"`
	Items             int64  `json:"itemCount"`
	Bytes             int64  `json:"bytes"`
	UncompressedBytes int64  `json:"uncompressedBytes"`
	// MD5 is the base64 MD5 of the object's bytes, as S3's Content-MD5 and
	// the export manifest's md5Checksum spell it.
	MD5 string `json:"md5Checksum"`
	// Entity is the entity type ("" for items without one).
	Entity string `json:"entity"`
}

// SourceRecord is written under _parts/ once every part of one source data
// file is committed. It is the unit of resume.
type SourceRecord struct {
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	SourceID    string `json:"sourceId"`
	// Source is the data file's key in the export's store.
	Source            string `json:"source"`
	Lines             int64  `json:"lines"`
	CompressedBytes   int64  `json:"compressedBytes"`
	UncompressedBytes int64  `json:"uncompressedBytes"`
	MD5               string `json:"md5Checksum,omitempty"`
	ItemsOut          int64  `json:"itemsOut"`
	// Dropped counts items a transform dropped; Added, extra items a
	// transform split off.
	Dropped int64 `json:"dropped"`
	Added   int64 `json:"added"`
	// Overlay counts: items replaced by a newer image, items deleted, and
	// (for OverlaySource) items inserted.
	Replaced int64 `json:"overlayReplaced"`
	Deleted  int64 `json:"overlayDeleted"`
	Inserted int64 `json:"overlayInserted"`
	// OverlayKeys are the keys of this file's items that the overlay
	// touched (so that a resumed run knows which overlay items are new).
	OverlayKeys []string   `json:"overlayKeys,omitempty"`
	Parts       []PartInfo `json:"parts"`
}

// EntityManifest is entity=<Type>/_manifest.json.
type EntityManifest struct {
	Version string `json:"version"`
	// Entity is the entity type ("" for UnknownEntity); Segment its
	// partition, "entity=<encoded type>".
	Entity  string `json:"entity"`
	Segment string `json:"segment"`
	// ImportPrefix is the key prefix, below the output location, that
	// matches exactly this entity's parts: the S3KeyPrefix for ImportTable.
	ImportPrefix      string      `json:"importPrefix"`
	Compression       Compression `json:"compression"`
	ItemCount         int64       `json:"itemCount"`
	Bytes             int64       `json:"bytes"`
	UncompressedBytes int64       `json:"uncompressedBytes"`
	Parts             []PartInfo  `json:"parts"`
	// PartsSHA256 is the hex SHA-256 of the lines "key md5 itemCount\n" of
	// the parts in key order: one checksum for the entity's whole content.
	PartsSHA256 string `json:"partsSha256"`
}

// RunSummary is _summary.json, written last.
type RunSummary struct {
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	Source      struct {
		Location  string `json:"location"`
		ExportARN string `json:"exportArn,omitempty"`
		ExportID  string `json:"exportId"`
		TableARN  string `json:"tableArn,omitempty"`
		Time      string `json:"exportTime,omitempty"`
		ItemCount int64  `json:"itemCount"`
		DataFiles int    `json:"dataFiles"`
		Manifest  string `json:"manifestSha256"`
	} `json:"source"`
	Incrementals  []string    `json:"incrementals,omitempty"`
	TypeAttribute string      `json:"typeAttribute"`
	Transform     string      `json:"transform,omitempty"`
	Compression   Compression `json:"compression"`
	Entities      []struct {
		Entity            string `json:"entity"`
		Segment           string `json:"segment"`
		Manifest          string `json:"manifest"`
		ManifestSHA256    string `json:"manifestSha256"`
		ItemCount         int64  `json:"itemCount"`
		Parts             int    `json:"parts"`
		Bytes             int64  `json:"bytes"`
		UncompressedBytes int64  `json:"uncompressedBytes"`
	} `json:"entities"`
	Totals struct {
		SourceItems       int64 `json:"sourceItems"`
		OutputItems       int64 `json:"outputItems"`
		CompressedBytes   int64 `json:"sourceCompressedBytes"`
		UncompressedBytes int64 `json:"sourceUncompressedBytes"`
		OutputBytes       int64 `json:"outputBytes"`
		Dropped           int64 `json:"dropped"`
		Added             int64 `json:"added"`
		Replaced          int64 `json:"overlayReplaced"`
		Deleted           int64 `json:"overlayDeleted"`
		Inserted          int64 `json:"overlayInserted"`
		OrphansRemoved    int   `json:"orphansRemoved"`
	} `json:"totals"`
	Finished string `json:"finished"`
}

// Repartitioner splits one export (optionally with an incremental overlay)
// into per-entity output under out.
type Repartitioner struct {
	src         *Export
	overlay     *Overlay
	out         Store
	opts        Options
	fingerprint string
	ids         map[string]string // data file key → source ID
	files       map[string]DataFile
}

// NewRepartitioner prepares a repartition of src into out. overlay may be
// nil.
func NewRepartitioner(src *Export, overlay *Overlay, out Store, opts Options) (*Repartitioner, error) {
	opts = opts.withDefaults()
	if _, err := ParseCompression(string(opts.Compression)); err != nil {
		return nil, err
	}
	zw, err := newCompressor(opts.Compression, opts.Level, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("export: %s level %d: %w", opts.Compression, opts.Level, err)
	}
	_ = zw.Close()
	if overlay == nil {
		overlay = &Overlay{}
	}
	if len(overlay.KeyAttributes) > 0 {
		if len(opts.KeyAttributes) > 0 && !sameNames(opts.KeyAttributes, overlay.KeyAttributes) {
			return nil, fmt.Errorf("export: key attributes %v, but the incremental exports' keys are %v", opts.KeyAttributes, overlay.KeyAttributes)
		}
		opts.Decode.KeyAttributes = overlay.KeyAttributes
	}
	r := &Repartitioner{src: src, overlay: overlay, out: out, opts: opts, ids: map[string]string{}, files: map[string]DataFile{}}
	h := newSHA256()
	tname := ""
	if opts.Transform != nil {
		tname = opts.Transform.Name
	}
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n%s\n%d\n%d\n", formatVersion, src.ManifestSHA256, overlay.Fingerprint(),
		opts.TypeAttribute, tname, opts.Compression, opts.Level, opts.MaxPartBytes)
	r.fingerprint = hexSum(h)[:32]
	seen := map[string]bool{OverlaySource: true}
	files := append([]DataFile(nil), src.Files...)
	sortFiles(files)
	for i, f := range files {
		key := src.DataKey(f)
		id := path.Base(key)
		for _, ext := range []string{".gz", ".json"} {
			id = strings.TrimSuffix(id, ext)
		}
		if id == "" || seen[id] {
			id = fmt.Sprintf("%s-%d", id, i)
		}
		seen[id] = true
		r.ids[key] = id
		r.files[key] = f
	}
	return r, nil
}

// sameNames reports whether a and b hold the same names, in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Fingerprint identifies the run's inputs and settings; a rerun with the
// same fingerprint resumes, one with another redoes.
func (r *Repartitioner) Fingerprint() string { return r.fingerprint }

// DataFiles returns the keys of the source data files, largest (by item
// count) first: the order that keeps every worker busy to the end.
func (r *Repartitioner) DataFiles() []string {
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

// Begin starts (or resumes) a run. If the output already holds a complete
// run of the same inputs and settings, it returns that summary and the
// caller has nothing to do (unless force, which discards it). A summary of
// other inputs or settings is deleted first, so that the output never looks
// complete while it is being rewritten.
func (r *Repartitioner) Begin(ctx context.Context, force bool) (*RunSummary, error) {
	b, err := readAll(ctx, r.out, SummaryKey)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	var s RunSummary
	if err := json.Unmarshal(b, &s); err == nil && s.Fingerprint == r.fingerprint && !force {
		return &s, nil
	}
	if err := r.out.Delete(ctx, SummaryKey); err != nil {
		return nil, err
	}
	if force {
		// Redo every source: forget the records of this fingerprint.
		var keys []string
		r.out.List(ctx, recordsDir, func(o Object) error { keys = append(keys, o.Key); return nil })
		for _, k := range keys {
			if err := r.out.Delete(ctx, k); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

func recordKey(id string) string { return recordsDir + id + ".json" }

// Record returns the committed record of a source, or nil when the source
// is not done under this run's fingerprint.
func (r *Repartitioner) Record(ctx context.Context, sourceID string) (*SourceRecord, error) {
	b, err := readAll(ctx, r.out, recordKey(sourceID))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec SourceRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Fingerprint != r.fingerprint || rec.Version != formatVersion {
		return nil, nil
	}
	return &rec, nil
}

// SourceID returns the source ID of a data file key.
func (r *Repartitioner) SourceID(dataKey string) (string, bool) {
	id, ok := r.ids[dataKey]
	return id, ok
}

// ProcessFile repartitions one data file (by its key in the export's store)
// and commits its record. A file already done under this fingerprint is
// skipped and its record returned (resumed is then true).
func (r *Repartitioner) ProcessFile(ctx context.Context, dataKey string) (rec *SourceRecord, resumed bool, err error) {
	id, ok := r.ids[dataKey]
	if !ok {
		return nil, false, fmt.Errorf("export: %s is not a data file of %s", dataKey, r.src)
	}
	if rec, err := r.Record(ctx, id); err != nil || rec != nil {
		return rec, rec != nil, err
	}
	f := r.files[dataKey]
	w := r.newSourceWriter(ctx, id)
	rec = &SourceRecord{Version: formatVersion, Fingerprint: r.fingerprint, SourceID: id, Source: dataKey}
	name := join(r.src.store.String(), dataKey)
	dec := pipeline.NewExportDecoder(r.opts.Decode)
	sc := newScanner(dec)
	overlay := r.overlay.Len() > 0
	var lineBuf []byte
	var pBytes, pItems int64
	stats, err := r.src.ReadLines(w.ctx, f, r.opts.SkipMD5, func(line []byte, n int) error {
		pBytes += int64(len(line)) + 1
		pItems++
		if pItems == 4096 && r.opts.Progress != nil {
			r.opts.Progress(pBytes, pItems)
			pBytes, pItems = 0, 0
		}
		if !overlay {
			typ, _, err := sc.scanItemLine(line)
			if err != nil {
				return &FileError{File: name, Line: n, Err: corrupt{err}}
			}
			if r.opts.Transform == nil || r.opts.Transform.ByType[string(typ)] == nil {
				return w.addBytes(typ, line)
			}
		}
		c, err := dec.DecodeItem(line, name, n)
		if err != nil {
			return &FileError{File: name, Line: n, Err: corrupt{decodeCause(err)}}
		}
		item, typ, replaced := c.New, c.NewType, false
		if overlay {
			key := r.overlay.KeyOf(item)
			if ent, ok := r.overlay.Lookup(key); ok {
				rec.OverlayKeys = append(rec.OverlayKeys, key)
				if ent.Item == nil {
					rec.Deleted++
					return nil
				}
				item, typ, replaced = ent.Item, ent.Type, true
				rec.Replaced++
			}
		}
		fn := (TransformFunc)(nil)
		if r.opts.Transform != nil {
			fn = r.opts.Transform.ByType[typ]
		}
		if fn == nil {
			if !replaced {
				return w.add(typ, line)
			}
			lineBuf = appendItemLine(lineBuf[:0], item)
			return w.add(typ, lineBuf)
		}
		outs, err := fn(item)
		if err != nil {
			return &FileError{File: name, Line: n, Err: fmt.Errorf("transform %s: %w", r.opts.Transform.Name, err)}
		}
		switch {
		case len(outs) == 0:
			rec.Dropped++
		case len(outs) > 1:
			rec.Added += int64(len(outs) - 1)
		}
		for _, o := range outs {
			t, err := r.typeOf(o)
			if err != nil {
				return &FileError{File: name, Line: n, Err: fmt.Errorf("transform %s: %w", r.opts.Transform.Name, err)}
			}
			lineBuf = appendItemLine(lineBuf[:0], o)
			if err := w.add(t, lineBuf); err != nil {
				return err
			}
		}
		return nil
	})
	if r.opts.Progress != nil && (pBytes > 0 || pItems > 0) {
		r.opts.Progress(pBytes, pItems)
	}
	if err != nil {
		if w.ctx.Err() != nil {
			err = context.Cause(w.ctx) // a pipe's failure, not the reader's
		}
		w.abort(err)
		return nil, false, err
	}
	parts, err := w.close()
	if err != nil {
		return nil, false, err
	}
	rec.Lines, rec.CompressedBytes, rec.UncompressedBytes, rec.MD5 = stats.Lines, stats.CompressedBytes, stats.UncompressedBytes, stats.MD5
	if err := r.commitRecord(ctx, rec, parts); err != nil {
		return nil, false, err
	}
	return rec, false, nil
}

// typeOf returns the entity type of a transformed item.
func (r *Repartitioner) typeOf(item pipeline.Item) (string, error) {
	switch v := item[r.opts.TypeAttribute].(type) {
	case nil:
		return "", nil
	case *types.AttributeValueMemberS:
		return v.Value, nil
	}
	return "", fmt.Errorf("output item's %s is not a string", r.opts.TypeAttribute)
}

func (r *Repartitioner) commitRecord(ctx context.Context, rec *SourceRecord, parts []PartInfo) error {
	rec.Parts = parts
	for _, p := range parts {
		rec.ItemsOut += p.Items
	}
	want := rec.Lines - rec.Deleted - rec.Dropped + rec.Added + rec.Inserted
	if rec.ItemsOut != want {
		return fmt.Errorf("export: %s: wrote %d items, want %d (%d read, %d deleted, %d dropped, %d added, %d inserted)",
			rec.Source, rec.ItemsOut, want, rec.Lines, rec.Deleted, rec.Dropped, rec.Added, rec.Inserted)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return r.out.Put(ctx, recordKey(rec.SourceID), append(b, '\n'))
}

func appendItemLine(buf []byte, item pipeline.Item) []byte {
	buf = append(buf, `{"Item":`...)
	buf = pipeline.AppendItem(buf, item)
	return append(buf, '}')
}

// Run does the whole repartition: Begin, every data file with workers in
// parallel (resuming files already done), then Finish.
func (r *Repartitioner) Run(ctx context.Context, workers int, force bool) (*RunSummary, error) {
	if done, err := r.Begin(ctx, force); err != nil || done != nil {
		return done, err
	}
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	keys := r.DataFiles()
	next := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range min(workers, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				if _, _, err := r.ProcessFile(ctx, k); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel(err)
					}
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for _, k := range keys {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return r.Finish(ctx)
}

// Finish checks that every data file is done, writes the items only the
// incremental exports have, removes parts no record claims (left by a
// crashed or different run), and writes each entity's manifest and then the
// summary.
func (r *Repartitioner) Finish(ctx context.Context) (*RunSummary, error) {
	recs := map[string]*SourceRecord{}
	var missing []string
	for key, id := range r.ids {
		rec, err := r.Record(ctx, id)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			missing = append(missing, key)
			continue
		}
		recs[id] = rec
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("export: %d of %d data files are not repartitioned yet, e.g. %s", len(missing), len(r.ids), missing[0])
	}
	if r.overlay.Len() > 0 {
		rec, err := r.finishOverlay(ctx, recs)
		if err != nil {
			return nil, err
		}
		recs[OverlaySource] = rec
	}
	// Reconcile with the source manifest.
	var lines int64
	for id, rec := range recs {
		if id != OverlaySource {
			lines += rec.Lines
		}
	}
	if !r.src.NoManifest && lines != r.src.Summary.ItemCount {
		return nil, fmt.Errorf("export: read %d items from %s, but its manifest-summary.json says itemCount %d", lines, r.src, r.src.Summary.ItemCount)
	}
	claimed := map[string]PartInfo{}
	for _, rec := range recs {
		for _, p := range rec.Parts {
			claimed[p.Key] = p
		}
	}
	// Remove what no record claims; check that every claimed part is there.
	var orphans []string
	present := map[string]bool{}
	entities := map[string]bool{}
	for _, p := range claimed {
		entities[path.Dir(p.Key)] = true
	}
	err := r.out.List(ctx, "entity=", func(o Object) error {
		base := path.Base(o.Key)
		switch {
		case strings.HasPrefix(base, "part-"):
			if _, ok := claimed[o.Key]; ok {
				present[o.Key] = true
			} else {
				orphans = append(orphans, o.Key)
			}
		case base == manifestName && !entities[path.Dir(o.Key)]:
			orphans = append(orphans, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k := range claimed {
		if !present[k] {
			return nil, fmt.Errorf("export: part %s is recorded but missing from %s; rerun with --force", k, r.out)
		}
	}
	for _, k := range orphans {
		if err := r.out.Delete(ctx, k); err != nil {
			return nil, err
		}
	}
	// Per-entity manifests.
	byEntity := map[string][]PartInfo{}
	for _, p := range claimed {
		seg := path.Dir(p.Key)
		byEntity[seg] = append(byEntity[seg], p)
	}
	s := &RunSummary{Version: formatVersion, Fingerprint: r.fingerprint, TypeAttribute: r.opts.TypeAttribute, Compression: r.opts.Compression}
	s.Source.Location = r.src.String()
	s.Source.ExportARN = r.src.Summary.ExportARN
	s.Source.ExportID = r.src.ID
	s.Source.TableARN = r.src.Summary.TableARN
	s.Source.Time = r.src.Summary.ExportTime
	s.Source.ItemCount = lines
	s.Source.DataFiles = len(r.ids)
	s.Source.Manifest = r.src.ManifestSHA256
	for _, e := range r.overlay.Exports {
		s.Incrementals = append(s.Incrementals, e.String())
	}
	if r.opts.Transform != nil {
		s.Transform = r.opts.Transform.Name
	}
	segs := make([]string, 0, len(byEntity))
	for seg := range byEntity {
		segs = append(segs, seg)
	}
	sort.Strings(segs)
	for _, seg := range segs {
		parts := byEntity[seg]
		sort.Slice(parts, func(i, j int) bool { return parts[i].Key < parts[j].Key })
		m := EntityManifest{Version: formatVersion, Entity: parts[0].Entity, Segment: seg, ImportPrefix: seg + "/part-",
			Compression: r.opts.Compression, Parts: parts}
		h := newSHA256()
		for _, p := range parts {
			m.ItemCount += p.Items
			m.Bytes += p.Bytes
			m.UncompressedBytes += p.UncompressedBytes
			fmt.Fprintf(h, "%s %s %d\n", p.Key, p.MD5, p.Items)
		}
		m.PartsSHA256 = hexSum(h)
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, err
		}
		b = append(b, '\n')
		mkey := seg + "/" + manifestName
		if err := r.out.Put(ctx, mkey, b); err != nil {
			return nil, err
		}
		mh := newSHA256()
		mh.Write(b)
		s.Entities = append(s.Entities, struct {
			Entity            string `json:"entity"`
			Segment           string `json:"segment"`
			Manifest          string `json:"manifest"`
			ManifestSHA256    string `json:"manifestSha256"`
			ItemCount         int64  `json:"itemCount"`
			Parts             int    `json:"parts"`
			Bytes             int64  `json:"bytes"`
			UncompressedBytes int64  `json:"uncompressedBytes"`
		}{m.Entity, seg, mkey, hexSum(mh), m.ItemCount, len(parts), m.Bytes, m.UncompressedBytes})
		s.Totals.OutputItems += m.ItemCount
		s.Totals.OutputBytes += m.Bytes
	}
	for _, rec := range recs {
		s.Totals.SourceItems += rec.Lines
		s.Totals.CompressedBytes += rec.CompressedBytes
		s.Totals.UncompressedBytes += rec.UncompressedBytes
		s.Totals.Dropped += rec.Dropped
		s.Totals.Added += rec.Added
		s.Totals.Replaced += rec.Replaced
		s.Totals.Deleted += rec.Deleted
		s.Totals.Inserted += rec.Inserted
	}
	s.Totals.SourceItems = lines
	s.Totals.OrphansRemoved = len(orphans)
	want := lines - s.Totals.Deleted - s.Totals.Dropped + s.Totals.Added + s.Totals.Inserted
	if s.Totals.OutputItems != want {
		return nil, fmt.Errorf("export: output holds %d items, want %d", s.Totals.OutputItems, want)
	}
	s.Finished = r.opts.Now().UTC().Format(time.RFC3339)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := r.out.Put(ctx, SummaryKey, append(b, '\n')); err != nil {
		return nil, err
	}
	return s, nil
}

// finishOverlay writes the overlay's items that no data file had: the items
// created during the incremental exports.
func (r *Repartitioner) finishOverlay(ctx context.Context, recs map[string]*SourceRecord) (*SourceRecord, error) {
	seen := map[string]bool{}
	for _, rec := range recs {
		for _, k := range rec.OverlayKeys {
			seen[k] = true
		}
	}
	w := r.newSourceWriter(ctx, OverlaySource)
	rec := &SourceRecord{Version: formatVersion, Fingerprint: r.fingerprint, SourceID: OverlaySource, Source: "incremental exports"}
	var buf []byte
	for _, ent := range r.overlay.Entries() {
		if seen[ent.Key] || ent.Item == nil {
			continue
		}
		items := []pipeline.Item{ent.Item}
		if r.opts.Transform != nil {
			if fn := r.opts.Transform.ByType[ent.Type]; fn != nil {
				outs, err := fn(ent.Item)
				if err != nil {
					w.abort(err)
					return nil, fmt.Errorf("export: incremental item %s: transform %s: %w", ent.Key, r.opts.Transform.Name, err)
				}
				items = outs
				if len(outs) == 0 {
					rec.Dropped++
				} else {
					rec.Added += int64(len(outs) - 1)
				}
			}
		}
		rec.Inserted++
		for _, it := range items {
			t, err := r.typeOf(it)
			if err != nil {
				w.abort(err)
				return nil, err
			}
			buf = appendItemLine(buf[:0], it)
			if err := w.add(t, buf); err != nil {
				w.abort(err)
				return nil, err
			}
		}
	}
	parts, err := w.close()
	if err != nil {
		return nil, err
	}
	if err := r.commitRecord(ctx, rec, parts); err != nil {
		return nil, err
	}
	return rec, nil
}

// sourceWriter routes the lines of one source to one pipe per entity type.
// Lines collect in blocks; each pipe's goroutine writes its blocks, in
// order, into parts.
//
// Gzip output is compressed block by block on a few goroutines shared by
// every pipe (as many as there are cores): each block is deflated on its
// own and ended with a sync flush, and a part is its blocks' output in
// order between one gzip header and trailer — a standard single-member
// gzip file, as parallel gzip writers make it. One warm compressor per core
// costs far less CPU than one per entity type taking turns on a core, and a
// single data file still uses every core. Other compressions stream
// through one compressor per pipe.
type sourceWriter struct {
	r      *Repartitioner
	ctx    context.Context
	cancel context.CancelCauseFunc
	id     string
	pipes  map[string]*entityPipe
	last   *entityPipe // the pipe of the last line added by addBytes
	wg     sync.WaitGroup
	zq     chan *block // blocks to deflate (gzip only)
	zwg    sync.WaitGroup
}

type entityPipe struct {
	entity string
	seg    string
	cur    *block
	ch     chan *block
	parts  []PartInfo
	err    error
}

// block is a run of lines of one entity type, and for gzip its deflated
// form once done is closed.
type block struct {
	buf   []byte
	items int64
	out   []byte
	done  chan struct{}
}

// Block sizes: a block is sent once it holds maxBlock bytes, or fewer when
// a source has many entity types, so that the blocks being filled take
// about blockBudget bytes at most.
const (
	maxBlock    = 512 << 10
	minBlock    = 64 << 10
	blockBudget = 8 << 20
)

var blockPool = sync.Pool{New: func() any { return new(block) }}

func (r *Repartitioner) newSourceWriter(ctx context.Context, id string) *sourceWriter {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &sourceWriter{r: r, ctx: ctx, cancel: cancel, id: id, pipes: map[string]*entityPipe{}}
	if r.opts.Compression == Gzip {
		n := runtime.GOMAXPROCS(0)
		w.zq = make(chan *block, n)
		w.zwg.Add(n)
		for range n {
			go w.deflate()
		}
	}
	return w
}

// deflate is a compressor goroutine: it deflates each block on its own,
// ending it with a sync flush, and closes its done channel.
func (w *sourceWriter) deflate() {
	defer w.zwg.Done()
	var fw *flate.Writer
	for b := range w.zq {
		if w.ctx.Err() == nil {
			if fw == nil {
				fw, _ = flate.NewWriter(io.Discard, gzipLevel(w.r.opts.Level)) // the level is checked by NewRepartitioner
			}
			b.out = b.out[:0]
			fw.Reset((*appender)(&b.out))
			_, _ = fw.Write(b.buf) // an appender never fails
			_ = fw.Flush()
		}
		close(b.done)
	}
}

// appender is an io.Writer that appends to a byte slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}

// add appends one line (without newline) to its entity's pipe.
func (w *sourceWriter) add(entity string, line []byte) error {
	p := w.pipes[entity]
	if p == nil {
		p = w.newPipe(entity)
	}
	return w.append(p, line)
}

// addBytes is add with the entity type as bytes, which the lookups do not
// copy. Items of one collection sit together in an export, so the last
// line's pipe is tried first.
func (w *sourceWriter) addBytes(entity []byte, line []byte) error {
	p := w.last
	if p == nil || p.entity != string(entity) {
		if p = w.pipes[string(entity)]; p == nil {
			p = w.newPipe(string(entity))
		}
		w.last = p
	}
	return w.append(p, line)
}

func (w *sourceWriter) newPipe(entity string) *entityPipe {
	p := &entityPipe{entity: entity, seg: EntitySegment(entity), ch: make(chan *block, 2)}
	w.pipes[entity] = p
	w.wg.Add(1)
	go w.run(p)
	return p
}

func (w *sourceWriter) append(p *entityPipe, line []byte) error {
	if p.cur == nil {
		p.cur = blockPool.Get().(*block)
	}
	p.cur.buf = append(p.cur.buf, line...)
	p.cur.buf = append(p.cur.buf, '\n')
	p.cur.items++
	if len(p.cur.buf) >= min(maxBlock, max(minBlock, blockBudget/len(w.pipes))) {
		return w.send(p)
	}
	return nil
}

// send passes the pipe's current block on: to the compressors (gzip), and
// to the pipe's goroutine.
func (w *sourceWriter) send(p *entityPipe) error {
	b := p.cur
	if w.zq != nil {
		b.done = make(chan struct{})
		select {
		case w.zq <- b:
		case <-w.ctx.Done():
			return context.Cause(w.ctx)
		}
	}
	// Once with the compressors, the block goes to the pipe even if the
	// run is cancelled meanwhile: the pipe waits for it and frees it.
	p.cur = nil
	p.ch <- b
	return nil
}

// close flushes every pipe, waits for them and returns the parts written.
func (w *sourceWriter) close() ([]PartInfo, error) {
	var err error
	for _, p := range w.pipes {
		if p.cur != nil && len(p.cur.buf) > 0 {
			if e := w.send(p); e != nil && err == nil {
				err = e
			}
		}
		close(p.ch)
	}
	w.stop()
	var parts []PartInfo
	for _, p := range w.pipes {
		if p.err != nil && err == nil {
			err = p.err
		}
		parts = append(parts, p.parts...)
	}
	if w.ctx.Err() != nil {
		// The first failure cancelled the others: report it, not theirs.
		err = context.Cause(w.ctx)
	}
	w.cancel(nil)
	if err != nil {
		return nil, err
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Key < parts[j].Key })
	return parts, nil
}

// stop waits for the pipes (whose channels are closed) and the compressors.
func (w *sourceWriter) stop() {
	w.wg.Wait()
	if w.zq != nil {
		close(w.zq)
		w.zwg.Wait()
	}
}

// abort stops every pipe; no part of an aborted source is committed after
// this returns, though parts committed earlier stay (and are removed as
// orphans, or overwritten, by the next run).
func (w *sourceWriter) abort(cause error) {
	w.cancel(cause)
	for _, p := range w.pipes {
		close(p.ch)
	}
	w.stop()
}

// run is a pipe's goroutine: it writes blocks into parts, starting a new
// part past MaxPartBytes.
func (w *sourceWriter) run(p *entityPipe) {
	defer w.wg.Done()
	var pw *partWriter
	fail := func(err error) {
		if p.err == nil {
			p.err = err
			w.cancel(err)
		}
	}
	for b := range p.ch {
		if b.done != nil {
			<-b.done
		}
		if p.err == nil && w.ctx.Err() == nil {
			if pw == nil {
				key := fmt.Sprintf("%s/part-%s-%04d%s", p.seg, w.id, len(p.parts), w.r.opts.Compression.Ext())
				var err error
				if pw, err = newPartWriter(w.ctx, w.r.out, key, w.r.opts.Compression, w.r.opts.Level); err != nil {
					fail(err)
				}
			}
			if pw != nil {
				if err := pw.write(b); err != nil {
					fail(err)
				} else if pw.info.UncompressedBytes >= w.r.opts.MaxPartBytes {
					if err := pw.commit(w.ctx); err != nil {
						fail(err)
					} else {
						pw.info.Entity = p.entity
						p.parts = append(p.parts, pw.info)
					}
					pw = nil
				}
			}
		}
		b.buf, b.out, b.items, b.done = b.buf[:0], b.out[:0], 0, nil
		blockPool.Put(b)
	}
	if pw == nil {
		return
	}
	if p.err != nil || w.ctx.Err() != nil {
		pw.abort()
		return
	}
	if err := pw.commit(w.ctx); err != nil {
		fail(err)
		return
	}
	pw.info.Entity = p.entity
	p.parts = append(p.parts, pw.info)
}

// partWriter writes one output object: gzip from deflated blocks, or a
// stream through a compressor.
type partWriter struct {
	ow   ObjectWriter
	bw   *bufio.Writer
	zw   io.WriteCloser // the stream compressor; nil for gzip
	crc  uint32         // gzip: CRC-32 of the uncompressed bytes
	md5  hash.Hash
	cnt  int64
	info PartInfo
}

// gzipHeader is the 10-byte gzip member header: deflate, no flags, no
// modification time, no extra flags, unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

func newPartWriter(ctx context.Context, st Store, key string, c Compression, level int) (*partWriter, error) {
	ow, err := st.Create(ctx, key)
	if err != nil {
		return nil, err
	}
	pw := &partWriter{ow: ow, md5: md5.New(), info: PartInfo{Key: key}}
	pw.bw = bufio.NewWriterSize(writerFunc(func(p []byte) (int, error) {
		pw.md5.Write(p)
		pw.cnt += int64(len(p))
		return ow.Write(p)
	}), 64<<10)
	if c == Gzip {
		_, _ = pw.bw.Write(gzipHeader) // buffered; errors surface at commit
		return pw, nil
	}
	if pw.zw, err = newCompressor(c, level, pw.bw); err != nil {
		ow.Abort()
		return nil, err
	}
	return pw, nil
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (pw *partWriter) write(b *block) error {
	var err error
	if pw.zw == nil {
		pw.crc = crc32.Update(pw.crc, crc32.IEEETable, b.buf)
		_, err = pw.bw.Write(b.out)
	} else {
		_, err = pw.zw.Write(b.buf)
	}
	if err != nil {
		return fmt.Errorf("export: writing %s: %w", pw.info.Key, err)
	}
	pw.info.Items += b.items
	pw.info.UncompressedBytes += int64(len(b.buf))
	return nil
}

func (pw *partWriter) commit(ctx context.Context) error {
	var err error
	if pw.zw == nil {
		// A final empty block (fixed Huffman codes, end of block), then the
		// trailer: CRC-32 and size modulo 2^32, little-endian.
		var t [10]byte
		t[0], t[1] = 0x03, 0x00
		binary.LittleEndian.PutUint32(t[2:], pw.crc)
		binary.LittleEndian.PutUint32(t[6:], uint32(pw.info.UncompressedBytes))
		_, err = pw.bw.Write(t[:])
	} else {
		err = pw.zw.Close()
	}
	if err == nil {
		err = pw.bw.Flush()
	}
	if err != nil {
		pw.ow.Abort()
		return fmt.Errorf("export: writing %s: %w", pw.info.Key, err)
	}
	if err := pw.ow.Commit(ctx); err != nil {
		return err
	}
	pw.info.Bytes = pw.cnt
	pw.info.MD5 = base64.StdEncoding.EncodeToString(pw.md5.Sum(nil))
	return nil
}

func (pw *partWriter) abort() { pw.ow.Abort() }

// decodeCause strips the decoder's "file line N:" wrapping, which the
// caller's FileError repeats.
func decodeCause(err error) error {
	var re *pipeline.RecordError
	if errors.As(err, &re) {
		if inner := errors.Unwrap(re.Err); inner != nil {
			return inner
		}
		return re.Err
	}
	return err
}
