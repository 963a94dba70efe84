package reimport

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
)

// ErrIncomplete matches opening an output that has no summary: a
// repartition that has not finished (or crashed). Its parts must not be
// imported.
var ErrIncomplete = errors.New("reimport: repartition output is incomplete")

// Store is where a repartition's output is read from (and a load's claim
// and checkpoint written to): a directory or an S3 prefix, objstore's
// stores.
type Store interface {
	export.Source
	checkpoint.Conditional
}

// Output is a finished repartition's output, opened for reading.
type Output struct {
	store    Store
	Summary  repartition.RunSummary
	Entities []*repartition.EntityManifest
}

// OpenOutput opens a repartition's output: its summary, then every entity
// manifest, each checked against the checksum the summary records.
func OpenOutput(ctx context.Context, st Store) (*Output, error) {
	b, err := objstore.ReadAll(ctx, st, repartition.SummaryKey)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: no %s in %s (run or resume tributary repartition)", ErrIncomplete, repartition.SummaryKey, st)
	}
	if err != nil {
		return nil, err
	}
	o := &Output{store: st}
	if err := json.Unmarshal(b, &o.Summary); err != nil {
		return nil, fmt.Errorf("reimport: %s: %w", objstore.Name(st, repartition.SummaryKey), err)
	}
	if o.Summary.Version != repartition.FormatVersion {
		return nil, fmt.Errorf("reimport: %s: version %q, want %q", objstore.Name(st, repartition.SummaryKey), o.Summary.Version, repartition.FormatVersion)
	}
	for _, en := range o.Summary.Entities {
		mb, err := objstore.ReadAll(ctx, st, en.Manifest)
		if err != nil {
			return nil, err
		}
		if h := sha256.Sum256(mb); hex.EncodeToString(h[:]) != en.ManifestSHA256 {
			return nil, fmt.Errorf("reimport: %s changed since the summary was written", objstore.Name(st, en.Manifest))
		}
		var m repartition.EntityManifest
		if err := json.Unmarshal(mb, &m); err != nil {
			return nil, fmt.Errorf("reimport: %s: %w", objstore.Name(st, en.Manifest), err)
		}
		o.Entities = append(o.Entities, &m)
	}
	return o, nil
}

// Store returns the output's store.
func (o *Output) Store() Store { return o.store }

// Entity returns the manifest of an entity type, found by its name (as the
// items spell it, repartition.UnknownEntity for items without one) or its partition
// segment.
func (o *Output) Entity(name string) (*repartition.EntityManifest, error) {
	for _, m := range o.Entities {
		if m.Entity == name || m.Segment == name || m.Segment == "entity="+name ||
			(name == repartition.UnknownEntity && m.Entity == "") {
			return m, nil
		}
	}
	names := make([]string, len(o.Entities))
	for i, m := range o.Entities {
		names[i] = m.Entity
		if m.Entity == "" {
			names[i] = repartition.UnknownEntity
		}
	}
	return nil, fmt.Errorf("reimport: no entity %q in %s (it has %q)", name, o.store, names)
}

// verifyPart reads a part's object whole and checks its size and MD5
// against its manifest entry: a part that passes is the one the
// repartition wrote, byte for byte. Load verifies each part so before it
// writes any of its items.
func (o *Output) verifyPart(ctx context.Context, p repartition.PartInfo) (err error) {
	name, r, check, err := o.openPart(ctx, p)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return fmt.Errorf("reimport: reading %s: %w", name, err)
	}
	if n != p.Bytes {
		return export.Corrupt(name, 0, fmt.Errorf("%d bytes, the manifest says %d", n, p.Bytes))
	}
	return check()
}

// ReadPart streams a part's lines (without newlines; the slice is valid
// only during the call), numbered from 1, and checks the part's item count
// and MD5 against its manifest entry at the end.
func (o *Output) ReadPart(ctx context.Context, p repartition.PartInfo, fn func(line []byte, n int) error) (err error) {
	name, r, check, err := o.openPart(ctx, p)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	br := bufio.NewReaderSize(r, 256<<10)
	zr, err := repartition.CompressionOf(p.Key).NewReader(br)
	if err != nil {
		return export.Corrupt(name, 0, err)
	}
	// Close frees the decompressor; its error, if any, is one that a read
	// has already returned.
	defer func() { _ = zr.Close() }()
	var lines int64
	err = export.ScanLines(ctx, zr, name, func(line []byte, n int) error {
		lines++
		return fn(line, n)
	})
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, br); err != nil { // hash the whole part
		return fmt.Errorf("reimport: reading %s: %w", name, err)
	}
	if lines != p.Items {
		return export.Corrupt(name, 0, fmt.Errorf("%d items, the manifest says %d", lines, p.Items))
	}
	return check()
}

// openPart opens a part for reading, hashing what is read; check compares
// the hash of everything read with the part's manifest MD5.
func (o *Output) openPart(ctx context.Context, p repartition.PartInfo) (name string, r io.ReadCloser, check func() error, err error) {
	name = objstore.Name(o.store, p.Key)
	rc, err := o.store.Open(ctx, p.Key)
	if err != nil {
		return name, nil, nil, err
	}
	h := md5.New()
	check = func() error {
		if sum := base64.StdEncoding.EncodeToString(h.Sum(nil)); sum != p.MD5 {
			return export.Corrupt(name, 0, fmt.Errorf("MD5 %s, the manifest says %s", sum, p.MD5))
		}
		return nil
	}
	return name, struct {
		io.Reader
		io.Closer
	}{io.TeeReader(rc, h), rc}, check, nil
}
