package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/spill"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// An AsOfCheck compares a table with a recomputation from an export while
// the table goes on changing: each item's ledger entry says whether its
// state in the table is newer than the export's point in time. The
// expected view is the recomputation from the export's items whose state
// is not newer, plus what the ledger says every newer item contributes
// (items changed, created or removed since). A table that equals it holds
// exactly the export's contributions for the items unchanged since, and
// for the others exactly what their ledger entries say, with no delta
// lost or added twice.
//
// Memory does not grow with the export, the table or the changes since:
// every contribution (of an export item, of a newer item's ledger entry)
// and every stored aggregate shard and row is spilled to local disk
// (Dir), cut into partitions by a hash of its aggregate or row key; Diff
// then sums and compares one partition at a time, and cuts a partition
// too large for that into smaller ones first. The keys of the items
// changed since are held in memory up to NewerInMemory of them; past
// that, they and the export items' keys are spilled too, cut by a hash of
// the item key, and joined one partition at a time: an export item found
// changed since has its contributions withdrawn from the partitions it
// added to. The disk needed is about the size of the contributions and
// the table's aggregate shards and rows, as Spilled says after Diff.
//
// Use it in this order: AddLedgers, AddExportItems for every item of the
// export, then Diff; Close removes what is spilled (Diff does too).
//
// An item whose state in the ledger is in the export's own clock tick
// (InTick: its second, for a DynamoDB Streams record) is held back until
// its export item is read: if its contributions are the same either way,
// it is judged against the export's; otherwise as JudgeTick says, by its
// version, and where the version cannot tell it is named in Unjudged. Memory holds those items'
// ledger entries: the changes of one second.
type AsOfCheck struct {
	asOf     Token
	asOfTime time.Time
	// VersionAttribute names the export items' version attribute
	// (default pipeline.DefaultVersionAttribute), which orders an item's
	// state in the export's own second.
	VersionAttribute string
	// Dir is where the check spills (default: the system's temporary
	// directory).
	Dir string
	// NewerInMemory is how many keys of items changed since the export
	// the check holds in memory before it spills them (default 100,000;
	// negative: none).
	NewerInMemory int
	// PartitionBytes is the size past which Diff cuts a spilled partition
	// into smaller ones before it reads it (default 48 MiB): what one
	// partition holds in memory is about twice that.
	PartitionBytes int64
	// MaxNamed bounds the differences Diff names (the first, sorted); the
	// rest are counted in More. Zero: all are named.
	MaxNamed int
	// Keep, when set, picks the differences that count (Diff's lines):
	// the others are neither named nor counted.
	Keep func(line string) bool
	// KeyAttributes, when set, are the key attributes the export's items
	// are read by: AddLedgers refuses a table whose ledger holds an item
	// keyed by other attribute names (a *keyAttributesError).
	KeyAttributes []string
	// Writes, when set, is what the incremental exports know of each
	// item's writes, which judges the items in the export's own clock
	// tick (JudgeTick) before their version is asked.
	Writes *ExportWrites
	// inTick holds the ledger entries of the items whose state is in the
	// export's own clock tick, until their export items are read.
	inTick map[string]*ledger
	// scratch and addScratch recompute one item's contributions, names
	// the projections checked.
	scratch    *projections.View
	addScratch func(pipeline.Item) error
	names      map[string]bool
	// newer holds the keys of items whose state is newer, seen in
	// AddLedgers, until there are more than NewerInMemory; then items
	// holds them and the export items' keys, and newer is nil.
	newer map[string]bool
	parts *spill.Set // contributions, store shards and rows, by their key
	items *spill.Set // items changed since and export items, by item key
	enc   spill.Encoder
	// Changed is how many items' state is newer than the export's (told
	// apart), Unfolded the partials a backfill has not folded yet, Items
	// how many export items the check read.
	Changed  int64
	Unfolded []string
	Items    int64
	// Mixed lists the data files a backfill read in part from an object
	// that is not the exported one (its record, under MixedPrefix), one
	// a line naming the file, the job and what was found: the table holds
	// items of another object under the export's tokens, which no
	// comparison can tell from the export's own.
	Mixed []string
	// Refused lists the export items a projection refuses, one a line
	// naming the projection, the item and why: they add nothing to the
	// expected view (the engine fails every record a projection refuses as
	// permanent, and a backfill lists them as failed), and Diff counts
	// each as a difference.
	Refused []string
	// Unjudged lists the items the check could not judge (JudgeTick),
	// one a line naming the item and why; set by Diff. They are expected
	// as their ledger entries say, so that the rest is judged: a check
	// with any cannot agree.
	Unjudged []string
	// More counts the differences Diff found and did not name (past
	// MaxNamed).
	More int64
	// Spilled is how many bytes the check wrote to Dir, the most it held
	// there at once.
	Spilled int64
	// expected counts the expected view's aggregates and rows, by Diff.
	expAggs, expRows int
	// seq numbers the export items read (a parted check's steps start
	// theirs where StartAt says); nparts, when set, is how many partitions
	// a parted check hands over (Parted), and parted says it is one.
	seq    int64
	nparts int
	parted bool
	// inTickRaw holds a parted check's in-tick ledger entries as stored,
	// for WriteInTick.
	inTickRaw map[string]driver.LedgerEntry
}

