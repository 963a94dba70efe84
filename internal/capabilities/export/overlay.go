package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Overlay is the net effect of one or more incremental exports, to be
// applied onto a full export: for every item they touch, its state at the
// end of the last one — an image, or deleted. It is held in memory (its size
// is that of the incremental exports' items, not of the table).
type Overlay struct {
	// KeyAttributes are the table's key attributes, read from the
	// incremental lines' Keys.
	KeyAttributes []string
	// Exports are the incremental exports, in the order applied.
	Exports []*Export
	entries map[string]*OverlayEntry
	// Lines is the number of incremental lines read.
	Lines int64
}

// OverlayEntry is one item's state after the incremental exports.
type OverlayEntry struct {
	Key  string        // pipeline.ItemKey of the item's keys
	Item pipeline.Item // nil: deleted
	Type string        // entity type of Item
	Time time.Time     // write time of the change that left this state
	// Version is Item's version attribute; HasVersion false when it has
	// none.
	Version    int64
	HasVersion bool
}

// LoadOverlay reads incremental exports to apply onto full, after checking
// that full and they are one table's history, contiguous, moving forward
// and of no future time; it refuses any other chain, naming the export and
// the times (checkChain has the checks). It checks full's time when there
// are no incremental exports too: every reader of an export chain goes
// through here. They apply in time order, whatever the order given.
func LoadOverlay(ctx context.Context, full *Export, incs []*Export, opts pipeline.Options, skipMD5 bool) (*Overlay, error) {
	o := &Overlay{entries: map[string]*OverlayEntry{}}
	incs, err := checkChain(full, incs, time.Now())
	if err != nil {
		return nil, err
	}
	if len(incs) == 0 {
		return o, nil
	}
	o.Exports = incs
	dec := pipeline.NewExportDecoder(opts)
	for _, e := range incs {
		files := append([]DataFile(nil), e.Files...)
		sortFiles(files)
		for _, f := range files {
			name := objstore.Name(e.store, e.DataKey(f))
			_, err := e.ReadLines(ctx, f, skipMD5, func(line []byte, n int) error {
				c, err := dec.Decode(line, name, n)
				if err != nil {
					return Corrupt(name, n, err)
				}
				if c.Kind == 0 || len(c.Keys) == 0 {
					return &FileError{File: name, Line: n, Err: corruptf("not an incremental-export line")}
				}
				if o.KeyAttributes == nil {
					for k := range c.Keys {
						o.KeyAttributes = append(o.KeyAttributes, k)
					}
					sort.Strings(o.KeyAttributes)
				}
				o.Lines++
				key := pipeline.ItemKey(c.Keys)
				if cur := o.entries[key]; cur != nil && cur.Time.After(c.Time) {
					return nil
				}
				ent := &OverlayEntry{Key: key, Time: c.Time}
				if c.Kind != pipeline.Remove {
					ent.Item, ent.Type, ent.Version, ent.HasVersion = c.New, c.NewType, c.Version, c.HasVersion
				}
				o.entries[key] = ent
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

// Len is the number of items the overlay touches.
func (o *Overlay) Len() int { return len(o.entries) }

// Lookup returns the overlay's state of the item with key (a
// pipeline.ItemKey).
func (o *Overlay) Lookup(key string) (*OverlayEntry, bool) {
	e, ok := o.entries[key]
	return e, ok
}

// Entries returns every entry, sorted by key.
func (o *Overlay) Entries() []*OverlayEntry {
	out := make([]*OverlayEntry, 0, len(o.entries))
	for _, e := range o.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Fingerprint identifies the overlay's inputs.
func (o *Overlay) Fingerprint() string {
	h := sha256.New()
	for _, e := range o.Exports {
		h.Write([]byte(e.ManifestSHA256))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// KeyOf returns the pipeline.ItemKey of item under the overlay's key
// attributes.
func (o *Overlay) KeyOf(item pipeline.Item) string {
	keys := make(pipeline.Item, len(o.KeyAttributes))
	for _, k := range o.KeyAttributes {
		if v, ok := item[k]; ok {
			keys[k] = v
		}
	}
	return pipeline.ItemKey(keys)
}
