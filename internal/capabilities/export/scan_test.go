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
	deep := func(levels int) string {
		return `{"Item":{"PK":{"S":"a"},"d":` + strings.Repeat(`{"M":{"b":`, levels) + `{"N":"1"}` + strings.Repeat(`}}`, levels) + `}}`
	}
	tests := []struct {
		name, line, typ string
		has             bool
		err             string
	}{
		{"compact", `{"Item":{"PK":{"S":"a"},"EntityType":{"S":"Order"}}}`, "Order", true, ""},
		{"no type", `{"Item":{"PK":{"S":"a"}}}`, "", false, ""},
		{"white space and escapes", ` {"Item" : {"EntityType":{"S":"Caf\u00e9 \"x\" \ud83d\ude00"}, "PK":{"N":"1"}} } `, "Café \"x\" 😀", true, ""},
		{"escaped type name", `{"Item":{"Entity\u0054ype":{"S":"A\"B"},"PK":{"N":"1"},"m":{"M":{"x":{"S":"y"}}}}}`, "A\"B", true, ""},
		{"raw UTF-8", `{"Item":{"PK":{"S":"zoë"},"EntityType":{"S":"名前 😀"}}}`, "名前 😀", true, ""},
		{"unknown member", `{"Item":{"PK":{"S":"x"}},"Other":[1,{"b":null}]}`, "", false, ""},
		{"32 levels", deep(32), "", false, ""},
		{"type is a number", `{"Item":{"PK":{"S":"a"},"EntityType":{"N":"1"}}}`, "", false, "Item.EntityType: entity type must be a string, got N"},
		{"type given twice", `{"Item":{"PK":{"S":"a"},"EntityType":{"S":"A"},"EntityType":{"S":"B"}}}`, "", false, "Item.EntityType: given twice"},
		{"type given twice, escaped", `{"Item":{"PK":{"S":"a"},"EntityType":{"S":"A"},"Entity\u0054ype":{"S":"B"}}}`, "", false, "Item.EntityType: given twice"},
		{"nested name given twice", `{"Item":{"PK":{"S":"a"},"m":{"M":{"x":{"S":"1"},"x":{"S":"2"}}}}}`, "", false, "Item.m.M.x: given twice"},
		{"Item given twice", `{"Item":{"PK":{"S":"x"}},"Item":{"PK":{"S":"y"}}}`, "", false, "Item: given twice"},
		{"member given twice", `{"Item":{"PK":{"S":"x"}},"o":1,"o":2}`, "", false, "o: given twice"},
		{"33 levels", deep(33), "", false, "Item.d" + strings.Repeat(".M.b", 32) + ".M: nested deeper than 32 levels"},
		{"bad number", `{"Item":{"PK":{"S":"a"},"n":{"N":"12x"}}}`, "", false, `Item.n.N: "12x" is not a number`},
		{"40 significant digits", `{"Item":{"PK":{"S":"a"},"n":{"N":"1234567890123456789012345678901234567890"}}}`, "", false, "more than 38 significant digits"},
		{"number as JSON", `{"Item":{"PK":{"S":"a"},"n":{"N":1}}}`, "", false, "Item.n.N: want number as a string, got number"},
		{"empty set", `{"Item":{"PK":{"S":"a"},"s":{"SS":[]}}}`, "", false, "Item.s.SS: empty set"},
		{"bad set element", `{"Item":{"PK":{"S":"a"},"s":{"NS":["1","x"]}}}`, "", false, `Item.s.NS[1]: "x" is not a number`},
		{"bad base64", `{"Item":{"PK":{"S":"a"},"b":{"B":"@@"}}}`, "", false, "Item.b.B: invalid base64"},
		{"NULL false", `{"Item":{"PK":{"S":"a"},"z":{"NULL":false}}}`, "", false, "Item.z.NULL: want true, got boolean"},
		{"nested unknown type", `{"Item":{"PK":{"S":"a"},"l":{"L":[{"S":"x"},{"Q":"1"}]}}}`, "", false, `Item.l.L[1]: unknown attribute type "Q"`},
		{"no key attribute", `{"Item":{"EntityType":{"S":"A"}}}`, "", false, "Item: item has none of the key attributes [PK SK]"},
		{"empty item", `{"Item":{}}`, "", false, "Item: item has none of the key attributes"},
		{"version a string", `{"Item":{"PK":{"S":"a"},"version":{"S":"3"}}}`, "", false, "Item.version: version attribute must be a number, got S"},
		{"version a fraction", `{"Item":{"PK":{"S":"a"},"version":{"N":"1.5"}}}`, "", false, `Item.version.N: version "1.5" is not a non-negative integer`},
		{"invalid UTF-8 in a type", "{\"Item\":{\"PK\":{\"S\":\"a\"},\"EntityType\":{\"S\":\"Ord\xff\"}}}", "", false, "string is not valid UTF-8"},
		{"invalid UTF-8 in a name", "{\"Item\":{\"PK\":{\"S\":\"a\"},\"x\xc3\":{\"S\":\"y\"}}}", "", false, "string is not valid UTF-8"},
		{"invalid UTF-8, skipped", "{\"Item\":{\"PK\":{\"S\":\"a\"}},\"o\":[\"\xed\xa0\x80\"]}", "", false, "string is not valid UTF-8"},
		{"data after the object", `{"Item":{"PK":{"S":"x"}}}}`, "", false, "data after the object"},
		{"trailing comma", `{"Item":{"PK":{"S":"x"},}}`, "", false, "want string"},
		{"no comma", `{"Item":{"PK":{"S":"x"}{"b":{"S":"y"}}}`, "", false, "want ',' or '}'"},
		{"two type keys", `{"Item":{"PK":{"S":"x","N":"1"}}}`, "", false, "Item.PK: attribute value has more than one type"},
		{"unknown type", `{"Item":{"PK":{"Q":"x"}}}`, "", false, "unknown attribute type"},
		{"not an attribute value", `{"Item":{"PK":"x"}}`, "", false, "Item.PK: want attribute value object"},
		{"no Item", `{"item":{"PK":{"S":"x"}}}`, "", false, "Item: missing"},
		{"incremental", `{"Keys":{"PK":{"S":"a"}},"NewImage":{}}`, "", false, "Keys: an incremental-export line in a full export"},
		{"Item beside NewImage", `{"Item":{"PK":{"S":"a"}},"NewImage":{"PK":{"S":"a"}}}`, "", false, "NewImage: an incremental-export line"},
		{"garbage after", `{"Item":{"PK":{"S":"x"}}} x`, "", false, "data after the object"},
		{"unterminated string", `{"Item":{"PK":{"S":"x}}}`, "", false, "unterminated string"},
		{"trailing comma in L", `{"Item":{"PK":{"S":"x"},"a":{"L":[{"S":"x"},]}}}`, "", false, "want attribute value object"},
		{"control character", "{\"Item\":{\"PK\":{\"S\":\"x\ty\"}}}", "", false, "control character"},
		{"bad escape", `{"Item":{"PK":{"S":"\x"}}}`, "", false, "bad escape"},
		{"not an object", `[]`, "", false, "want a JSON object"},
		{"deep unknown member", `{"Item":{"PK":{"S":"x"}},"o":` + strings.Repeat("[", 69) + strings.Repeat("]", 69) + `}`, "", false, "nested too deeply"},
	}
	s := newScanner(pipeline.NewExportDecoder(pipeline.Options{}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, has, err := s.scanItemLine([]byte(tt.line))
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("%s: error %v, want %q", tt.line, err, tt.err)
				}
			case err != nil || string(typ) != tt.typ || has != tt.has:
				t.Errorf("%s: %q %v %v; want %q %v", tt.line, typ, has, err, tt.typ, tt.has)
			}
		})
	}
}

