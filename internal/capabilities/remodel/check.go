package remodel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/spill"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// The gate before a switch: does the target hold exactly what the
// transform makes of the table as of an export, while the stream goes on
// changing it?
//
// The expected target is the transform of the export's items, but for the
// source items whose state in the target's ledger is newer than the
// export's point in time (changed, created or removed since): for those,
// the target items their ledger entries say they hold, by the hash of
// their attributes. The check compares it with the target without holding
// either in memory: the key space is cut into partitions by a hash of the
// target key, and each side is folded, item by item, into a content hash
// per partition (a 128-bit sum of a SHA-256 of each item's key and
// content, and a count), on one pass over the ledger, the export and the
// target each. Partitions whose hashes agree agree item for item (but for
// a hash collision); those that differ are read again, and only they,
// and every difference in them is named: a target item missing, one that
// should not be there, one whose content differs. Memory holds the
// partitions' hashes, the keys of the items changed since the export,
// and on the second pass the differing partitions' items.
//
// A target item whose TTL attribute has passed at the check's time is
// left out where the transform of a source item explains it: an expected
// item of that key whose TTL has passed too. The target's own TTL may
// have removed it, or not yet, as the source's TTL will (and the stream
// then removes it from the target); on a table with many such items the
// two sides' TTLs, each lagging by up to days, leave different ones, and
// that is no difference. One that no expected item explains (a stray)
// is a difference like any other. Both sides fold such items by their
// keys alone into a second hash per partition, and spill their key
// hashes to local disk (Dir); where the target holds such items and the
// two hashes differ, the partition's found keys are matched with its
// expected ones from the spill, a part of the partitions at a time (the
// expected keys of 1/256 of them in memory): only a partition where the
// target holds a key with a passed TTL that no expected item has is read
// again, like a differing one, to name the stray.
//
// A source item whose state in the ledger is in the export's own second
// (engine.InTick) is judged when its export item is read: if the
// target items the ledger says it holds are what the transform makes of
// the export's item, the same either way; otherwise as
// engine.JudgeTick says, by the version. One the version cannot
// judge is named in Unjudged and expected as its ledger entry says, so
// that the rest is judged.

// MaxPartitions bounds CheckOptions.Partitions: the check holds four
// 24-byte hashes per partition, 96 MiB at the most.
const MaxPartitions = 1 << 20

// Reader is what the check reads of a target: its items and its ledger
// (a driver target store's ScanRows and ScanLedgers).
type Reader interface {
	ScanRows(ctx context.Context, fn func(row driver.StoredRow) error) error
	ScanLedgers(ctx context.Context, fn func(key string, entry driver.LedgerEntry) error) error
}

// CheckOptions configures Check. The zero value is ready to use.
type CheckOptions struct {
	// Decode names the source items' attributes (the table's schema: the
	// export items' key attributes).
	Decode pipeline.Options
	// SkipMD5 skips checking the export's data files against the
	// manifest's checksums.
	SkipMD5 bool
	// Now is the check's time, which the target items' TTL is compared
	// with. Default time.Now.
	Now time.Time
	// Partitions is how many hash partitions the key space is cut into.
	// Default 4,096; at most MaxPartitions.
	Partitions int
	// MaxNamed bounds the differences named; the rest are counted. It
	// also bounds the partitions read again. Default 1,000.
	MaxNamed int
	// NewerInMemory is how many keys of source items changed since the
	// export the check holds in memory (default 100,000; negative: none).
	// Past that, on the first pass it spills them and the export items'
	// keys, with the partition hashes each item's target items added, to
	// Dir, joins the two one partition at a time and takes back what the
	// changed items' export items added; on the passes that read
	// differing partitions again it holds only the changed items whose
	// export items add to those partitions.
	NewerInMemory int
	// Dir is where the check spills (default: the system's temporary
	// directory).
	Dir string
}

