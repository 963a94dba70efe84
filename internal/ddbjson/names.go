package ddbjson

import "encoding/binary"

// Names finds a member name given twice in one JSON object, which DynamoDB
// never writes and a reader would otherwise take silently, the last one
// winning. Add each name of the object as it is read (Quick, AddKey, Add
// or AddCopy); each reports whether the name is new. Names compare as
// unescaped.
//
// Up to smallNames names it works in place, without allocating: a 64-bit
// Bloom filter of the names' keys (length and first eight bytes, NameKey),
// so that most names are known new after one bit test, and where they are,
// which a name whose bit is taken is compared against. Past smallNames
// names (when the filter is all ones), a map. The zero value is an empty
// set over no input; Reset empties it for the next object.
type Names struct {
	base  []byte
	bloom uint64
	n     int // names in refs
	refs  [smallNames]nameRef
	more  []nameRef      // the names' places past smallNames, for Find
	own   [ownBytes]byte // copies of names that are not in base
	ownN  int
	big   map[string]struct{}
	spilt bool
}

const (
	smallNames = 32 // a power of two
	ownBytes   = 256
)

// nameRef is a name's place, base[off:][:l] or, when off is negative,
// own[-off-1:][:l], and its key (NameKey).
type nameRef struct {
	off, l int32
	key    uint64
}

// NameKey returns the key of a name of l bytes whose first eight bytes (or
// more: those past its end are ignored) are word, as a little-endian word;
// and its bit in a 64-bit Bloom filter. Names of equal length and keys
// start with the same eight bytes (or all of theirs).
func NameKey(l int, word uint64) (key, bit uint64) {
	key = word&lowBytes[min(uint(l), 8)] ^ uint64(l)<<56
	return key, 1 << (key * 0x9E3779B97F4A7C15 >> 58)
}

// lowBytes[n] masks the n low bytes of a word.
var lowBytes = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ^uint64(0)}

// Reset empties the set for the names of an object in base.
func (n *Names) Reset(base []byte) {
	n.base, n.bloom, n.n, n.ownN = base, 0, 0, 0
	if n.spilt {
		clear(n.big)
		n.more = n.more[:0]
		n.spilt = false
	}
}

// Quick adds the name base[off:end] (a name without escapes, as it is in
// the input), whose key and bit (NameKey) are key and bit, if no name added
// before has that bit — the common case, inlined — and reports whether it
// did. When it did not, AddKey decides.
func (n *Names) Quick(off, end int, key, bit uint64) bool {
	if n.bloom&bit != 0 || n.n >= smallNames-1 {
		return false
	}
	n.bloom |= bit
	n.refs[n.n&(smallNames-1)] = nameRef{int32(off), int32(end - off), key}
	n.n++
	return true
}

// AddKey adds the name base[off:end] (a name without escapes), whose key
// and bit (NameKey) are key and bit, and reports whether it was not there
// yet.
func (n *Names) AddKey(off, end int, key, bit uint64) bool {
	return n.add(n.base[off:end], bit, nameRef{int32(off), int32(end - off), key}, false)
}

// Add adds the name base[off:end] (a name without escapes, as it is in the
// input) and reports whether it was not there yet.
func (n *Names) Add(off, end int) bool {
	key, bit := NameKey(end-off, head(n.base[off:end]))
	return n.Quick(off, end, key, bit) || n.AddKey(off, end, key, bit)
}

// AddCopy adds a name that is not a slice of base (an unescaped one, or any
// name when base is not kept), copying it, and reports whether it was not
// there yet.
func (n *Names) AddCopy(name []byte) bool {
	key, bit := NameKey(len(name), head(name))
	return n.add(name, bit, nameRef{l: int32(len(name)), key: key}, true)
}

// head returns the first eight bytes of name as a little-endian word.
func head(name []byte) uint64 {
	var w [8]byte
	copy(w[:], name)
	return binary.LittleEndian.Uint64(w[:])
}

// add adds name (of bit bit), comparing it with the names before when its
// bit is taken; ref is where it lives, or it is copied into own.
func (n *Names) add(name []byte, bit uint64, ref nameRef, copyName bool) bool {
	if n.spilt || n.n == smallNames || copyName && n.ownN+len(name) > ownBytes {
		if !n.addBig(name) {
			return false
		}
		if !copyName {
			n.more = append(n.more, ref)
		}
		return true
	}
	if n.bloom&bit != 0 {
		for _, r := range n.refs[:n.n] {
			if r.key == ref.key && int(r.l) == len(name) && (len(name) <= 8 || string(n.name(r)) == string(name)) {
				return false
			}
		}
	}
	if copyName {
		copy(n.own[n.ownN:], name)
		ref.off = int32(-n.ownN - 1)
		n.ownN += len(name)
	}
	n.bloom |= bit
	n.refs[n.n] = ref
	if n.n++; n.n == smallNames {
		n.bloom = ^uint64(0)
	}
	return true
}

// Find returns where in base the name given, of key and bit (NameKey),
// was added, and whether it was: found is false, and off negative, for a
// name that is not there or was added as a copy.
func (n *Names) Find(name []byte, key, bit uint64) (off int, found bool) {
	if n.bloom&bit == 0 {
		return -1, false
	}
	if off := n.find(n.refs[:n.n], name, key); off >= 0 {
		return off, true
	}
	if off := n.find(n.more, name, key); off >= 0 {
		return off, true
	}
	return -1, false
}

func (n *Names) find(refs []nameRef, name []byte, key uint64) int {
	for _, r := range refs {
		if r.key == key && int(r.l) == len(name) && r.off >= 0 && (len(name) <= 8 || string(n.base[r.off:][:r.l]) == string(name)) {
			return int(r.off)
		}
	}
	return -1
}

// name returns the bytes of the name at r.
func (n *Names) name(r nameRef) []byte {
	if r.off < 0 {
		return n.own[-r.off-1:][:r.l]
	}
	return n.base[r.off:][:r.l]
}

// addBig moves the names into the map on first use, then adds name there.
func (n *Names) addBig(name []byte) bool {
	if !n.spilt {
		if n.big == nil {
			n.big = make(map[string]struct{}, 2*smallNames)
		}
		for _, r := range n.refs[:n.n] {
			n.big[string(n.name(r))] = struct{}{}
		}
		n.spilt, n.bloom = true, ^uint64(0) // from now on, every name goes to the map
	}
	if _, ok := n.big[string(name)]; ok {
		return false
	}
	n.big[string(name)] = struct{}{}
	return true
}