// partitions is how many partitions the check spills into at first.
func (a *AsOfCheck) partitions() int {
	if a.nparts > 0 {
		return a.nparts
	}
	return spillPartitions
}

// spillPartitions is how many partitions a check spills into at first;
// Diff cuts a partition larger than PartitionBytes into splitWays smaller
// ones before it reads it, at most maxSplits times.
const (
	spillPartitions = 256
	splitWays       = 16
	maxSplits       = 8
)

// NewAsOfCheck returns a check of a table built by ps against an export
// as of asOf, whose items keep their entity type in typeAttribute.
func NewAsOfCheck(asOf time.Time, typeAttribute string, ps ...projections.Projection) *AsOfCheck {
	scratch := projections.NewView()
	names := make(map[string]bool, len(ps))
	for _, p := range ps {
		names[p.Name()] = true
	}
	return &AsOfCheck{
		asOf: AsOfToken(asOf), asOfTime: asOf, newer: map[string]bool{},
		inTick: map[string]*ledger{}, scratch: scratch, addScratch: scratch.Adder(typeAttribute, ps...), names: names,
	}
}

// Close removes what the check spilled.
func (a *AsOfCheck) Close() error {
	var errs []error
	for _, s := range []*spill.Set{a.parts, a.items} {
		if s != nil {
			if s.Bytes > a.Spilled {
				a.Spilled = s.Bytes
			}
			errs = append(errs, s.Remove())
		}
	}
	a.parts, a.items = nil, nil
	return errors.Join(errs...)
}

// Record kinds in the partitions: an export item's aggregate contribution
// and row, a newer item's (its ledger entry's), a stored aggregate shard
// and row, and an export item's contribution withdrawn. Every record
// starts with its kind and its key's hash, which places it.
const (
	recExportAgg = 'a'
	recLedgerAgg = 'l'
	recExportRow = 'r'
	recLedgerRow = 'w'
	recStoredAgg = 'g'
	recStoredRow = 'h'
	recWithdrawn = 'x'
	// In the item partitions: an item changed since, an export item, and
	// (a parted check's) an item in the export's own clock tick that an
	// export item was found for.
	recNewer    = 'n'
	recExport   = 'e'
	recSeenTick = 's'
)

func aggHash(k projections.AggregateKey) uint64 {
	h := fnv.New64a()
	h.Write([]byte(k.Projection))
	h.Write([]byte{0})
	h.Write([]byte(k.Key))
	return h.Sum64()
}

func rowHash(ref driver.RowRef) uint64 {
	h := fnv.New64a()
	h.Write([]byte(ref.Projection))
	h.Write([]byte{1})
	h.Write([]byte(ref.Partition))
	h.Write([]byte{0})
	h.Write([]byte(ref.Sort))
	return h.Sum64()
}

func itemHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// placeAt is the partition of a key hash at a level of cutting: the first
// 256 ways by its low byte (a parted check's fewer ways by its low bits),
// each cut after that 16 ways by its next four bits.
func (a *AsOfCheck) placeAt(h uint64, level int) int {
	if level == 0 {
		return int(h % uint64(a.partitions()))
	}
	return int(h >> (8 + 4*(level-1)) % splitWays)
}

func (a *AsOfCheck) open() error {
	if a.parts != nil {
		return nil
	}
	s, err := spill.New(a.Dir, a.partitions())
	if err != nil {
		return err
	}
	a.parts = s
	return nil
}

func (a *AsOfCheck) putValues(values map[string]decimal.Decimal) {
	a.enc.Uint(uint64(len(values)))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		a.enc.Text(name)
		a.enc.Text(values[name].String())
	}
}

// begin starts a record of the partitions: its kind, key hash and export
// item (seq; 0: none).
func (a *AsOfCheck) begin(kind byte, h uint64, seq int64) error {
	if err := a.open(); err != nil {
		return err
	}
	a.enc.Reset()
	a.enc.Byte(kind)
	a.enc.Uint(h)
	a.enc.Uint(uint64(seq))
	return nil
}

// spillAgg spills an aggregate contribution (seq: the export item's, 0 for
// a ledger entry's or a stored shard).
func (a *AsOfCheck) spillAgg(kind byte, h uint64, seq int64, k projections.AggregateKey, values map[string]decimal.Decimal) error {
	if err := a.begin(kind, h, seq); err != nil {
		return err
	}
	a.enc.Text(k.Projection)
	a.enc.Text(k.Key)
	a.putValues(values)
	return a.parts.Write(a.placeAt(h, 0), a.enc.B)
}

// spillRow spills a row: its attributes encoded, or (a newer item's) the
// hash its ledger entry keeps.
func (a *AsOfCheck) spillRow(kind byte, h uint64, seq int64, ref driver.RowRef, content string) error {
	if err := a.begin(kind, h, seq); err != nil {
		return err
	}
	a.enc.Text(ref.Projection)
	a.enc.Text(ref.Partition)
	a.enc.Text(ref.Sort)
	a.enc.Text(content)
	return a.parts.Write(a.placeAt(h, 0), a.enc.B)
}

// newerThan reports whether a ledger entry's state is newer than the
// check's point in time by time, as the engine compares an export's
// state with it; one in the export's own clock tick is not asked.
func (a *AsOfCheck) newerThan(tok Token) bool { return tok.Newer(a.asOf) }

// expectLedger adds an item's contributions as its ledger entry says.
func (a *AsOfCheck) expectLedger(l *ledger) error {
	for _, c := range l.C.Aggs {
		k := projections.AggregateKey{Projection: c.Ref.Projection, Key: c.Ref.Key}
		if err := a.spillAgg(recLedgerAgg, aggHash(k), 0, k, c.Values); err != nil {
			return err
		}
	}
	for _, r := range l.C.Rows {
		if err := a.spillRow(recLedgerRow, rowHash(r.Ref), 0, r.Ref, r.Hash); err != nil {
			return err
		}
	}
	return nil
}

// addNewer notes the key of an item whose state is newer: in memory, or
// once there are more than NewerInMemory, spilled.
func (a *AsOfCheck) addNewer(key string) error {
	if a.newer != nil {
		a.newer[key] = true
		limit := a.NewerInMemory
		if limit == 0 {
			limit = 100_000
		}
		if len(a.newer) <= limit {
			return nil
		}
		s, err := spill.New(a.Dir, a.partitions())
		if err != nil {
			return err
		}
		a.items = s
		for _, k := range slices.Sorted(maps.Keys(a.newer)) {
			if err := a.spillNewer(k); err != nil {
				return err
			}
		}
		a.newer = nil
		return nil
	}
	return a.spillNewer(key)
}

func (a *AsOfCheck) spillNewer(key string) error {
	a.enc.Reset()
	a.enc.Byte(recNewer)
	a.enc.Text(key)
	return a.items.Write(a.placeAt(itemHash(key), 0), a.enc.B)
}

