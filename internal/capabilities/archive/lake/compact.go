// Package lake makes the TTL archive a lake: it compacts the archive's
// JSON-lines objects into Parquet under <prefix>/compacted/, exactly once
// (Compact), and decodes that form for the archive's readers (Decode, given
// to archive.Archive.WithCompacted). It is a package of its own so that the
// archiver, which only writes JSON lines, links no Parquet code.
package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/pipeline"
)

// Store is what compaction needs of S3 (or a directory): listing and
// reading with versions, conditional writes for the compacted objects and
// the partition leases, and conditional removal (only the version read).
// objstore's stores implement it.
type Store interface {
	archive.Source
	Get(ctx context.Context, key string) (body []byte, version string, err error)
	PutIfAbsent(ctx context.Context, key string, body []byte) (string, error)
	Swap(ctx context.Context, key string, body []byte, version string) (string, error)
	DeleteIf(ctx context.Context, key, version string) error
	String() string
}

// readObject is a JSON-lines object as compaction read it: its key and the
// version read, the only one it removes.
type readObject struct {
	key, version string
}

// fetched serves an object already read (with its version) to the
// archive's line reader, and the rest from the store.
type fetched struct {
	archive.Source
	key  string
	body []byte
}

func (f fetched) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if key == f.key {
		return io.NopCloser(bytes.NewReader(f.body)), nil
	}
	return f.Source.Open(ctx, key)
}