// CheckResult is what Check found.
type CheckResult struct {
	// AsOf is the export's point in time (the end of the last incremental
	// export, with an overlay): the watermark.
	AsOf time.Time
	// Items is how many export items were read; Changed how many source
	// items' state in the target is newer than the export's.
	Items, Changed int64
	// Expected and Found count the target items expected and read (those
	// whose TTL has passed left out of both), Expired the expected ones so
	// left out.
	Expected, Found, Expired int64
	// Newest is the time of the newest state the target's ledger records
	// (a change's, or the export's for a backfilled item; zero: none): how
	// far the stream has been applied.
	Newest time.Time
	// Partitions is how many the key space was cut into, Differing how
	// many of them differ.
	Partitions, Differing int
	// Differences names how the target differs, one a line, sorted; More
	// counts those not named (past MaxNamed, or in partitions not read
	// again).
	Differences []string
	More        int64
	// Unsettled counts differences seen on one reading of a partition and
	// not on the next: the stream changed those items while they were
	// read. Check again.
	Unsettled int
	// Unjudged names the source items whose state in the ledger, in the
	// export's own second, neither time nor version orders against the
	// export's (engine.JudgeTick), one a line, sorted.
	Unjudged []string
	// Strays counts the target items whose TTL has passed that no
	// expected item explains (matched by key hash) on the first reading:
	// each is a difference, named in Differences when its partition was
	// read again (unless the stream or the target's TTL removed it
	// meanwhile), counted in More when not.
	Strays int64
}

// Agree reports whether the target holds exactly what was expected.
func (c *CheckResult) Agree() bool {
	return c.Differing == 0 && len(c.Differences) == 0 && c.More == 0 && c.Unsettled == 0 && len(c.Unjudged) == 0
}

// bucket is one partition's content hash: a count and a 128-bit sum.
type bucket struct {
	n      int64
	hi, lo uint64
}

// sub takes back what add added.
func (b *bucket) sub(h [16]byte) {
	var borrow uint64
	b.lo, borrow = bits.Sub64(b.lo, binary.BigEndian.Uint64(h[8:]), 0)
	b.hi, _ = bits.Sub64(b.hi, binary.BigEndian.Uint64(h[:8]), borrow)
	b.n--
}

func (b *bucket) add(h [16]byte) {
	var carry uint64
	b.lo, carry = bits.Add64(b.lo, binary.BigEndian.Uint64(h[8:]), 0)
	b.hi, _ = bits.Add64(b.hi, binary.BigEndian.Uint64(h[:8]), carry)
	b.n++
}

// entry is one target item in the check, expected or found.
type entry struct {
	hash string
	// attrs is the item (nil for an expected item of a source item
	// changed since the export: its ledger keeps only the hash).
	attrs pipeline.Item
	// source names the source item an expected item comes from.
	source string
	// expired: its TTL has passed at the check's time.
	expired bool
}

// checker is one run of Check.
type checker struct {
	r      *Remodel
	opts   CheckOptions
	asOf   engine.Token
	asOfT  time.Time
	now    int64 // epoch seconds
	newer  map[string]bool
	res    *CheckResult
	parts  int
	keys   []string
	refuse []string // export items the transform refuses
	// checkKey refuses a ledger key of other attribute names than keys;
	// writes is what the incremental exports know of the items' writes.
	checkKey func(string) error
	writes   *engine.ExportWrites
	// inTick holds, on a pass, the ledger states in the export's own
	// second until their export items are read; unjudge names those not
	// judged (on the first pass).
	inTick  map[string]engine.ItemState
	unjudge []string
	// On the second pass, only the partitions of only are collected.
	only        map[int]bool
	want, got   map[driver.RowRef]entry
	wantB, gotB []bucket
	// wantX and gotX fold the keys of the items whose TTL has passed;
	// expired holds their key hashes, spilled on the first pass, by
	// partition (expiredParts ways).
	wantX, gotX []bucket
	expired     *spill.Set
	collecting  bool
	// spillErr is the first error spilling an expected item's key hash.
	spillErr error
	// collided names the target keys that two source items make, with
	// those items, on a collecting pass.
	collided map[driver.RowRef][]string
	// items holds, once the keys of the source items changed since are
	// more than NewerInMemory on the first pass, those keys and the export
	// items' (spilled); newers holds a collecting pass's changed keys.
	items, newers *spill.Set
	enc           spill.Encoder
}