// differing returns the checked projections in which an export item (nil:
// none) and a ledger entry's contributions differ, sorted; none: the
// item is expected the same either way. An item a projection refuses
// differs in every projection.
func (a *AsOfCheck) differing(it pipeline.Item, l *ledger) []string {
	clear(a.scratch.Aggregates)
	clear(a.scratch.Rows)
	if it != nil {
		if err := a.addScratch(it); err != nil {
			return slices.Sorted(maps.Keys(a.names))
		}
	}
	a.scratch.Prune()
	led := projections.NewView()
	ledRows := map[driver.RowRef]string{}
	for _, c := range l.C.Aggs {
		if a.names[c.Ref.Projection] {
			led.Add(projections.AggregateKey{Projection: c.Ref.Projection, Key: c.Ref.Key}, c.Values)
		}
	}
	for _, r := range l.C.Rows {
		if a.names[r.Ref.Projection] {
			ledRows[r.Ref] = r.Hash
		}
	}
	led.Prune()
	diff := map[string]bool{}
	for k, vs := range a.scratch.Aggregates {
		if !sameValues(vs, led.Aggregates[k]) {
			diff[k.Projection] = true
		}
	}
	for k := range led.Aggregates {
		if _, ok := a.scratch.Aggregates[k]; !ok {
			diff[k.Projection] = true
		}
	}
	for ref, attrs := range a.scratch.Rows {
		if h, ok := ledRows[ref]; !ok || h != hashItem(attrs) {
			diff[ref.Projection] = true
		}
	}
	for ref := range ledRows {
		if _, ok := a.scratch.Rows[ref]; !ok {
			diff[ref.Projection] = true
		}
	}
	return slices.Sorted(maps.Keys(diff))
}

func sameValues(a, b map[string]decimal.Decimal) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}

// judgeInTick judges an item whose ledger state is in the export's own
// clock tick against its export item (nil: the export lacks it), and
// reports whether the export item is to be added to the expected view.
// itemKey is the item's pipeline.ItemKey ("": the ledger key's).
func (a *AsOfCheck) judgeInTick(key, itemKey string, l *ledger, it pipeline.Item) (bool, error) {
	differ := a.differing(it, l)
	if len(differ) == 0 {
		return it != nil, nil // the same either way: judged against the export
	}
	x := ExportState{}
	if it != nil {
		x = ExportStateOf(it, a.VersionAttribute)
	}
	x.LastWrite, x.WritesFrom = a.Writes.Of(ItemKeyOf(key, itemKey))
	since, why := JudgeTick(l.Tok, l.Removed, x)
	if since {
		a.Changed++
	} else {
		a.Unjudged = append(a.Unjudged, fmt.Sprintf("item %s: %s", describeOwner(key), why))
	}
	return false, a.expectLedger(l)
}

// AddLedgers scans the table's ledger entries: the contributions of every
// item whose state is newer than the export go into the expected view,
// and a backfill's partials not folded yet are listed (the aggregates lack
// their sums until they are).
func (a *AsOfCheck) AddLedgers(ctx context.Context, r driver.Reader) error {
	return r.ScanLedgers(ctx, a.addLedger())
}

// addLedger returns what AddLedgers does with each ledger entry.
func (a *AsOfCheck) addLedger() func(key string, e driver.LedgerEntry) error {
	checkKey := func(string) error { return nil }
	if len(a.KeyAttributes) > 0 {
		checkKey = KeyAttributesCheck(a.KeyAttributes)
	}
	return func(key string, e driver.LedgerEntry) error {
		switch {
		case strings.HasPrefix(key, MixedPrefix):
			a.Mixed = append(a.Mixed, describeMixed(key, e))
			return nil
		case strings.HasPrefix(key, PartialPrefix):
			open, err := unfolded(key, e)
			if open {
				a.Unfolded = append(a.Unfolded, key)
			}
			return err
		case strings.HasPrefix(key, "#"):
			return nil // a marker
		}
		if err := checkKey(key); err != nil {
			return err
		}
		l, err := decodeLedger(key, e)
		if err != nil {
			return err
		}
		if InTick(l.Tok, a.asOfTime) {
			a.inTick[key] = l
			if a.parted {
				a.inTickRaw[key] = e
			}
			return nil
		}
		if !a.newerThan(l.Tok) {
			return nil
		}
		a.Changed++
		if err := a.addNewer(key); err != nil {
			return err
		}
		return a.expectLedger(l)
	}
}