// Options configures Compact. The zero value compacts every object,
// whatever its age, and removes it once its rows are durable; the CLI and
// the function take DefaultOlderThan.
type Options struct {
	// Prefix is the archive's prefix, as the archiver was given it.
	Prefix string
	// OlderThan is the age (since it was last written) from which an
	// object is settled, and compacted; 0 takes every object. It must
	// exceed the time the archiver may rewrite an object (its retries: the
	// mapping's MaximumRecordAgeInSeconds), or a rewrite of an object
	// being compacted can come after the compaction read it. Negative is
	// taken as 0.
	OlderThan time.Duration
	// Keep keeps the JSON-lines objects once compacted. Readers
	// (archive.Archive.Objects) and later compactions know them by the
	// compacted object's list of inputs and read them once.
	Keep bool
	// Schema names the attributes the rows are built from: the key
	// attributes (pk, sk), the entity type's and the TTL's. Empty ones
	// take pipeline's defaults.
	Schema pipeline.Schema
	// Typed adds a typed column per attribute named.
	Typed []TypedColumn
	// MaxInputBytes bounds the (compressed) JSON-lines bytes one compacted
	// object is made of; a partition with more gives several. Default 64 MiB.
	MaxInputBytes int64
	// Lease is how long a compaction holds a partition before another may
	// take it over (default 30 minutes, twice a Lambda function's longest
	// run). A run checks that it still holds the partition before each
	// write and each removal.
	Lease time.Duration
	// Owner names this run in the partitions' leases (default a random ID).
	Owner string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives a line per partition compacted; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Defaults of Options.
const (
	defaultMaxInputBytes = 64 << 20
	defaultLease         = 30 * time.Minute
	// DefaultOlderThan is the age from which the CLI and the
	// function take an object: two days, past the archiver's retries at
	// the template's defaults (MaximumRecordAgeInSeconds, a day).
	DefaultOlderThan = 48 * time.Hour
)

func (o Options) withDefaults() Options {
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = defaultMaxInputBytes
	}
	if o.Lease <= 0 {
		o.Lease = defaultLease
	}
	if o.OlderThan < 0 {
		o.OlderThan = 0
	}
	if o.Owner == "" {
		o.Owner = objstore.NewOwner("archive compaction").String()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Schema = o.Schema.WithDefaults()
	o.Prefix = strings.Trim(o.Prefix, "/")
	return o
}

// Result is what a compaction did. It is the compaction function's
// response.
type Result struct {
	// Partitions counts the partitions that had settled objects; Busy
	// names those another run held (left for the next run), and
	// Unfinished counts those left because the run's time was running out.
	Partitions int      `json:"partitions"`
	Busy       []string `json:"busy,omitempty"`
	Unfinished int      `json:"unfinished,omitempty"`
	// Young counts the JSON-lines objects not yet settled.
	Young int `json:"young"`
	// Inputs and InputBytes count the JSON-lines objects compacted (read
	// into a compacted object, or found there already).
	Inputs     int   `json:"inputs"`
	InputBytes int64 `json:"inputBytes"`
	// Written names the compacted objects written (keys below the store's
	// root); Rows and OutputBytes count what they hold.
	Written     []string `json:"written"`
	Rows        int      `json:"rows"`
	OutputBytes int64    `json:"outputBytes"`
	// Duplicates counts the lines left out because a compacted object, or
	// an earlier line, held their stream position already.
	Duplicates int `json:"duplicates"`
	// Removed counts the JSON-lines objects removed; Kept those kept
	// (Options.Keep).
	Removed int `json:"removed"`
	Kept    int `json:"kept"`
	// Rewritten counts the objects left because they changed (or went)
	// between the read and the removal: the next run takes them.
	Rewritten int `json:"rewritten,omitempty"`
}

// errLeaseLost matches the error of a compaction that found the partition's
// lease taken over (it ran past Options.Lease): it stops before its
// next write or removal.
var errLeaseLost = errors.New("the partition's lease was taken over")

// partition is one (entity, date) of the JSON-lines form.
type partition struct {
	entitySeg, date string
}

func (p partition) String() string { return "entity=" + p.entitySeg + "/date=" + p.date }

// Compact turns the settled JSON-lines objects of every partition into
// Parquet under <prefix>/compacted/, with the same partitions, exactly once:
//
//   - It works on a partition only under its lease, a small object created
//     only if absent and taken over (conditionally) only once expired, so of
//     two compactions one does a partition and the other leaves it (Busy).
//   - It leaves out every line whose stream position (stream ARN and
//     sequence number) a compacted object of the partition holds already,
//     or an earlier line of this run, so a late object (a retried or
//     redriven batch re-creating its object after the partition was
//     compacted) adds only what is new, and an object found again after a
//     crash adds nothing.
//   - It names each compacted object by its inputs and writes it only if
//     absent, reads it back and checks it holds every row written, and only
//     then removes the inputs (unless Keep); a crash between leaves inputs
//     that the compacted object lists, which the next run removes and
//     readers leave out (archive.Archive.Objects).
//
// A partition is never closed: date= is the expiry, not the removal, so an
// item expired long ago can arrive today; objects are taken by age.
func Compact(ctx context.Context, st Store, opts Options) (Result, error) {
	opts = opts.withDefaults()
	var res Result
	base := ""
	if opts.Prefix != "" {
		base = opts.Prefix + "/"
	}
	now := opts.Now()
	settled := map[partition][]objstore.Object{}
	err := st.List(ctx, base, func(o objstore.Object) error {
		rel := strings.TrimPrefix(o.Key, base)
		k, ok := archive.ParseKey(rel)
		if !ok || k.Compacted {
			return nil
		}
		if now.Sub(o.Modified) < opts.OlderThan {
			res.Young++
			return nil
		}
		p := partition{k.EntitySegment, k.Date}
		settled[p] = append(settled[p], o)
		return nil
	})
	if err != nil {
		return res, err
	}
	parts := make([]partition, 0, len(settled))
	for p := range settled {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].String() < parts[j].String() })
	res.Partitions = len(parts)
	for i, p := range parts {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < time.Minute {
			res.Unfinished = len(parts) - i
			break
		}
		c := &compaction{st: st, opts: opts, base: base, part: p, res: &res}
		if err := c.run(ctx, settled[p]); err != nil {
			return res, fmt.Errorf("archive: compacting %s: %w", objstore.Name(st, base+p.String()), err)
		}
	}
	return res, nil
}

// compaction is the compaction of one partition.
type compaction struct {
	st   Store
	opts Options
	base string
	part partition
	res  *Result
	l    *lease
}

func (c *compaction) dir() string { return c.base + archive.CompactedDir + "/" + c.part.String() + "/" }

