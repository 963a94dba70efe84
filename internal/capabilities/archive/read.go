package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
)

// Filter selects archive objects by partition. The zero Filter selects all.
type Filter struct {
	// Entity selects one entity type, as the items spell it; UnknownEntity
	// selects the items that have none. Empty selects every type.
	Entity string
	// Date selects one date segment (YYYY-MM-DD, or UnknownDate). Empty
	// selects every date.
	Date string
	// TypeAttribute names the attribute that holds an item's entity type,
	// as the archiver was configured (TYPE_ATTRIBUTE); default EntityType.
	// With Entity, the lines of a partition named by a hash, which may
	// stand for more than one type, are told apart by it.
	TypeAttribute string
}

// Validate reports a Date that no object can have.
func (f Filter) Validate() error {
	if f.Date != "" && !validDate(f.Date) {
		return fmt.Errorf("archive: date %q is not YYYY-MM-DD", f.Date)
	}
	return nil
}

// entitySegments returns the segments that may hold f.Entity's objects:
// its segment and, for a type hashed by an earlier version with a shorter
// hash, that segment too.
func (f Filter) entitySegments() []string {
	if f.Entity == UnknownEntity {
		return []string{UnknownEntity}
	}
	segs := []string{EntitySegment(f.Entity)}
	if legacy, ok := legacyEntitySegment(f.Entity); ok {
		segs = append(segs, legacy)
	}
	return segs
}

func (f Filter) typeAttribute() string {
	if f.TypeAttribute == "" {
		return pipeline.DefaultTypeAttribute
	}
	return f.TypeAttribute
}

// Archive reads the objects under one prefix of a Source.
type Archive struct {
	src    Source
	prefix string
	// skipped counts the lines ReadObject left out: other types' lines in
	// a partition whose hashed name stands for the type looked for too.
	skipped atomic.Int64
	// covered counts the JSON-lines objects Objects left out because a
	// compacted object holds their lines.
	covered atomic.Int64
	// compacted decodes compacted objects (WithCompacted).
	compacted compactedDecoder
}

// Open returns the archive under prefix ("" for the root of src). To read
// an archive that may be compacted, give it the compacted form's decoder:
// Open(src, prefix).WithCompacted(lake.Decode).
func Open(src Source, prefix string) *Archive {
	return &Archive{src: src, prefix: strings.Trim(prefix, "/")}
}

// ObjectInfo is one archive object.
type ObjectInfo struct {
	// Key is the object's full key; Rel is the key below the archive prefix.
	Key, Rel string
	KeyInfo
	Size int64
	// only, when set, is the one entity type of the object's lines to read:
	// the object's partition is named by a hash, which may stand for other
	// types too (see ReadObject).
	only *typeCheck
}

// typeCheck picks the lines of one entity type.
type typeCheck struct {
	entity, attribute string
}

// listPrefixes narrows the listing as far as the filter allows: one prefix
// per entity segment that may hold the filter's type.
func (a *Archive) listPrefixes(f Filter) []string {
	p := ""
	if a.prefix != "" {
		p = a.prefix + "/"
	}
	if f.Entity == "" {
		return []string{p}
	}
	var out []string
	for _, dir := range []string{p, p + CompactedDir + "/"} {
		for _, seg := range f.entitySegments() {
			q := dir + "entity=" + seg + "/"
			if f.Date != "" {
				q += "date=" + f.Date + "/"
			}
			out = append(out, q)
		}
	}
	return out
}