// Check compares target, the remodel's target, with the transform of an
// export (with an overlay of incremental exports, or nil) as of its point
// in time, while the stream goes on changing the target (see above). An
// export whose point in time is not known (no manifest) is taken as newer
// than every change: every item is checked against the export.
func (r *Remodel) Check(ctx context.Context, full *export.Export, overlay *export.Overlay, target Reader, opts CheckOptions) (*CheckResult, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Partitions <= 0 {
		opts.Partitions = 4096
	}
	if opts.Partitions > MaxPartitions {
		return nil, fmt.Errorf("remodel: %d partitions: at most %d (four 24-byte hashes each)", opts.Partitions, MaxPartitions)
	}
	if opts.MaxNamed <= 0 {
		opts.MaxNamed = 1000
	}
	res := &CheckResult{AsOf: verify.Watermark(full, overlay), Partitions: opts.Partitions}
	asOf := verify.Effective(res.AsOf)
	c := &checker{r: r, opts: opts, asOf: engine.AsOfToken(asOf), asOfT: asOf, now: opts.Now.Unix(), newer: map[string]bool{}, res: res, parts: opts.Partitions,
		keys: verify.KeyAttributes(opts.Decode, overlay), writes: verify.Writes(overlay)}
	c.checkKey = engine.KeyAttributesCheck(c.keys)
	c.wantB, c.gotB = make([]bucket, c.parts), make([]bucket, c.parts)
	c.wantX, c.gotX = make([]bucket, c.parts), make([]bucket, c.parts)
	defer func() {
		for _, s := range []*spill.Set{c.items, c.newers, c.expired} {
			if s != nil {
				_ = s.Remove() // a temporary directory: nothing to lose
			}
		}
	}()
	if err := c.pass(ctx, full, overlay, target); err != nil {
		return nil, err
	}
	var differing, candidates []int
	for i := range c.parts {
		switch {
		case c.wantB[i] != c.gotB[i]:
			differing = append(differing, i)
		case c.gotX[i].n > 0 && c.wantX[i] != c.gotX[i]:
			// Items whose TTL has passed on both sides, not the same
			// keys: matched by key hash below.
			candidates = append(candidates, i)
		}
	}
	strays, err := c.matchExpired(candidates)
	if err != nil {
		return nil, err
	}
	var unmatched []int
	for _, p := range candidates {
		if strays[p] > 0 {
			unmatched = append(unmatched, p)
			res.Strays += strays[p]
		}
	}
	res.Differing = len(differing)
	res.Differences = append(res.Differences, c.refuse...)
	res.Unjudged = c.unjudge
	sort.Strings(res.Unjudged)
	if len(differing) == 0 && len(unmatched) == 0 {
		return res, nil
	}
	// Read the differing partitions again, as many as it takes to name
	// MaxNamed differences at most one partition over, then those holding
	// stray items with a passed TTL, to name them.
	c.only, c.collecting = map[int]bool{}, true
	var budget int64
	for _, p := range differing {
		n := max(c.wantB[p].n, c.gotB[p].n) + max(c.wantX[p].n, c.gotX[p].n)
		if len(c.only) > 0 && budget+n > 64*int64(opts.MaxNamed) {
			res.More++ // at least one difference in each partition left unread
			continue
		}
		c.only[p] = true
		budget += n
	}
	for _, p := range unmatched {
		n := max(c.wantB[p].n, c.gotB[p].n) + max(c.wantX[p].n, c.gotX[p].n)
		if len(c.only) > 0 && budget+n > 64*int64(opts.MaxNamed) {
			res.More += strays[p] // strays, not named
			continue
		}
		c.only[p] = true
		budget += n
	}
	// Twice: a difference the stream made while the partition was read
	// (an item changed between the reads of its ledger entry and of the
	// target) does not persist; one in both readings does.
	var readings [2][]string
	for i := range readings {
		c.res, c.refuse, c.unjudge = &CheckResult{}, nil, nil // the first pass counted
		c.want, c.got = map[driver.RowRef]entry{}, map[driver.RowRef]entry{}
		c.collided = map[driver.RowRef][]string{}
		if err := c.pass(ctx, full, overlay, target); err != nil {
			return nil, err
		}
		readings[i] = c.name()
	}
	first := make(map[string]bool, len(readings[0]))
	for _, d := range readings[0] {
		first[d] = true
	}
	for _, d := range readings[1] {
		if first[d] {
			res.Differences = append(res.Differences, d)
			delete(first, d)
		} else {
			res.Unsettled++
		}
	}
	res.Unsettled += len(first)
	sort.Strings(res.Differences)
	if n := len(res.Differences); n > opts.MaxNamed {
		res.More += int64(n - opts.MaxNamed)
		res.Differences = res.Differences[:opts.MaxNamed]
	}
	return res, nil
}

