package export

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

func TestScanItemLine(t *testing.T) {
	tests := []struct {
		line, typ string
		has       bool
		err       string
	}{
		{`{"Item":{"PK":{"S":"a"},"EntityType":{"S":"Order"}}}`, "Order", true, ""},
		{`{"Item":{"PK":{"S":"a"}}}`, "", false, ""},
		{` {"Item" : {"EntityType":{"S":"Caf\u00e9 \"x\" \ud83d\ude00"}, "n":{"N":"1"}} } `, "Café \"x\" 😀", true, ""},
		{`{"Item":{"EntityType":{"N":"1"}}}`, "", false, "entity type is N"},
		{`{"Item":{"Entity\u0054ype":{"S":"A\"B"},"n":{"N":"1"},"m":{"M":{"x":{"S":"y"}}}}}`, "A\"B", true, ""},
		{`{"Item":{"EntityType":{"S":"A"},"EntityType":{"S":"B"}}}`, "B", true, ""},
		{`{"Item":{"a":{"S":"x"}}}}`, "", false, "data after the object"},
		{`{"Item":{"a":{"S":"x"},}}`, "", false, "want a string"},
		{`{"Item":{"a":{"S":"x"}{"b":{"S":"y"}}}`, "", false, "want , or }"},
		{`{"Item":{"a":{"S":"x"}},"Item":{"b":{"S":"y"}}}`, "", false, "Item: appears twice"},
		{`{"Item":{"a":{"S":"x"}},"Other":[1,{"b":null}]}`, "", false, ""},
		{`{"Item":{"a":{"S":"x","N":"1"}}}`, "", false, "exactly one type key"},
		{`{"Item":{"a":{"Q":"x"}}}`, "", false, "unknown attribute type"},
		{`{"Item":{"a":"x"}}`, "", false, "want an attribute value object"},
		{`{"item":{"a":{"S":"x"}}}`, "", false, "Item: missing"},
		{`{"Item":{}}`, "", false, "Item: empty"},
		{`{"Keys":{"PK":{"S":"a"}},"NewImage":{}}`, "", false, "incremental-export line"},
		{`{"Item":{"a":{"S":"x"}}} x`, "", false, "data after the object"},
		{`{"Item":{"a":{"S":"x}}}`, "", false, "unterminated string"},
		{`{"Item":{"a":{"N":01}}}`, "", false, "invalid JSON"},
		{`{"Item":{"a":{"L":[1,]}}}`, "", false, "want a value"},
		{"{\"Item\":{\"a\":{\"S\":\"x\ty\"}}}", "", false, "control character"},
		{`{"Item":{"a":{"S":"\x"}}}`, "", false, "bad escape"},
		{`[]`, "", false, "want a JSON object"},
		{`{"Item":{"a":{"M":` + strings.Repeat(`{"b":`, 70) + `1` + strings.Repeat(`}`, 70) + `}}}`, "", false, "nested too deeply"},
	}
	var s scanner
	for _, tt := range tests {
		typ, has, err := s.scanItemLine([]byte(tt.line), "EntityType")
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.line, err, tt.err)
			}
		case err != nil || string(typ) != tt.typ || has != tt.has:
			t.Errorf("%s: %q %v %v; want %q %v", tt.line, typ, has, err, tt.typ, tt.has)
		}
	}
}

// FuzzScanItemLine checks the scanner against the decoder: a line the
// scanner accepts is valid JSON, a full-export line the decoder reads the
// scanner accepts, and when both read a line they find the same entity
// type.
func FuzzScanItemLine(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "..", "pipeline", "testdata", "export", "full.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"Item":{"EntityType":{"S":"a\u0041\\"}}}`))
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
		var s scanner
		typ, has, err := s.scanItemLine(line, "EntityType")
		c, derr := dec.Decode(line, "f", 1)
		if err != nil {
			if derr == nil && c.New != nil {
				t.Fatalf("rejected a line the decoder reads (%v): %q", err, line)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON: %q", line)
		}
		if derr != nil {
			return
		}
		if has && string(typ) != c.NewType {
			t.Fatalf("type: scanner %q, decoder %q (%q)", typ, c.NewType, line)
		}
	})
}

func TestStringStop(t *testing.T) {
	for i := 0; i < 40; i++ {
		for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x0a} {
			b := []byte(strings.Repeat("aé~ \x7f\x80\xff!", 6))
			if i < len(b) {
				b[i] = c
			}
			want := len(b)
			for j, x := range b {
				if strStop[x] {
					want = j
					break
				}
			}
			for from := 0; from <= min(i, len(b)); from++ {
				w := want
				if w < from {
					w = from
				}
				if got := stringStop(b, from); got != w {
					t.Fatalf("stringStop(%q, %d) = %d, want %d", b, from, got, w)
				}
			}
		}
	}
}

// BenchmarkScanItemLine scans export lines of the seed domains' items;
// MB/s is of line bytes.
func BenchmarkScanItemLine(b *testing.B) {
	h, err := sim.Workload{Seed: 42, Changes: 20_000}.Run()
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	var size int64
	for _, it := range h.Table.Items() {
		l := appendItemLine(nil, it)
		lines = append(lines, l)
		size += int64(len(l)) + 1
	}
	b.SetBytes(size)
	var s scanner
	for b.Loop() {
		for _, l := range lines {
			if _, _, err := s.scanItemLine(l, "EntityType"); err != nil {
				b.Fatal(err)
			}
		}
	}
}
