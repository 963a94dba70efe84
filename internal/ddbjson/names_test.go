package ddbjson

import (
	"fmt"
	"strings"
	"testing"
)

// addAll adds each name of a JSON object's member list, given as the
// names' texts joined by commas (no escapes: Add, or Quick and AddKey, in
// turn; a name starting with '~': AddCopy of the rest), and returns the
// index of the first one Names reports as given before, or -1.
func addAll(n *Names, names []string) int {
	base := []byte(strings.Join(names, ","))
	n.Reset(base)
	off := 0
	for i, name := range names {
		var fresh bool
		switch {
		case strings.HasPrefix(name, "~"):
			fresh = n.AddCopy([]byte(name[1:]))
		case i%2 == 0:
			fresh = n.Add(off, off+len(name))
		default:
			key, bit := NameKey(len(name), head([]byte(name)))
			fresh = n.Quick(off, off+len(name), key, bit) || n.AddKey(off, off+len(name), key, bit)
		}
		if !fresh {
			return i
		}
		off += len(name) + 1
	}
	return -1
}

func TestNames(t *testing.T) {
	many := func(n int, extra ...string) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("attr%d", i))
		}
		return append(out, extra...)
	}
	long := strings.Repeat("n", 300)
	tests := []struct {
		name  string
		names []string
		dup   int
	}{
		{"none", nil, -1},
		{"distinct", []string{"PK", "SK", "EntityType", "version", "", "GSI1PK", "GSI2PK"}, -1},
		{"twice", []string{"PK", "SK", "EntityType", "version", "EntityType"}, 4},
		{"empty twice", []string{"", "a", ""}, 2},
		{"copy of a name in the input", []string{"PK", "EntityType", "~EntityType"}, 2},
		{"name in the input after a copy", []string{"~PK", "PK"}, 1},
		{"same ends, other middles", []string{"GSI1PK", "GSI2PK", "GSI3PK", "GSI1PK"}, 3},
		{"32 distinct", many(32), -1},
		{"33 distinct", many(33), -1},
		{"twice past 32", many(40, "attr3"), 40},
		{"twice, the second past 32", many(40, "attr39"), 40},
		{"copies past the copy space", []string{"~" + long, "~" + long + "x", "~" + long}, 2},
	}
	var n Names
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := addAll(&n, tt.names); got != tt.dup {
				t.Errorf("first name given twice: %d, want %d", got, tt.dup)
			}
		})
	}
}

// FuzzNames checks Names against a map over names read from the input,
// some added in place and some as copies, across resets.
func FuzzNames(f *testing.F) {
	f.Add([]byte("PK,SK,EntityType,version,SK"), uint64(0b1010))
	f.Add([]byte(strings.Repeat("a,b,c,d,e,f,g,h,", 6)+"zz"), uint64(0))
	var n Names
	f.Fuzz(func(t *testing.T, data []byte, copies uint64) {
		for round := 0; round < 2; round++ {
			n.Reset(data)
			seen := map[string]bool{}
			first := map[string]int{}
			off := 0
			for i, name := range strings.Split(string(data), ",") {
				var fresh bool
				switch {
				case copies>>(i%64)&1 != 0:
					fresh = n.AddCopy([]byte(name))
				case round == 0:
					fresh = n.Add(off, off+len(name))
				default:
					key, bit := NameKey(len(name), head([]byte(name)))
					fresh = n.Quick(off, off+len(name), key, bit) || n.AddKey(off, off+len(name), key, bit)
				}
				if fresh == seen[name] {
					t.Fatalf("name %d %q: Names says new %v, map says seen %v", i, name, fresh, seen[name])
				}
				if fresh {
					first[name] = off
					if copies>>(i%64)&1 != 0 {
						first[name] = -1
					}
				}
				seen[name] = true
				off += len(name) + 1
			}
			// Find tells where a name was first added (not a copy's).
			for name, at := range first {
				key, bit := NameKey(len(name), head([]byte(name)))
				if got, found := n.Find([]byte(name), key, bit); got != at || found != (at >= 0) {
					t.Fatalf("Find(%q) = %d, %v; want %d", name, got, found, at)
				}
			}
		}
	})
}