func (c *compaction) run(ctx context.Context, objs []objstore.Object) (err error) {
	leaseKey := c.base + archive.CompactedDir + "/" + archive.LeaseDir + "/" + c.part.String()
	c.l, err = acquireLease(ctx, c.st, leaseKey, c.opts.Owner, c.opts.Now(), c.opts.Lease)
	if errors.Is(err, errBusy) {
		c.res.Busy = append(c.res.Busy, c.part.String())
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.l.release(ctx, c.opts.Now())) }()

	// What the partition's compacted objects hold: their inputs, and every
	// stream position.
	done := map[archive.Input]bool{}
	held := map[string]bool{}
	a := archive.Open(c.st, "").WithCompacted(Decode)
	err = c.st.List(ctx, c.dir(), func(o objstore.Object) error {
		if !strings.HasSuffix(o.Key, archive.CompactedExt) {
			return nil
		}
		co, err := a.OpenCompacted(ctx, o.Key)
		if err != nil {
			return err
		}
		for _, in := range co.Inputs() {
			done[in] = true
		}
		return co.Rows(func(_ int, _ json.RawMessage, m archive.Meta) error {
			held[position(m)] = true
			return nil
		})
	})
	if err != nil {
		return err
	}

	attrs := rowAttrs{keys: c.opts.Schema.KeyAttributes, typeAttr: c.opts.Schema.TypeAttribute, ttlAttr: c.opts.Schema.TTLAttribute, typed: c.opts.Typed}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	var (
		pw      *parquetWriter
		inputs  []archive.Input
		read    []readObject
		first   string
		written []string // positions in the object being built
		size    int64
	)
	flush := func() error {
		if len(read) == 0 {
			return nil
		}
		if pw != nil && pw.n > 0 {
			if err := c.write(ctx, pw, first, inputs, written); err != nil {
				return err
			}
		}
		if err := c.remove(ctx, read); err != nil {
			return err
		}
		pw, inputs, read, written, size = nil, nil, nil, nil, 0
		return nil
	}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, c.base)
		in := archive.Input{Key: rel, Size: o.Size}
		c.res.Inputs++
		c.res.InputBytes += o.Size
		if done[in] {
			// Compacted already: a crash came before its removal, or it
			// was kept. Removed only as the version of the size compacted.
			if c.opts.Keep {
				c.res.Kept++
				continue
			}
			body, ver, err := c.st.Get(ctx, o.Key)
			if errors.Is(err, objstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if int64(len(body)) != o.Size {
				continue // rewritten since listed: the next run takes it
			}
			if err := c.remove(ctx, []readObject{{o.Key, ver}}); err != nil {
				return err
			}
			continue
		}
		if size > 0 && size+o.Size > c.opts.MaxInputBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		if pw == nil {
			pw = newParquetWriter(attrs)
			k, _ := archive.ParseKey(rel)
			first = k.FirstSeq
		}
		body, ver, err := c.st.Get(ctx, o.Key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // removed since listed: by another compaction, or by hand
		}
		if err != nil {
			return err
		}
		in.Size = int64(len(body)) // as read, should it have been rewritten since listed
		err = archive.Open(fetched{c.st, o.Key, body}, "").ReadLines(ctx, o.Key, func(n int, line []byte) error {
			l, err := archive.ParseLine(line)
			if err != nil {
				return fmt.Errorf("archive: %s line %d: %w", o.Key, n, err)
			}
			pos := position(l.Archive)
			if held[pos] {
				c.res.Duplicates++
				return nil
			}
			held[pos] = true
			written = append(written, pos)
			return pw.add(o.Key, n, l)
		})
		if err != nil {
			return err
		}
		inputs = append(inputs, in)
		read = append(read, readObject{o.Key, ver})
		size += in.Size
	}
	return flush()
}

// position identifies a removal: its stream and sequence number.
func position(m archive.Meta) string { return m.StreamARN + "\x00" + m.SequenceNumber }

// write stores a compacted object, if absent, and checks it.
func (c *compaction) write(ctx context.Context, pw *parquetWriter, first string, inputs []archive.Input, positions []string) error {
	body, err := pw.finish(inputs)
	if err != nil {
		return err
	}
	key := c.dir() + parquetName(first, inputs)
	if err := c.l.check(ctx, c.opts.Now()); err != nil {
		return err
	}
	if _, err := c.st.PutIfAbsent(ctx, key, body); err != nil {
		if errors.Is(err, objstore.ErrPreconditionFailed) {
			return fmt.Errorf("%s was written by another run while this one held the partition: %w", objstore.Name(c.st, key), errLeaseLost)
		}
		return err
	}
	// Durable and checked: read it back, every row where it was written.
	got, _, err := c.st.Get(ctx, key)
	if err != nil {
		return err
	}
	pf, err := openParquet(bytes.NewReader(got), key)
	if err != nil {
		return err
	}
	i := 0
	err = pf.Rows(func(n int, _ json.RawMessage, m archive.Meta) error {
		if i >= len(positions) || position(m) != positions[i] {
			return fmt.Errorf("row %d is not the line written", n)
		}
		i++
		return nil
	})
	if err == nil && i != len(positions) {
		err = fmt.Errorf("%d rows, %d written", i, len(positions))
	}
	if err != nil {
		return fmt.Errorf("archive: %s read back: %w; its inputs are kept", objstore.Name(c.st, key), err)
	}
	c.res.Written = append(c.res.Written, key)
	c.res.Rows += len(positions)
	c.res.OutputBytes += int64(len(body))
	c.opts.Logger.Info("archive: compacted", "partition", c.part.String(), "object", key, "inputs", len(inputs), "rows", len(positions), "bytes", len(body))
	return nil
}