// Objects lists the objects the filter selects, sorted by key. Keys under
// the prefix that are not archive objects are returned in other, also sorted.
//
// Both forms are listed: the JSON-lines objects and the compacted (Parquet)
// ones. A JSON-lines object that a compacted object lists as one of its
// inputs, at the same size, is left out (its lines are the compacted
// object's rows): it was kept by choice, or a compaction stopped before
// removing it. Covered counts them.
//
// An entity type longer than a segment may be is named by its hash; one
// archived by a version before the whole hash was kept is named by a
// shorter hash, and its objects are listed too. In a partition named by a
// hash, ReadObject reads only the lines of the filter's type.
func (a *Archive) Objects(ctx context.Context, f Filter) (objs []ObjectInfo, other []string, err error) {
	if err := f.Validate(); err != nil {
		return nil, nil, err
	}
	base := ""
	if a.prefix != "" {
		base = a.prefix + "/"
	}
	segs := map[string]bool{}
	if f.Entity != "" {
		for _, s := range f.entitySegments() {
			segs[s] = true
		}
	}
	var only *typeCheck
	if f.Entity != "" && f.Entity != UnknownEntity {
		only = &typeCheck{entity: f.Entity, attribute: f.typeAttribute()}
	}
	for _, prefix := range a.listPrefixes(f) {
		err = a.src.List(ctx, prefix, func(o objstore.Object) error {
			rel := strings.TrimPrefix(o.Key, base)
			if strings.HasPrefix(rel, CompactedDir+"/"+LeaseDir+"/") {
				return nil // a compaction's lease, no data
			}
			loc, ok := ParseKey(rel)
			if !ok {
				other = append(other, o.Key)
				return nil
			}
			if f.Entity != "" && !segs[loc.EntitySegment] || f.Date != "" && loc.Date != f.Date {
				return nil
			}
			info := ObjectInfo{Key: o.Key, Rel: rel, KeyInfo: loc, Size: o.Size}
			if only != nil && hashedSegment(loc.EntitySegment) {
				info.only = only
			}
			objs = append(objs, info)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if objs, err = a.dropCovered(ctx, objs); err != nil {
		return nil, nil, err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	sort.Strings(other)
	return objs, other, nil
}

// dropCovered leaves out the JSON-lines objects that a listed compacted
// object names as its inputs, at the size it read them.
func (a *Archive) dropCovered(ctx context.Context, objs []ObjectInfo) ([]ObjectInfo, error) {
	covered := map[Input]bool{}
	for _, o := range objs {
		if !o.Compacted {
			continue
		}
		c, err := a.OpenCompacted(ctx, o.Key)
		if err != nil {
			return nil, err
		}
		for _, in := range c.Inputs() {
			covered[in] = true
		}
	}
	if len(covered) == 0 {
		return objs, nil
	}
	kept := objs[:0]
	for _, o := range objs {
		if !o.Compacted && covered[Input{Key: o.Rel, Size: o.Size}] {
			a.covered.Add(1)
			continue
		}
		kept = append(kept, o)
	}
	return kept, nil
}

// Covered returns how many JSON-lines objects Objects has left out because
// a compacted object holds their lines.
func (a *Archive) Covered() int64 { return a.covered.Load() }

// ReadObject is ReadLines for an object that Objects listed: in a partition
// named by a hash, when the filter named an entity type, it calls fn only
// for the lines of that type. The lines of other types whose hashes name
// the same partition (two types with one 16-digit hash, as versions before
// the whole hash wrote them) are left out and counted (Skipped); a line
// whose type the partition cannot stand for at all (the type attribute is
// not the archiver's) is an error, rather than a line silently missed.
func (a *Archive) ReadObject(ctx context.Context, o ObjectInfo, fn func(n int, line []byte) error) error {
	if o.only == nil {
		return a.ReadLines(ctx, o.Key, fn)
	}
	return a.ReadLines(ctx, o.Key, func(n int, line []byte) error {
		t, err := lineType(line, o.only.attribute)
		if err != nil {
			return fmt.Errorf("archive: %s line %d: %w", o.Key, n, err)
		}
		if t == o.only.entity {
			return fn(n, line)
		}
		legacy, _ := legacyEntitySegment(t)
		if t == "" || (EntitySegment(t) != o.EntitySegment && legacy != o.EntitySegment) {
			return fmt.Errorf("archive: %s line %d: the item's %s is %s, which the partition %q does not stand for: is %s the attribute the archiver read the type from (TYPE_ATTRIBUTE)?",
				o.Key, n, o.only.attribute, quote.Value(t), "entity="+o.EntitySegment, o.only.attribute)
		}
		a.skipped.Add(1)
		return nil
	})
}

// Skipped returns how many lines ReadObject has left out because they were
// of another entity type than the filter's, in a partition whose hashed name
// stands for both.
func (a *Archive) Skipped() int64 { return a.skipped.Load() }

// lineType returns the entity type of an archive line's item: the string
// value of attribute, "" when it has none.
func lineType(line []byte, attribute string) (string, error) {
	l, err := ParseLine(line)
	if err != nil {
		return "", err
	}
	var item map[string]json.RawMessage
	if err := json.Unmarshal(l.Item, &item); err != nil {
		return "", fmt.Errorf("item: %w", err)
	}
	av, ok := item[attribute]
	if !ok {
		return "", nil
	}
	var v struct {
		S *string `json:"S"`
	}
	if err := json.Unmarshal(av, &v); err != nil || v.S == nil {
		return "", fmt.Errorf("the item's %s is not a string", attribute)
	}
	return *v.S, nil
}

// maxLineBytes is the longest archive line ReadLines reads: an item's
// image in DynamoDB JSON (pipeline.MaxImageJSONBytes) and its metadata
// (event ID, time, table, stream ARN, sequence number: under a kilobyte,
// escaped at most 6 times).
const maxLineBytes = pipeline.MaxImageJSONBytes + 8<<10

// ReadLines calls fn for each line of the object at key, decompressed and
// without its newline, numbered from 1. The slice is valid only during the
// call. It stops at fn's first error and returns it. A compacted object's
// rows are given as the archive lines they were compacted from, numbered
// by row.
func (a *Archive) ReadLines(ctx context.Context, key string, fn func(n int, line []byte) error) (err error) {
	if strings.HasSuffix(key, CompactedExt) {
		c, err := a.OpenCompacted(ctx, key)
		if err != nil {
			return err
		}
		var line []byte
		return c.Rows(func(n int, item json.RawMessage, m Meta) error {
			line = appendRawLine(line[:0], item, m)
			return fn(n, line)
		})
	}
	rc, err := a.src.Open(ctx, key)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	zr, err := gzip.NewReader(bufio.NewReaderSize(rc, 64<<10))
	if err != nil {
		return fmt.Errorf("archive: %s: not gzip: %w", key, err)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: collect it, up to the longest
			// an archive line can be (and no further into a gzip bomb).
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(full) > maxLineBytes {
					return fmt.Errorf("archive: %s: line %d: longer than %d bytes, which no archived item makes", key, n, maxLineBytes)
				}
				line, err = br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("archive: %s: line %d: %w", key, n, err)
		}
		if trimmed := bytes.TrimSuffix(line, []byte{'\n'}); len(trimmed) > 0 {
			if ferr := fn(n, trimmed); ferr != nil {
				return ferr
			}
		} else if len(line) > 0 {
			return fmt.Errorf("archive: %s: line %d: empty line", key, n)
		}
		if errors.Is(err, io.EOF) {
			if len(line) > 0 && line[len(line)-1] != '\n' {
				return fmt.Errorf("archive: %s: line %d: no final newline (truncated object?)", key, n)
			}
			return nil
		}
	}
}