// TestScanBigLines: a line longer than DynamoDB's item limit is decoded as
// well, so that its item is measured by pipeline.ItemSize, and one longer
// than the decoder's record limit is refused as the decoder refuses it.
func TestScanBigLines(t *testing.T) {
	line := func(n int) []byte {
		return []byte(`{"Item":{"PK":{"S":"a"},"pad":{"S":"` + strings.Repeat("x", n) + `"}}}`)
	}
	at := line(400<<10 - len("PK") - 1 - len("pad"))
	over := line(400<<10 - len("PK") - 1 - len("pad") + 1)
	tests := []struct {
		name string
		opts pipeline.Options
		line []byte
		err  string
	}{
		{"at the item limit", pipeline.Options{}, at, ""},
		{"over the item limit", pipeline.Options{}, over, "Item: 409601 bytes of attribute names, strings and binaries: more than DynamoDB's item limit of 409600"},
		{"over the record limit", pipeline.Options{MaxRecordBytes: 1000}, line(1000), "over the limit of 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := newScanner(pipeline.NewExportDecoder(tt.opts)).scanItemLine(tt.line)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
		})
	}
}

// fuzzSeeds adds the lines of the pipeline's export fixtures (valid lines,
// lines at DynamoDB's limits, the malformed cases) and an item over the
// 400 KB limit.
func fuzzSeeds(f *testing.F) {
	for _, g := range []string{"export/*.json", "malformed/export-*.json"} {
		files, _ := filepath.Glob(filepath.Join(decoderFixtures, g))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f.Add([]byte(l))
			}
		}
	}
	f.Add([]byte(`{"Item":{"PK":{"S":"a"},"pad":{"S":"` + strings.Repeat("x", 400<<10) + `"}}}`))
}