// remove removes compacted inputs, unless they are kept. It checks the
// lease first, and removes each object only as the version read
// (Store.DeleteIf): one rewritten since (a retried batch of the archiver)
// is left for the next run, which adds only its new lines.
func (c *compaction) remove(ctx context.Context, objs []readObject) error {
	if c.opts.Keep {
		c.res.Kept += len(objs)
		return nil
	}
	if err := c.l.check(ctx, c.opts.Now()); err != nil {
		return err
	}
	for _, o := range objs {
		err := c.st.DeleteIf(ctx, o.key, o.version)
		if errors.Is(err, objstore.ErrPreconditionFailed) {
			c.res.Rewritten++
			continue
		}
		if err != nil {
			return err
		}
		c.res.Removed++
	}
	return nil
}

// errBusy is the error of a lease another run holds.
var errBusy = errors.New("held by another compaction")

// lease is a compaction's hold on a partition.
type lease struct {
	st    Store
	key   string
	owner string
	ver   string
	until time.Time
}

// leaseBody is a lease's object.
type leaseBody struct {
	Owner    string    `json:"owner"`
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
	Released bool      `json:"released,omitempty"`
}

func acquireLease(ctx context.Context, st Store, key, owner string, now time.Time, d time.Duration) (*lease, error) {
	lb := leaseBody{Owner: owner, Acquired: now.UTC(), Expires: now.Add(d).UTC()}
	body, err := json.Marshal(lb)
	if err != nil {
		return nil, err
	}
	l := &lease{st: st, key: key, owner: owner, until: lb.Expires}
	ver, err := st.PutIfAbsent(ctx, key, body)
	if err == nil {
		l.ver = ver
		return l, nil
	}
	if !errors.Is(err, objstore.ErrPreconditionFailed) {
		return nil, err
	}
	cur, ver, err := st.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, errBusy // removed by hand in between: the next run takes it
	}
	if err != nil {
		return nil, err
	}
	var held leaseBody
	if err := json.Unmarshal(cur, &held); err != nil {
		return nil, fmt.Errorf("%s is not a lease this version wrote (%v): remove it if no compaction is running", objstore.Name(st, key), err)
	}
	if !held.Released && now.Before(held.Expires) {
		return nil, errBusy
	}
	ver, err = st.Swap(ctx, key, body, ver)
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		return nil, errBusy // another run took it first
	}
	if err != nil {
		return nil, err
	}
	l.ver = ver
	return l, nil
}

// check reports whether the lease is still this run's, with time left.
func (l *lease) check(ctx context.Context, now time.Time) error {
	if !now.Before(l.until) {
		return fmt.Errorf("%s expired at %s: %w", objstore.Name(l.st, l.key), l.until.Format(time.RFC3339), errLeaseLost)
	}
	_, ver, err := l.st.Get(ctx, l.key)
	if err != nil {
		return err
	}
	if ver != l.ver {
		return fmt.Errorf("%s changed: %w", objstore.Name(l.st, l.key), errLeaseLost)
	}
	return nil
}

// release marks the lease released, if it is still this run's.
func (l *lease) release(ctx context.Context, now time.Time) error {
	body, err := json.Marshal(leaseBody{Owner: l.owner, Expires: now.UTC(), Released: true})
	if err != nil {
		return err
	}
	if _, err := l.st.Swap(ctx, l.key, body, l.ver); err != nil && !errors.Is(err, objstore.ErrPreconditionFailed) && !errors.Is(err, objstore.ErrNotFound) {
		return err
	}
	return nil
}