// AddExportItems adds the export items whose state in the table is not
// newer than the export's to the expected view. Their keys are read from
// keyAttributes. An item a projection refuses is listed in Refused, and
// the others go on.
func (a *AsOfCheck) AddExportItems(items []pipeline.Item, keyAttributes []string) error {
	for _, it := range items {
		a.Items++
		a.seq++
		keys := make(pipeline.Item, len(keyAttributes))
		for _, k := range keyAttributes {
			if v, ok := it[k]; ok {
				keys[k] = v
			}
		}
		key := ledgerKey(keys)
		if a.newer[key] {
			continue
		}
		if l, ok := a.inTick[key]; ok {
			delete(a.inTick, key)
			if err := a.seenInTick(key); err != nil {
				return err
			}
			add, err := a.judgeInTick(key, pipeline.ItemKey(keys), l, it)
			if err != nil {
				return err
			}
			if !add {
				continue
			}
		}
		if err := a.addExportItem(key, keys, it); err != nil {
			return err
		}
	}
	return nil
}

// addExportItem spills one export item's contributions (and, with the
// keys of the items changed since spilled, its key and where it added).
func (a *AsOfCheck) addExportItem(key string, keys, it pipeline.Item) error {
	clear(a.scratch.Aggregates)
	clear(a.scratch.Rows)
	refused := ""
	if err := a.addScratch(it); err != nil {
		p := ""
		if re, ok := errors.AsType[*projections.RefusedError](err); ok {
			p, err = re.Projection, re.Err
		}
		if ie, ok := errors.AsType[*projections.ItemError](err); ok && ie.Projection == p {
			err = ie.Err
			if ie.Attr != "" {
				err = fmt.Errorf("%s: %w", ie.Attr, ie.Err)
			}
		}
		refused = fmt.Sprintf("%s export item %s: refused: %v (its record fails as permanent, so it adds to no projection)", p, pipeline.KeyString(keys), err)
		if a.items == nil {
			a.Refused = append(a.Refused, refused)
			return nil
		}
	}
	var touched []uint64
	for _, k := range slices.SortedFunc(maps.Keys(a.scratch.Aggregates), compareAggKeys) {
		h := aggHash(k)
		touched = append(touched, h)
		if err := a.spillAgg(recExportAgg, h, a.seq, k, a.scratch.Aggregates[k]); err != nil {
			return err
		}
	}
	for _, ref := range slices.SortedFunc(maps.Keys(a.scratch.Rows), driver.RowRef.Compare) {
		h := rowHash(ref)
		touched = append(touched, h)
		if err := a.spillRow(recExportRow, h, a.seq, ref, string(pipeline.AppendItem(nil, a.scratch.Rows[ref]))); err != nil {
			return err
		}
	}
	if a.items == nil || len(touched) == 0 && refused == "" {
		return nil
	}
	a.enc.Reset()
	a.enc.Byte(recExport)
	a.enc.Text(key)
	a.enc.Uint(uint64(a.seq))
	a.enc.Text(refused)
	a.enc.Uint(uint64(len(touched)))
	for _, h := range touched {
		a.enc.Uint(h)
	}
	return a.items.Write(a.placeAt(itemHash(key), 0), a.enc.B)
}

func compareAggKeys(x, y projections.AggregateKey) int {
	if c := strings.Compare(x.Projection, y.Projection); c != 0 {
		return c
	}
	return strings.Compare(x.Key, y.Key)
}