// FuzzScanItemLine checks the scanner against the decoder: it accepts a
// line exactly when the decoder's DecodeItem does, a line it accepts is
// valid JSON, and it finds the type the decoder finds.
func FuzzScanItemLine(f *testing.F) {
	fuzzSeeds(f)
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	s := newScanner(pipeline.NewExportDecoder(pipeline.Options{}))
	f.Fuzz(func(t *testing.T, line []byte) {
		typ, has, err := s.scanItemLine(line)
		c, derr := dec.DecodeItem(line, "f", 1)
		if (err == nil) != (derr == nil) {
			t.Fatalf("scanner: %v; decoder: %v\n%q", err, derr, line)
		}
		if err != nil {
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON: %q", line)
		}
		if _, present := c.New[pipeline.DefaultTypeAttribute]; string(typ) != c.NewType || has != present {
			t.Fatalf("type: scanner %q %v, decoder %q %v (%q)", typ, has, c.NewType, present, line)
		}
	})
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
	s := newScanner(pipeline.NewExportDecoder(pipeline.Options{}))
	for b.Loop() {
		for _, l := range lines {
			if _, _, err := s.scanItemLine(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// decoderFixtures are the pipeline's export-line fixtures: the lines at
// DynamoDB's limits and the malformed cases (see pipeline/testdata/README.md).
const decoderFixtures = "../../../pipeline/testdata"

// TestScanLimits: every line at DynamoDB's limits (32 levels of nesting, 38
// significant digits, the range of numbers, unicode, escapes) is accepted,
// with the type the decoder finds.
func TestScanLimits(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(decoderFixtures, "export", "limits.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := pipeline.NewExportDecoder(pipeline.Options{})
	s := newScanner(pipeline.NewExportDecoder(pipeline.Options{}))
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		c, err := dec.Decode([]byte(line), "limits.json", i+1)
		if err != nil {
			t.Fatalf("the decoder rejects line %d: %v", i+1, err)
		}
		typ, has, err := s.scanItemLine([]byte(line))
		if err != nil || !has || string(typ) != c.NewType {
			t.Errorf("line %d: %q %v %v; want %q", i+1, typ, has, err, c.NewType)
		}
	}
}
