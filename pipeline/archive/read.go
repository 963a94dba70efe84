package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
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
}

// Validate reports a Date that no object can have.
func (f Filter) Validate() error {
	if f.Date != "" && !validDate(f.Date) {
		return fmt.Errorf("archive: date %q is not YYYY-MM-DD", f.Date)
	}
	return nil
}

func (f Filter) entitySegment() string {
	if f.Entity == UnknownEntity {
		return UnknownEntity
	}
	return EntitySegment(f.Entity)
}

// Archive reads the objects under one prefix of a Source.
type Archive struct {
	src    Source
	prefix string
}

// Open returns the archive under prefix ("" for the root of src).
func Open(src Source, prefix string) *Archive {
	return &Archive{src: src, prefix: strings.Trim(prefix, "/")}
}

// ObjectInfo is one archive object.
type ObjectInfo struct {
	// Key is the object's full key; Rel is the key below the archive prefix.
	Key, Rel string
	KeyInfo
	Size int64
}

// listPrefix narrows the listing as far as the filter allows.
func (a *Archive) listPrefix(f Filter) string {
	p := ""
	if a.prefix != "" {
		p = a.prefix + "/"
	}
	if f.Entity != "" {
		p += "entity=" + f.entitySegment() + "/"
		if f.Date != "" {
			p += "date=" + f.Date + "/"
		}
	}
	return p
}

// Objects lists the objects the filter selects, sorted by key. Keys under
// the prefix that are not archive objects are returned in other, also sorted.
func (a *Archive) Objects(ctx context.Context, f Filter) (objs []ObjectInfo, other []string, err error) {
	if err := f.Validate(); err != nil {
		return nil, nil, err
	}
	base := ""
	if a.prefix != "" {
		base = a.prefix + "/"
	}
	err = a.src.List(ctx, a.listPrefix(f), func(o objstore.Object) error {
		rel := strings.TrimPrefix(o.Key, base)
		loc, ok := ParseKey(rel)
		if !ok {
			other = append(other, o.Key)
			return nil
		}
		if f.Entity != "" && loc.EntitySegment != f.entitySegment() || f.Date != "" && loc.Date != f.Date {
			return nil
		}
		objs = append(objs, ObjectInfo{Key: o.Key, Rel: rel, KeyInfo: loc, Size: o.Size})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	sort.Strings(other)
	return objs, other, nil
}

// MaxLineBytes is the longest archive line ReadLines reads: an item's
// image in DynamoDB JSON (pipeline.MaxImageJSONBytes) and its metadata
// (event ID, time, table, stream ARN, sequence number: under a kilobyte,
// escaped at most 6 times).
const MaxLineBytes = pipeline.MaxImageJSONBytes + 8<<10

// ReadLines calls fn for each line of the object at key, decompressed and
// without its newline, numbered from 1. The slice is valid only during the
// call. It stops at fn's first error and returns it.
func (a *Archive) ReadLines(ctx context.Context, key string, fn func(n int, line []byte) error) (err error) {
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
				if len(full) > MaxLineBytes {
					return fmt.Errorf("archive: %s: line %d: longer than %d bytes, which no archived item makes", key, n, MaxLineBytes)
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