// withdraw joins the export items' keys with those of the items changed
// since, one item partition at a time: an export item changed since has
// its contributions withdrawn; one a projection refuses and not changed
// since is listed in Refused.
func (a *AsOfCheck) withdraw() error {
	if a.items == nil {
		return nil
	}
	if err := a.items.Flush(); err != nil {
		return err
	}
	for p := range a.items.Len() {
		if err := a.withdrawPartition(p); err != nil {
			return err
		}
		if err := a.items.Drop(p); err != nil {
			return err
		}
	}
	return nil
}

// withdrawPartition is withdraw of item partition p.
func (a *AsOfCheck) withdrawPartition(p int) error {
	newer, err := a.items.Keys(p, recNewer)
	if err != nil {
		return err
	}
	return a.items.Each(p, recExport, func(d *spill.Decoder) error {
		key, seq, refused := d.Text(), d.Uint(), d.Text()
		n := d.Uint()
		if d.Err != nil || !newer[key] {
			if refused != "" && d.Err == nil {
				a.Refused = append(a.Refused, refused)
			}
			return nil
		}
		for range n {
			h := d.Uint()
			if err := a.begin(recWithdrawn, h, int64(seq)); err != nil {
				return err
			}
			if err := a.parts.Write(a.placeAt(h, 0), a.enc.B); err != nil {
				return err
			}
		}
		return nil
	})
}

// Diff lists how the table differs from the expected view, one line each,
// sorted, as projections.Diff does; rows of items changed since the export
// are compared by the hash the ledger keeps of them. At most MaxNamed are
// named (the first, sorted), the rest counted in More.
func (a *AsOfCheck) Diff(ctx context.Context, r driver.Reader) (out []string, err error) {
	defer func() { err = errors.Join(err, a.Close()) }()
	// The items in the export's own clock tick that the export lacks.
	for _, key := range slices.Sorted(maps.Keys(a.inTick)) {
		if _, err := a.judgeInTick(key, "", a.inTick[key], nil); err != nil {
			return nil, err
		}
	}
	clear(a.inTick)
	sort.Strings(a.Unjudged)
	if err := a.open(); err != nil {
		return nil, err
	}
	if err := a.withdraw(); err != nil {
		return nil, err
	}
	if err := a.addStored(ctx, r); err != nil {
		return nil, err
	}
	if err := a.parts.Flush(); err != nil {
		return nil, err
	}
	a.Spilled = a.parts.Bytes
	if a.items != nil {
		a.Spilled += a.items.Bytes
	}
	named := namedLines{max: a.MaxNamed, keep: a.Keep}
	for _, line := range a.Refused {
		named.add(line)
	}
	if err := a.compareAll(a.parts, 0, &named); err != nil {
		return nil, err
	}
	out, a.More = named.result()
	return out, nil
}

// addStored reads the table's aggregate shards and rows (r: the table, or
// a parted check's segment of it) into the check: what Diff compares the
// expected view with.
func (a *AsOfCheck) addStored(ctx context.Context, r driver.Reader) error {
	if err := a.open(); err != nil {
		return err
	}
	if err := r.ScanAggregates(ctx, a.addStoredAgg); err != nil {
		return fmt.Errorf("reading aggregates: %w", err)
	}
	if err := r.ScanRows(ctx, a.addStoredRow); err != nil {
		return fmt.Errorf("reading rows: %w", err)
	}
	return nil
}

func (a *AsOfCheck) addStoredAgg(ref driver.AggregateRef, values map[string]decimal.Decimal) error {
	k := projections.AggregateKey{Projection: ref.Projection, Key: ref.Key}
	return a.spillAgg(recStoredAgg, aggHash(k), 0, k, values)
}

func (a *AsOfCheck) addStoredRow(row driver.StoredRow) error {
	return a.spillRow(recStoredRow, rowHash(row.Ref), 0, row.Ref, string(pipeline.AppendItem(nil, row.Attrs)))
}