// pass reads the ledger, the export and the target once.
func (c *checker) pass(ctx context.Context, full *export.Export, overlay *export.Overlay, target Reader) error {
	c.inTick, c.newer = map[string]engine.ItemState{}, map[string]bool{}
	err := target.ScanLedgers(ctx, func(key string, e driver.LedgerEntry) error {
		s, ok, err := engine.DecodeItemState(key, e)
		if err != nil || !ok {
			return err
		}
		if err := c.checkKey(key); err != nil {
			return err
		}
		if t := time.UnixMicro(s.Token.Micros); s.Token.Micros != 0 && t.After(c.res.Newest) {
			c.res.Newest = t.UTC()
		}
		if engine.InTick(s.Token, c.asOfT) {
			c.inTick[key] = s
			return nil
		}
		if !s.Token.Newer(c.asOf) {
			return nil
		}
		c.res.Changed++
		c.expectLedger(key, s)
		return c.noteNewer(key)
	})
	if err != nil {
		return fmt.Errorf("reading the target's ledger: %w", err)
	}
	if c.collecting && c.items != nil {
		if err := c.join(); err != nil {
			return err
		}
	}
	err = export.Items(ctx, full, overlay, c.opts.Decode, c.opts.SkipMD5, func(it pipeline.Item) error {
		c.res.Items++
		keys := make(pipeline.Item, len(c.keys))
		for _, k := range c.keys {
			if v, ok := it[k]; ok {
				keys[k] = v
			}
		}
		key := engine.LedgerKey(keys)
		if c.newer[key] {
			return nil
		}
		rows, err := c.r.rows(it)
		if s, ok := c.inTick[key]; ok {
			delete(c.inTick, key)
			if !c.judgeInTick(key, pipeline.ItemKey(keys), s, it, rows, err == nil) {
				return nil
			}
		}
		spilling := c.items != nil && !c.collecting
		if err != nil {
			line := fmt.Sprintf("source item %s: %v", pipeline.KeyString(keys), err)
			switch {
			case spilling:
				return c.spillExport(key, line, nil)
			case !c.collecting:
				c.refuse = append(c.refuse, line)
			}
			return nil
		}
		for _, row := range rows {
			ref := driver.RowRef{Projection: c.r.Name(), Partition: row.Partition, Sort: row.Sort}
			c.expect(ref, engine.RowHash(row.Attrs), row.Expires, row.Attrs, pipeline.KeyString(keys))
		}
		if spilling && len(rows) > 0 {
			return c.spillExport(key, "", rows)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the export: %w", err)
	}
	if !c.collecting && c.items != nil {
		if err := c.join(); err != nil {
			return err
		}
	}
	// The source items in the export's own second that the export lacks.
	for key, s := range c.inTick {
		c.judgeInTick(key, "", s, nil, nil, true)
	}
	if c.spillErr != nil {
		return c.spillErr
	}
	err = target.ScanRows(ctx, func(row driver.StoredRow) error {
		e := expiry(row.Attrs[c.r.ttlAttr])
		expired := e != 0 && e <= c.now
		if !expired {
			c.res.Found++
		}
		p := c.partition(row.Ref)
		if c.collecting {
			if c.only[p] {
				c.got[row.Ref] = entry{hash: engine.RowHash(row.Attrs), attrs: row.Attrs, expired: expired}
			}
			return nil
		}
		if expired {
			h := itemHash(row.Ref, "")
			c.gotX[p].add(h)
			return c.spillExpired(recFoundX, p, h)
		}
		c.gotB[p].add(itemHash(row.Ref, engine.RowHash(row.Attrs)))
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the target: %w", err)
	}
	return nil
}

// expectLedger adds the target items a source item's ledger entry says
// it holds.
func (c *checker) expectLedger(key string, s engine.ItemState) {
	c.newer[key] = true
	for _, row := range s.Rows {
		if row.Ref.Projection != c.r.Name() {
			continue
		}
		c.expect(row.Ref, row.Hash, row.Expires, nil, engine.DescribeOwner(key)+" (changed since the export: as its ledger entry says)")
	}
}

// judgeInTick judges a source item whose ledger state is in the export's
// own second against its export item (nil: the export lacks it) and the
// target items the transform makes of it (rows; made false: the transform
// refuses it), and reports whether the export item is to be expected.
// itemKey is the item's pipeline.ItemKey ("": the ledger key's).
func (c *checker) judgeInTick(key, itemKey string, s engine.ItemState, it pipeline.Item, rows []projections.Row, made bool) bool {
	if made && c.sameRows(s, rows) {
		return it != nil // the same either way: judged against the export
	}
	x := engine.ExportState{}
	if it != nil {
		x = engine.ExportStateOf(it, c.opts.Decode.WithDefaults().VersionAttribute)
	}
	x.LastWrite, x.WritesFrom = c.writes.Of(engine.ItemKeyOf(key, itemKey))
	since, why := engine.JudgeTick(s.Token, s.Removed, x)
	if since {
		c.res.Changed++
	} else if !c.collecting {
		c.unjudge = append(c.unjudge, fmt.Sprintf("source item %s: %s", engine.DescribeOwner(key), why))
	}
	c.expectLedger(key, s)
	return false
}

// sameRows reports whether the target items a ledger state says its
// source item holds are those the transform makes of the export's item.
func (c *checker) sameRows(s engine.ItemState, rows []projections.Row) bool {
	type held struct {
		hash    string
		expires int64
	}
	led := map[driver.RowRef]held{}
	for _, r := range s.Rows {
		if r.Ref.Projection == c.r.Name() {
			led[r.Ref] = held{r.Hash, r.Expires}
		}
	}
	if len(led) != len(rows) {
		return false
	}
	for _, row := range rows {
		ref := driver.RowRef{Projection: c.r.Name(), Partition: row.Partition, Sort: row.Sort}
		if led[ref] != (held{engine.RowHash(row.Attrs), row.Expires}) {
			return false
		}
	}
	return true
}

// expect adds an expected target item. One whose TTL has passed is
// folded by its key alone: it explains a target item of that key whose
// TTL has passed too, which the target's TTL may have removed.
func (c *checker) expect(ref driver.RowRef, hash string, expires int64, attrs pipeline.Item, source string) {
	expired := expires != 0 && expires <= c.now
	if expired {
		c.res.Expired++
	} else {
		c.res.Expected++
	}
	p := c.partition(ref)
	if c.collecting {
		if c.only[p] {
			prev, ok := c.want[ref]
			if ok && expired && !prev.expired {
				return // an item whose TTL has not passed is expected there
			}
			if ok && prev.source != source && !prev.expired && !expired {
				if c.collided[ref] == nil {
					c.collided[ref] = []string{prev.source}
				}
				c.collided[ref] = append(c.collided[ref], source)
			}
			c.want[ref] = entry{hash: hash, attrs: attrs, source: source, expired: expired}
		}
		return
	}
	if expired {
		h := itemHash(ref, "")
		c.wantX[p].add(h)
		c.spillErr = errors.Join(c.spillErr, c.spillExpired(recExpectedX, p, h))
		return
	}
	c.wantB[p].add(itemHash(ref, hash))
}

func (c *checker) partition(ref driver.RowRef) int {
	h := fnv.New64a()
	h.Write([]byte(ref.Partition))
	h.Write([]byte{0})
	h.Write([]byte(ref.Sort))
	return int(h.Sum64() % uint64(c.parts))
}

// itemHash is one item's share of its partition's hash.
func itemHash(ref driver.RowRef, content string) [16]byte {
	sum := sha256.Sum256([]byte(ref.Partition + "\x00" + ref.Sort + "\x00" + content))
	var out [16]byte
	copy(out[:], sum[:16])
	return out
}

// name lists the differences between the collected partitions' items.
func (c *checker) name() []string {
	var out []string
	refs := make([]driver.RowRef, 0, len(c.want)+len(c.got))
	for ref := range c.want {
		refs = append(refs, ref)
	}
	for ref := range c.got {
		if _, ok := c.want[ref]; !ok {
			refs = append(refs, ref)
		}
	}
	slices.SortFunc(refs, func(a, b driver.RowRef) int {
		if a.Partition != b.Partition {
			return strings.Compare(a.Partition, b.Partition)
		}
		return strings.Compare(a.Sort, b.Sort)
	})
	for _, ref := range refs {
		w, wok := c.want[ref]
		g, gok := c.got[ref]
		item := "target item " + c.r.DescribeKey(ref)
		switch {
		case wok && w.expired && (!gok || g.expired):
			// Both left out: the target's TTL may have removed it.
		case !wok && g.expired:
			out = append(out, fmt.Sprintf("%s: not expected (no source item makes it, as of the export; its TTL has passed, but no source item's explains it): %s", item, pipeline.AppendItem(nil, g.attrs)))
		case len(c.collided[ref]) > 1:
			out = append(out, fmt.Sprintf("%s: source items %s all make it (a collision: the transform must give each its own key; the target holds at most one of them)", item, strings.Join(c.collided[ref], ", ")))
		case !gok:
			out = append(out, fmt.Sprintf("%s: missing (from source item %s)", item, w.source))
		case !wok:
			out = append(out, fmt.Sprintf("%s: not expected (no source item makes it, as of the export): %s", item, pipeline.AppendItem(nil, g.attrs)))
		case w.hash != g.hash && w.attrs == nil:
			out = append(out, fmt.Sprintf("%s: got %s, not what the ledger entry of source item %s says", item, pipeline.AppendItem(nil, g.attrs), w.source))
		case w.hash != g.hash:
			out = append(out, fmt.Sprintf("%s: got %s, want %s (from source item %s)", item, pipeline.AppendItem(nil, g.attrs), pipeline.AppendItem(nil, w.attrs), w.source))
		}
	}
	return out
}

// Records of the spilled key hashes of target items whose TTL has passed:
// one expected, one expected and then taken back (its source item changed
// since), one found. Each holds its partition and the key's itemHash.
const (
	recExpectedX  = 'x'
	recWithdrawnX = 'y'
	recFoundX     = 'z'
	// expiredParts is how many ways the key hashes are spilled: the
	// expected ones of one way are in memory at a time.
	expiredParts = 256
)

// spillExpired spills the key hash h of a target item whose TTL has
// passed, in partition p, on the first pass.
func (c *checker) spillExpired(kind byte, p int, h [16]byte) error {
	if c.collecting {
		return nil
	}
	if c.expired == nil {
		s, err := spill.New(c.opts.Dir, expiredParts)
		if err != nil {
			return err
		}
		c.expired = s
	}
	c.enc.Reset()
	c.enc.Byte(kind)
	c.enc.Uint(uint64(p))
	c.enc.Text(string(h[:]))
	return c.expired.Write(p%expiredParts, c.enc.B)
}

// matchExpired matches, in the partitions given, the keys of the target
// items found with a passed TTL with those of the items expected with
// one, by their spilled key hashes, and returns how many found ones no
// expected one explains (strays), by partition. An expected one the
// target lacks is no difference: the target's TTL removed it.
func (c *checker) matchExpired(parts []int) (map[int]int64, error) {
	strays := map[int]int64{}
	if len(parts) == 0 || c.expired == nil {
		return strays, nil
	}
	if err := c.expired.Flush(); err != nil {
		return nil, err
	}
	ways := map[int]map[int]bool{}
	for _, p := range parts {
		w := p % expiredParts
		if ways[w] == nil {
			ways[w] = map[int]bool{}
		}
		ways[w][p] = true
	}
	for _, w := range slices.Sorted(maps.Keys(ways)) {
		want := map[[16]byte]int{}
		read := func(fn func(kind byte, p int, h [16]byte)) error {
			return c.expired.Read(w, func(rec []byte) error {
				d := spill.Decoder{B: rec}
				kind, p, hs := d.Byte(), int(d.Uint()), d.Text()
				if d.Err != nil || len(hs) != 16 {
					return fmt.Errorf("spilled key hashes, way %d: a record cut short", w)
				}
				if ways[w][p] {
					fn(kind, p, [16]byte([]byte(hs)))
				}
				return nil
			})
		}
		err := read(func(kind byte, _ int, h [16]byte) {
			switch kind {
			case recExpectedX:
				want[h]++
			case recWithdrawnX:
				want[h]--
			}
		})
		if err == nil {
			err = read(func(kind byte, p int, h [16]byte) {
				if kind == recFoundX && want[h] <= 0 {
					strays[p]++
				}
			})
		}
		if err != nil {
			return nil, err
		}
	}
	return strays, nil
}

// Records of the spilled item partitions: a source item changed since
// the export, an export item (its refusal, or the partitions and hashes
// of the target items it adds).
const (
	recNewer  = 'n'
	recExport = 'e'
)

func keyPartition(key string) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % 256)
}

// noteNewer notes a source item changed since: past NewerInMemory on the
// first pass, or on a later pass of a check that spilled on its first,
// the keys held so far and it are spilled, in partitions by key.
func (c *checker) noteNewer(key string) error {
	limit := c.opts.NewerInMemory
	if limit == 0 {
		limit = 100_000
	}
	switch {
	case !c.collecting && c.items == nil && len(c.newer) > limit:
		s, err := spill.New(c.opts.Dir, 256)
		if err != nil {
			return err
		}
		c.items = s
	case c.collecting && c.items != nil && c.newers == nil:
		s, err := spill.New(c.opts.Dir, 256)
		if err != nil {
			return err
		}
		c.newers = s
	}
	to := c.items
	if c.collecting {
		to = c.newers
	}
	if to == nil {
		return nil
	}
	for k := range c.newer {
		c.enc.Reset()
		c.enc.Byte(recNewer)
		c.enc.Text(k)
		if err := to.Write(keyPartition(k), c.enc.B); err != nil {
			return err
		}
	}
	clear(c.newer)
	return nil
}

// spillExport spills an export item's key with what it adds: a refusal,
// or its target items' partitions and hashes.
func (c *checker) spillExport(key, refused string, rows []projections.Row) error {
	c.enc.Reset()
	c.enc.Byte(recExport)
	c.enc.Text(key)
	c.enc.Text(refused)
	c.enc.Uint(uint64(len(rows)))
	for _, row := range rows {
		ref := driver.RowRef{Projection: c.r.Name(), Partition: row.Partition, Sort: row.Sort}
		expired := row.Expires != 0 && row.Expires <= c.now
		h := itemHash(ref, "")
		if !expired {
			h = itemHash(ref, engine.RowHash(row.Attrs))
		}
		c.enc.Uint(uint64(c.partition(ref)))
		c.enc.Text(string(h[:]))
		if expired {
			c.enc.Byte(1)
		} else {
			c.enc.Byte(0)
		}
	}
	return c.items.Write(keyPartition(key), c.enc.B)
}

// join joins the spilled export items with the source items changed
// since, one partition at a time. On the first pass, what a changed
// item's export item added is taken back, and the refusals of the others
// kept; on a collecting pass, the changed items whose export items add to
// the partitions read again are held, to be passed over as the first
// pass passed over all of them.
func (c *checker) join() error {
	newers := c.items
	if c.collecting {
		newers = c.newers
		c.newers = nil
		if newers == nil {
			return nil // no source item changed since
		}
		defer func() { _ = newers.Remove() }()
	}
	if err := c.items.Flush(); err != nil {
		return err
	}
	if err := newers.Flush(); err != nil {
		return err
	}
	for p := range c.items.Len() {
		newer, err := newers.Keys(p, recNewer)
		if err != nil {
			return err
		}
		err = c.items.Each(p, recExport, func(d *spill.Decoder) error {
			key, refused, n := d.Text(), d.Text(), d.Uint()
			if d.Err != nil {
				return nil // Each says so
			}
			if !newer[key] {
				if refused != "" && !c.collecting {
					c.refuse = append(c.refuse, refused)
				}
				return nil
			}
			for range n {
				part, hs, expired := int(d.Uint()), d.Text(), d.Byte() == 1
				if d.Err != nil || len(hs) != 16 || part >= c.parts {
					return fmt.Errorf("spilled export item %s: cut short", key)
				}
				var h [16]byte
				copy(h[:], hs)
				switch {
				case c.collecting:
					if c.only[part] {
						c.newer[key] = true
					}
				case expired:
					c.wantX[part].sub(h)
					c.res.Expired--
					if err := c.spillExpired(recWithdrawnX, part, h); err != nil {
						return err
					}
				default:
					c.wantB[part].sub(h)
					c.res.Expected--
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
