package engine

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/tributary/tributary/internal/spill"
	"github.com/tributary/tributary/projections/driver"
)

// A parted check is an AsOfCheck cut into steps that run apart, each in a
// process of its own (the Verify state machine's children), which hand
// each other what they spilled as byte streams: the contributions, stored
// shards and rows by a hash of their aggregate or row key ("parts"), the
// keys of the items changed since and of the export items by a hash of the
// item key ("items"). One check, AsOfCheck's rule, in these steps:
//
//  1. scan, a segment of the table each: AddTable of the segment;
//     WriteInTick saves the ledger entries of the export's own clock
//     tick.
//  2. file, a data file each: ReadInTick of every scan step's, StartAt the
//     file's first sequence number, AddExportItems of its items.
//  3. join, an item partition each: ReadInTick of every scan step's, Load
//     of the partition's "items" from every step, then Join.
//  4. compare, a part each: Load of the part from every step, then
//     ComparePart.
//
// Every step but the compare hands its partitions over with Handoff. The
// counts a step finds (Items, Changed, Unfolded, Mixed, Refused, Unjudged)
// are its own: the check's are their sums. A step run twice hands over the
// same partitions.

// MaxParts bounds a parted check's partitions.
const MaxParts = spillPartitions

// Hand-off sets of a parted check.
const (
	// HandoffParts holds contributions, stored shards and rows, by a hash
	// of their aggregate or row key: what ComparePart compares.
	HandoffParts = "parts"
	// HandoffItems holds the keys of the items changed since and of the
	// export items, by a hash of the item key: what Join joins.
	HandoffItems = "items"
)

// Parted makes the check a step of a parted check of n partitions (a
// power of two from 1 to MaxParts): the keys of items changed since and
// of export items are always handed over, never joined here.
func (a *AsOfCheck) Parted(n int) error {
	if n < 1 || n > MaxParts || n&(n-1) != 0 {
		return fmt.Errorf("a parted check of %d partitions: want a power of two from 1 to %d", n, MaxParts)
	}
	if a.parts != nil || a.items != nil {
		return errors.New("a parted check: Parted comes before every other step")
	}
	a.nparts, a.parted, a.newer, a.inTickRaw = n, true, nil, map[string]driver.LedgerEntry{}
	if err := a.open(); err != nil {
		return err
	}
	s, err := spill.New(a.Dir, n)
	if err != nil {
		return err
	}
	a.items = s
	return nil
}

// StartAt numbers the next export item seq (and the rest after it): a
// parted check's file steps number theirs apart, so that an export item's
// number is the check's one.
func (a *AsOfCheck) StartAt(seq int64) { a.seq = seq - 1 }

// seenInTick notes, in a parted check, an item in the export's own clock
// tick that an export item was found for: its join judges the others as
// the export lacks them.
func (a *AsOfCheck) seenInTick(key string) error {
	if !a.parted {
		return nil
	}
	a.enc.Reset()
	a.enc.Byte(recSeenTick)
	a.enc.Text(key)
	return a.items.Write(a.placeAt(itemHash(key), 0), a.enc.B)
}

// WriteInTick writes the ledger entries of the items in the export's own
// clock tick that AddLedgers found (a parted check's): every file and join
// step reads them back with ReadInTick.
func (a *AsOfCheck) WriteInTick(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var enc spill.Encoder
	var lenb [binary.MaxVarintLen64]byte
	for _, key := range slices.Sorted(maps.Keys(a.inTickRaw)) {
		e := a.inTickRaw[key]
		enc.Reset()
		enc.Text(key)
		enc.Uint(uint64(e.Rev))
		enc.Text(string(e.Body))
		n := binary.PutUvarint(lenb[:], uint64(len(enc.B)))
		if _, err := bw.Write(lenb[:n]); err != nil {
			return err
		}
		if _, err := bw.Write(enc.B); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// maxInTickEntry bounds an in-tick entry read back: its key and a ledger
// entry, each within DynamoDB's 400 KB item.
const maxInTickEntry = 1 << 20

// ReadInTick adds the ledger entries WriteInTick wrote (what names where
// they come from, for errors).
func (a *AsOfCheck) ReadInTick(r io.Reader, what string) error {
	br := bufio.NewReader(r)
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil || n == 0 || n > maxInTickEntry {
			return fmt.Errorf("%s: not a list of ledger entries (an entry of %d bytes; %v)", what, n, err)
		}
		rec := make([]byte, n)
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("%s: an entry cut short: %w", what, err)
		}
		d := spill.Decoder{B: rec}
		key, rev, body := d.Text(), d.Uint(), d.Text()
		if d.Err != nil {
			return fmt.Errorf("%s: %w", what, d.Err)
		}
		l, err := decodeLedger(key, driver.LedgerEntry{Rev: int64(rev), Body: []byte(body)})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		a.inTick[key] = l
	}
}

