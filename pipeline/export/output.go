package export

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/pipeline"
)

// ErrIncomplete matches opening an output that has no summary: a
// repartition that has not finished (or crashed). Its parts must not be
// imported.
var ErrIncomplete = errors.New("export: repartition output is incomplete")

// Output is a finished repartition's output, opened for reading.
type Output struct {
	store    Store
	Summary  RunSummary
	Entities []*EntityManifest
}

// OpenOutput opens a repartition's output: its summary, then every entity
// manifest, each checked against the checksum the summary records.
func OpenOutput(ctx context.Context, st Store) (*Output, error) {
	b, err := readAll(ctx, st, SummaryKey)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: no %s in %s (run or resume tributary repartition)", ErrIncomplete, SummaryKey, st)
	}
	if err != nil {
		return nil, err
	}
	o := &Output{store: st}
	if err := json.Unmarshal(b, &o.Summary); err != nil {
		return nil, fmt.Errorf("export: %s: %w", join(st.String(), SummaryKey), err)
	}
	if o.Summary.Version != formatVersion {
		return nil, fmt.Errorf("export: %s: version %q, want %q", join(st.String(), SummaryKey), o.Summary.Version, formatVersion)
	}
	for _, en := range o.Summary.Entities {
		mb, err := readAll(ctx, st, en.Manifest)
		if err != nil {
			return nil, err
		}
		h := newSHA256()
		h.Write(mb)
		if hexSum(h) != en.ManifestSHA256 {
			return nil, fmt.Errorf("export: %s changed since the summary was written", join(st.String(), en.Manifest))
		}
		var m EntityManifest
		if err := json.Unmarshal(mb, &m); err != nil {
			return nil, fmt.Errorf("export: %s: %w", join(st.String(), en.Manifest), err)
		}
		o.Entities = append(o.Entities, &m)
	}
	return o, nil
}

// Store returns the output's store.
func (o *Output) Store() Store { return o.store }

// Entity returns the manifest of an entity type, found by its name (as the
// items spell it, UnknownEntity for items without one) or its partition
// segment.
func (o *Output) Entity(name string) (*EntityManifest, error) {
	for _, m := range o.Entities {
		if m.Entity == name || m.Segment == name || m.Segment == "entity="+name ||
			(name == UnknownEntity && m.Entity == "") {
			return m, nil
		}
	}
	names := make([]string, len(o.Entities))
	for i, m := range o.Entities {
		names[i] = m.Entity
		if m.Entity == "" {
			names[i] = UnknownEntity
		}
	}
	return nil, fmt.Errorf("export: no entity %q in %s (it has %q)", name, o.store, names)
}

// ReadPart streams a part's lines (without newlines; the slice is valid
// only during the call), numbered from 1, and checks the part's item count
// and MD5 against its manifest entry at the end.
func (o *Output) ReadPart(ctx context.Context, p PartInfo, fn func(line []byte, n int) error) error {
	name := join(o.store.String(), p.Key)
	r, err := o.store.Open(ctx, p.Key)
	if err != nil {
		return err
	}
	defer r.Close()
	cr := &countingReader{r: r, h: md5.New()}
	br := bufio.NewReaderSize(cr, 256<<10)
	zr, err := newDecompressor(compressionOf(p.Key), br)
	if err != nil {
		return &FileError{File: name, Err: corruptf("%v", err)}
	}
	defer zr.Close()
	var lines int64
	err = scanLines(ctx, zr, MaxLineBytes, func(line []byte, n int) error {
		lines++
		return fn(line, n)
	})
	if err != nil {
		var le *lineErr
		if errors.As(err, &le) {
			return &FileError{File: name, Line: le.line, Err: le.err}
		}
		return err
	}
	io.Copy(io.Discard, br)
	if lines != p.Items {
		return &FileError{File: name, Err: corruptf("%d items, the manifest says %d", lines, p.Items)}
	}
	if sum := base64.StdEncoding.EncodeToString(cr.h.Sum(nil)); sum != p.MD5 {
		return &FileError{File: name, Err: corruptf("MD5 %s, the manifest says %s", sum, p.MD5)}
	}
	return nil
}

// Items streams the items of a full export with an overlay applied (nil:
// none): every item as of the end of the last incremental export. Data
// files are read one after the other; fn must not keep the item past the
// call if it modifies it.
func Items(ctx context.Context, full *Export, overlay *Overlay, opts pipeline.Options, skipMD5 bool, fn func(pipeline.Item) error) error {
	if overlay == nil {
		overlay = &Overlay{}
	}
	if len(overlay.KeyAttributes) > 0 {
		opts.KeyAttributes = overlay.KeyAttributes
	}
	dec := pipeline.NewExportDecoder(opts)
	seen := map[string]bool{}
	files := append([]DataFile(nil), full.Files...)
	sortFiles(files)
	for _, f := range files {
		name := join(full.store.String(), full.DataKey(f))
		_, err := full.ReadLines(ctx, f, skipMD5, func(line []byte, n int) error {
			c, err := dec.DecodeItem(line, name, n)
			if err != nil {
				return &FileError{File: name, Line: n, Err: corrupt{decodeCause(err)}}
			}
			item := c.New
			if overlay.Len() > 0 {
				key := overlay.KeyOf(item)
				if ent, ok := overlay.Lookup(key); ok {
					seen[key] = true
					if ent.Item == nil {
						return nil
					}
					item = ent.Item
				}
			}
			return fn(item)
		})
		if err != nil {
			return err
		}
	}
	for _, ent := range overlay.Entries() {
		if !seen[ent.Key] && ent.Item != nil {
			if err := fn(ent.Item); err != nil {
				return err
			}
		}
	}
	return nil
}