// AddTable reads the table (r: the table, or a parted check's segment of
// it) into the check: its ledger entries (AddLedgers) and its aggregate
// shards and rows, what Diff compares the expected view with. A table that
// can read all three in one scan (dynamostore.Store.ScanAll) is read once.
func (a *AsOfCheck) AddTable(ctx context.Context, r driver.Reader) error {
	if one, ok := r.(interface {
		ScanAll(context.Context, func(string, driver.LedgerEntry) error, func(driver.AggregateRef, map[string]decimal.Decimal) error, func(driver.StoredRow) error) error
	}); ok {
		// One read of the table, not three.
		if err := a.open(); err != nil {
			return err
		}
		if err := one.ScanAll(ctx, a.addLedger(), a.addStoredAgg, a.addStoredRow); err != nil {
			return fmt.Errorf("reading the table: %w", err)
		}
		return nil
	}
	if err := a.AddLedgers(ctx, r); err != nil {
		return err
	}
	return a.addStored(ctx, r)
}

// namedLines keeps the first max lines, sorted, of those added, and
// counts the rest.
type namedLines struct {
	max   int
	keep  func(string) bool
	lines []string
	more  int64
}

func (n *namedLines) add(line string) {
	if n.keep != nil && !n.keep(line) {
		return
	}
	n.lines = append(n.lines, line)
	if n.max > 0 && len(n.lines) > 2*n.max+1024 {
		n.trim()
	}
}

func (n *namedLines) trim() {
	sort.Strings(n.lines)
	if n.max > 0 && len(n.lines) > n.max {
		n.more += int64(len(n.lines) - n.max)
		clear(n.lines[n.max:])
		n.lines = n.lines[:n.max]
	}
}

func (n *namedLines) result() ([]string, int64) {
	n.trim()
	return n.lines, n.more
}

// compareAll compares every partition of s, cut at level, and removes
// each once compared.
func (a *AsOfCheck) compareAll(s *spill.Set, level int, named *namedLines) error {
	for p := range s.Len() {
		if err := a.comparePart(s, p, level, named); err != nil {
			return err
		}
		if err := s.Drop(p); err != nil {
			return err
		}
	}
	return nil
}

// comparePart compares partition p of s, cut at level: cut smaller first
// when it is larger than PartitionBytes.
func (a *AsOfCheck) comparePart(s *spill.Set, p, level int, named *namedLines) error {
	limit := a.PartitionBytes
	if limit <= 0 {
		limit = 48 << 20
	}
	if s.Size(p) > limit && level < maxSplits {
		return a.split(s, p, level+1, named)
	}
	return a.compare(s, p, named)
}

// split cuts partition p of s into smaller ones, by the next bits of their
// records' key hashes, and compares those.
func (a *AsOfCheck) split(s *spill.Set, p, level int, named *namedLines) error {
	sub, err := spill.New(a.Dir, splitWays)
	if err != nil {
		return err
	}
	err = s.Read(p, func(rec []byte) error {
		d := spill.Decoder{B: rec}
		d.Byte()
		h := d.Uint()
		if d.Err != nil {
			return fmt.Errorf("spill partition %d: %w", p, d.Err)
		}
		return sub.Write(a.placeAt(h, level), rec)
	})
	if err == nil {
		err = sub.Flush()
	}
	if err == nil {
		err = a.compareAll(sub, level, named)
	}
	return errors.Join(err, sub.Remove())
}