// Handoff flushes what the step spilled and calls fn with each partition
// that holds any, of the sets HandoffParts and HandoffItems.
func (a *AsOfCheck) Handoff(fn func(set string, p int, r io.Reader) error) error {
	for _, s := range []struct {
		name string
		set  *spill.Set
	}{{HandoffParts, a.parts}, {HandoffItems, a.items}} {
		if s.set == nil {
			continue
		}
		if err := s.set.Flush(); err != nil {
			return err
		}
		for p := range s.set.Len() {
			if s.set.Size(p) == 0 {
				continue
			}
			if err := fn(s.name, p, s.set.Reader(p)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Load adds a partition another step handed over (Handoff) to this step's
// partition p of set; what names it, for errors.
func (a *AsOfCheck) Load(set string, p int, r io.Reader, what string) error {
	s := a.parts
	if set == HandoffItems {
		s = a.items
	} else if set != HandoffParts {
		return fmt.Errorf("%s: no hand-off set %q", what, set)
	}
	if !a.parted {
		return fmt.Errorf("%s: Load is a parted check's", what)
	}
	if p < 0 || p >= s.Len() {
		return fmt.Errorf("%s: partition %d of %d", what, p, s.Len())
	}
	return s.Append(p, r, what)
}

// Join joins item partition p, loaded from every step: the export items
// changed since have their contributions withdrawn, the items a projection
// refuses are listed in Refused, and the items in the export's own clock
// tick whose item partition is p and that no export item was found for
// are judged as the export lacks them. What it finds goes to the parts it
// hands over.
func (a *AsOfCheck) Join(p int) error {
	if !a.parted || p < 0 || p >= a.items.Len() {
		return fmt.Errorf("join of item partition %d: not a partition of this parted check", p)
	}
	if err := a.items.Flush(); err != nil {
		return err
	}
	seen, err := a.items.Keys(p, recSeenTick)
	if err != nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(a.inTick)) {
		if a.placeAt(itemHash(key), 0) != p || seen[key] {
			continue
		}
		if _, err := a.judgeInTick(key, "", a.inTick[key], nil); err != nil {
			return err
		}
	}
	clear(a.inTick)
	if err := a.withdrawPartition(p); err != nil {
		return err
	}
	return a.items.Drop(p)
}

// ComparePart compares part p, loaded from every step: the differences
// found in it, sorted, at most MaxNamed of them (More counts the rest),
// and the expected aggregates and rows it holds (Expected).
func (a *AsOfCheck) ComparePart(ctx context.Context, p int) ([]string, error) {
	if !a.parted || p < 0 || p >= a.parts.Len() {
		return nil, fmt.Errorf("compare of part %d: not a partition of this parted check", p)
	}
	if err := a.parts.Flush(); err != nil {
		return nil, err
	}
	if s := a.parts.Size(p); s > a.Spilled {
		a.Spilled = s
	}
	named := namedLines{max: a.MaxNamed, keep: a.Keep}
	if err := a.comparePart(a.parts, p, 0, &named); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []string
	out, a.More = named.result()
	return out, a.parts.Drop(p)
}