// compare reads one partition's records, sums each side and names how
// they differ, as Diff says.
func (a *AsOfCheck) compare(s *spill.Set, p int, named *namedLines) error {
	withdrawn := map[uint64]bool{}
	err := s.Read(p, func(rec []byte) error {
		if len(rec) == 0 {
			return fmt.Errorf("spill partition %d: an empty record", p)
		}
		if rec[0] == recWithdrawn {
			d := spill.Decoder{B: rec[1:]}
			d.Uint()
			withdrawn[d.Uint()] = true
			return d.Err
		}
		return nil
	})
	if err != nil {
		return err
	}
	type exportRow struct {
		seq     uint64
		content string
	}
	want, got := projections.NewView(), projections.NewView()
	values := map[string]decimal.Decimal{} // one record's, reused
	wantRows := map[driver.RowRef]exportRow{}
	ledgerRows := map[driver.RowRef]string{}
	gotRows := map[driver.RowRef]string{}
	err = s.Read(p, func(rec []byte) error {
		d := spill.Decoder{B: rec}
		kind := d.Byte()
		d.Uint() // the key's hash
		seq := d.Uint()
		switch kind {
		case recWithdrawn:
			return d.Err
		case recExportAgg, recLedgerAgg, recStoredAgg:
			k := projections.AggregateKey{Projection: d.Text(), Key: d.Text()}
			n := d.Uint()
			if d.Err != nil {
				return d.Err
			}
			if kind == recExportAgg && withdrawn[seq] {
				return nil
			}
			v := want
			if kind == recStoredAgg {
				v = got
			}
			clear(values)
			for range n {
				name, s := d.Text(), d.Text()
				x, err := decimal.Parse(s)
				if err != nil {
					return fmt.Errorf("%s %s %s: a value of %q spilled: %w", k.Projection, k.Key, name, s, err)
				}
				values[name] = values[name].Add(x)
			}
			v.Add(k, values)
			return d.Err
		}
		ref := driver.RowRef{Projection: d.Text(), Partition: d.Text(), Sort: d.Text()}
		content := d.Text()
		if d.Err != nil {
			return d.Err
		}
		switch kind {
		case recExportRow:
			if prev, ok := wantRows[ref]; !withdrawn[seq] && (!ok || seq > prev.seq) {
				wantRows[ref] = exportRow{seq, content}
			}
		case recLedgerRow:
			ledgerRows[ref] = content
		case recStoredRow:
			gotRows[ref] = content
		default:
			return fmt.Errorf("spill partition %d: a record of kind %q", p, kind)
		}
		return nil
	})
	if err != nil {
		return err
	}
	want.Prune()
	got.Prune()
	for _, vs := range got.Aggregates {
		for name, x := range vs {
			vs[name] = x.Normal()
		}
	}
	compared := map[driver.RowRef]string{} // rows compared by attributes
	for ref, content := range gotRows {
		if _, fromExport := wantRows[ref]; !fromExport {
			if h, fromLedger := ledgerRows[ref]; fromLedger {
				if hashEncoded([]byte(content)) != h {
					named.add(fmt.Sprintf("%s row %s/%s: not what the ledger entry of its item, changed since the export, says", ref.Projection, ref.Partition, ref.Sort))
				}
				continue
			}
		}
		compared[ref] = content
	}
	a.expAggs += len(want.Aggregates)
	a.expRows += len(wantRows)
	for ref := range ledgerRows {
		if _, fromExport := wantRows[ref]; fromExport {
			continue
		}
		a.expRows++
		if _, ok := gotRows[ref]; !ok {
			named.add(fmt.Sprintf("%s row %s/%s: missing (its item changed since the export)", ref.Projection, ref.Partition, ref.Sort))
		}
	}
	wantContent := make(map[driver.RowRef]string, len(wantRows))
	for ref, r := range wantRows {
		wantContent[ref] = r.content
	}
	for _, line := range projections.Diff(got, want) {
		named.add(line)
	}
	diffRows(compared, wantContent, named.add)
	return nil
}

// Expected counts the expected view's aggregates and rows (after Diff).
func (a *AsOfCheck) Expected() (aggregates, rows int) { return a.expAggs, a.expRows }

// diffRows names, to line, each difference between two partitions' rows
// (encoded as pipeline.AppendItem does), "want" being the reference, in
// the words of projections.Diff, in no order.
func diffRows(gotRows, wantRows map[driver.RowRef]string, line func(string)) {
	for r, g := range gotRows {
		w, ok := wantRows[r]
		switch {
		case !ok:
			line(fmt.Sprintf("%s row %s/%s: unexpected", r.Projection, r.Partition, r.Sort))
		case g != w:
			line(fmt.Sprintf("%s row %s/%s: got %s, want %s", r.Projection, r.Partition, r.Sort, g, w))
		}
	}
	for r := range wantRows {
		if _, ok := gotRows[r]; !ok {
			line(fmt.Sprintf("%s row %s/%s: missing", r.Projection, r.Partition, r.Sort))
		}
	}
}
