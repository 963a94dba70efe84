package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)

// checkSpec parses out as EMF and checks every rule of the specification
// that this package promises, against what was put into the set. It
// returns the parsed documents.
func checkSpec(t *testing.T, out []byte, now time.Time, namespace string, dims map[string]string,
	metrics map[string]float64, units map[string]Unit, props map[string]string) []map[string]any {
	t.Helper()
	if len(out) == 0 || out[len(out)-1] != '\n' {
		t.Fatalf("output does not end in a newline: %q", out)
	}
	lines := strings.SplitAfter(string(out), "\n")
	lines = lines[:len(lines)-1] // after the final "\n"
	if want := (len(metrics) + MaxMetrics - 1) / MaxMetrics; len(lines) != want {
		t.Fatalf("got %d lines, want %d", len(lines), want)
	}

	wantDimNames := make([]string, 0, len(dims))
	for k := range dims {
		wantDimNames = append(wantDimNames, k)
	}
	slices.Sort(wantDimNames)

	seen := map[string]int{}
	var prevLast string
	var docs []map[string]any
	for li, line := range lines {
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "}\n") || !strings.HasPrefix(line, "{") {
			t.Fatalf("line %d is not one compact JSON object line: %q", li, line)
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("line %d: %v\n%s", li, err, line)
		}
		if dec.More() {
			t.Fatalf("line %d: data after the JSON object", li)
		}
		docs = append(docs, doc)

		// Root: a metadata object "_aws" with exactly Timestamp and CloudWatchMetrics.
		aws, ok := doc["_aws"].(map[string]any)
		if !ok {
			t.Fatalf("line %d: _aws is %T, want object", li, doc["_aws"])
		}
		if len(aws) != 2 {
			t.Errorf("line %d: _aws has members %v, want Timestamp and CloudWatchMetrics only", li, keys(aws))
		}
		ts, ok := aws["Timestamp"].(json.Number)
		if !ok {
			t.Fatalf("line %d: Timestamp is %T, want number", li, aws["Timestamp"])
		}
		if ms, err := ts.Int64(); err != nil || ms != now.UnixMilli() {
			t.Errorf("line %d: Timestamp = %s, want integer epoch ms %d", li, ts, now.UnixMilli())
		}
		cwm, ok := aws["CloudWatchMetrics"].([]any)
		if !ok || len(cwm) != 1 {
			t.Fatalf("line %d: CloudWatchMetrics = %#v, want array of one directive", li, aws["CloudWatchMetrics"])
		}

		// MetricDirective: exactly Namespace, Dimensions, Metrics.
		dir, ok := cwm[0].(map[string]any)
		if !ok {
			t.Fatalf("line %d: directive is %T, want object", li, cwm[0])
		}
		if len(dir) != 3 {
			t.Errorf("line %d: directive has members %v, want Namespace, Dimensions, Metrics", li, keys(dir))
		}
		if ns, _ := dir["Namespace"].(string); ns != namespace || ns == "" {
			t.Errorf("line %d: Namespace = %#v, want %q", li, dir["Namespace"], namespace)
		}

		// Dimensions: an array of one DimensionSet (array of <= 30 strings),
		// each naming a root member with a string value.
		dsets, ok := dir["Dimensions"].([]any)
		if !ok || len(dsets) != 1 {
			t.Fatalf("line %d: Dimensions = %#v, want [[...]]", li, dir["Dimensions"])
		}
		dset, ok := dsets[0].([]any)
		if !ok {
			t.Fatalf("line %d: DimensionSet is %T, want array", li, dsets[0])
		}
		if len(dset) > MaxDimensions {
			t.Errorf("line %d: DimensionSet has %d keys, max %d", li, len(dset), MaxDimensions)
		}
		var gotDimNames []string
		for _, d := range dset {
			name, ok := d.(string)
			if !ok || name == "" {
				t.Fatalf("line %d: dimension key %#v, want non-empty string", li, d)
			}
			gotDimNames = append(gotDimNames, name)
			v, ok := doc[name].(string)
			if !ok {
				t.Errorf("line %d: dimension %q: root member is %#v, want string", li, name, doc[name])
			} else if v != dims[name] {
				t.Errorf("line %d: dimension %q = %q, want %q", li, name, v, dims[name])
			}
		}
		if !slices.Equal(gotDimNames, wantDimNames) {
			t.Errorf("line %d: dimension keys %q, want sorted %q", li, gotDimNames, wantDimNames)
		}

		// Metrics: 1..100 MetricDefinitions with unique, non-empty, sorted
		// names and documented units, each naming a numeric root member.
		defs, ok := dir["Metrics"].([]any)
		if !ok || len(defs) == 0 || len(defs) > MaxMetrics {
			t.Fatalf("line %d: Metrics has %d definitions, want 1..%d", li, len(defs), MaxMetrics)
		}
		lineNames := map[string]bool{}
		for i, d := range defs {
			def, ok := d.(map[string]any)
			if !ok {
				t.Fatalf("line %d: MetricDefinition is %T, want object", li, d)
			}
			for k := range def {
				if k != "Name" && k != "Unit" && k != "StorageResolution" {
					t.Errorf("line %d: MetricDefinition has unknown member %q", li, k)
				}
			}
			name, ok := def["Name"].(string)
			if !ok || name == "" {
				t.Fatalf("line %d: metric Name = %#v, want non-empty string", li, def["Name"])
			}
			if lineNames[name] {
				t.Errorf("line %d: metric %q defined twice", li, name)
			}
			lineNames[name] = true
			if i == 0 && li > 0 && name <= prevLast {
				t.Errorf("line %d: first metric %q does not sort after %q", li, name, prevLast)
			}
			if i > 0 {
				if prev := defs[i-1].(map[string]any)["Name"].(string); name <= prev {
					t.Errorf("line %d: metrics not sorted: %q after %q", li, name, prev)
				}
			}
			prevLast = name
			seen[name]++
			unit, _ := def["Unit"].(string)
			if !validUnits[Unit(unit)] {
				t.Errorf("line %d: metric %q: Unit %#v not a documented unit", li, name, def["Unit"])
			}
			if unit != string(units[name]) {
				t.Errorf("line %d: metric %q: Unit %q, want %q", li, name, unit, units[name])
			}
			num, ok := doc[name].(json.Number)
			if !ok {
				t.Errorf("line %d: metric %q: root member is %#v, want number", li, name, doc[name])
				continue
			}
			f, err := num.Float64()
			if err != nil || f != metrics[name] {
				t.Errorf("line %d: metric %q = %s, want %v", li, name, num, metrics[name])
			}
		}

		// Properties: on every line, as strings.
		for k, want := range props {
			if got, ok := doc[k].(string); !ok || got != want {
				t.Errorf("line %d: property %q = %#v, want %q", li, k, doc[k], want)
			}
		}
		// Nothing else at the root.
		if want := 1 + len(dims) + len(defs) + len(props); len(doc) != want {
			t.Errorf("line %d: root has %d members %v, want %d", li, len(doc), keys(doc), want)
		}
	}
	for name := range metrics {
		if seen[name] != 1 {
			t.Errorf("metric %q appears on %d lines, want 1", name, seen[name])
		}
	}
	if len(seen) != len(metrics) {
		t.Errorf("output has %d metrics, want %d", len(seen), len(metrics))
	}
	return docs
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

type add struct {
	name string
	unit Unit
	v    float64
}

func TestWriteToFollowsSpec(t *testing.T) {
	many := func(n int) []add {
		var adds []add
		for i := range n {
			adds = append(adds, add{fmt.Sprintf("m%03d", i), Count, float64(i)})
		}
		return adds
	}
	thirty := map[string]string{}
	for i := range MaxDimensions {
		thirty[fmt.Sprintf("D%02d", i)] = fmt.Sprint(i)
	}

	tests := []struct {
		name      string
		namespace string
		dims      map[string]string
		adds      []add
		props     map[string]string
	}{
		{
			name:      "one metric no dimensions",
			namespace: "tributary",
			adds:      []add{{"Invocations", Count, 1}},
		},
		{
			name:      "dimensions sorted and properties",
			namespace: "tributary",
			dims:      map[string]string{"Stage": "prod", "Function": "ingest"},
			adds: []add{
				{"Latency", Milliseconds, 12.5},
				{"Errors", Count, 0},
				{"Payload", Bytes, 4096},
				{"Cold", Seconds, 0.25},
				{"Ratio", None, -3e-9},
			},
			props: map[string]string{"requestId": "989ffbf8-9ace-4817-a57c-e4dd734019ee"},
		},
		{
			name:      "sums accumulate",
			namespace: "tributary",
			dims:      map[string]string{"Function": "ingest"},
			adds: []add{
				{"Records", Count, 3}, {"Records", Count, 4}, {"Records", Count, 0.5},
				{"Latency", Milliseconds, 1}, {"Latency", Milliseconds, 2},
			},
		},
		{
			name:      "other documented units",
			namespace: "tributary",
			adds:      []add{{"Rate", "Bytes/Second", 10}, {"Pct", "Percent", 99.9}, {"Tiny", "Microseconds", 1}},
		},
		{
			name:      "thirty dimensions",
			namespace: "tributary",
			dims:      thirty,
			adds:      []add{{"Invocations", Count, 1}},
		},
		{
			name:      "strings needing escapes",
			namespace: `ns "quoted" \ back`,
			dims:      map[string]string{"Path": "a\nb\tc\x00d\u2028e", "Ünïcode": "日本語 🚀"},
			adds:      []add{{`odd "metric"`, Count, 1}},
			props:     map[string]string{"note": "line1\r\nline2 <b>&amp;</b>", "bad utf8": "\xff\xfe"},
		},
		{
			name:      "large and small magnitudes",
			namespace: "tributary",
			adds: []add{
				{"Big", Bytes, 1e21}, {"Huge", Bytes, math.MaxFloat64}, {"Small", Seconds, 5e-324},
				{"Neg", None, -123456.789}, {"Int", Count, 9007199254740993},
			},
		},
		{name: "exactly 100 metrics", namespace: "tributary", adds: many(100)},
		{name: "101 metrics split", namespace: "tributary", adds: many(101)},
		{
			name:      "250 metrics split with dims and props",
			namespace: "tributary",
			dims:      map[string]string{"Function": "ingest"},
			adds:      many(250),
			props:     map[string]string{"requestId": "r-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.namespace, tt.dims)
			sums := map[string]float64{}
			units := map[string]Unit{}
			for _, a := range tt.adds {
				s.Add(a.name, a.unit, a.v)
				sums[a.name] += a.v
				units[a.name] = a.unit
			}
			for k, v := range tt.props {
				s.Property(k, v)
			}
			if s.Len() != len(sums) {
				t.Errorf("Len() = %d, want %d", s.Len(), len(sums))
			}
			var buf bytes.Buffer
			n, err := s.WriteTo(&buf, fixedNow)
			if err != nil {
				t.Fatalf("WriteTo: %v", err)
			}
			if n != int64(buf.Len()) {
				t.Errorf("WriteTo returned n = %d, wrote %d bytes", n, buf.Len())
			}
			// Invalid UTF-8 in a property value is written as U+FFFD.
			wantProps := map[string]string{}
			for k, v := range tt.props {
				wantProps[k] = jsonValidUTF8(v)
			}
			checkSpec(t, buf.Bytes(), fixedNow, tt.namespace, tt.dims, sums, units, wantProps)

			// WriteTo does not change the set: writing again gives the same bytes.
			var again bytes.Buffer
			if _, err := s.WriteTo(&again, fixedNow); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
				t.Errorf("second WriteTo differs (err %v)", err)
			}
		})
	}
}

func TestWriteToGolden(t *testing.T) {
	s := New("tributary", map[string]string{"Stage": "prod", "Function": "ingest"})
	s.Add("Records", Count, 2)
	s.Add("Latency", Milliseconds, 12.5)
	s.Add("Records", Count, 3)
	s.Add("Payload", Bytes, 1e21)
	s.Add("Cold", Seconds, 0.000000125)
	s.Property("requestId", "req-1")
	s.Property("note", "a\"b\n")

	const want = `{"_aws":{"Timestamp":1714979289123,"CloudWatchMetrics":[{"Namespace":"tributary","Dimensions":[["Function","Stage"]],"Metrics":[{"Name":"Cold","Unit":"Seconds"},{"Name":"Latency","Unit":"Milliseconds"},{"Name":"Payload","Unit":"Bytes"},{"Name":"Records","Unit":"Count"}]}]},"Function":"ingest","Stage":"prod","Cold":1.25e-7,"Latency":12.5,"Payload":1e+21,"Records":5,"note":"a\"b\n","requestId":"req-1"}` + "\n"

	var buf bytes.Buffer
	n, err := s.WriteTo(&buf, fixedNow)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if got := buf.String(); got != want {
		t.Errorf("WriteTo wrote\n%s\nwant\n%s", got, want)
	}
	if n != int64(len(want)) {
		t.Errorf("n = %d, want %d", n, len(want))
	}
}

func TestWriteToSplitsAt100(t *testing.T) {
	tests := []struct {
		name      string
		metrics   int
		wantSizes []int
	}{
		{"1", 1, []int{1}},
		{"99", 99, []int{99}},
		{"100", 100, []int{100}},
		{"101", 101, []int{100, 1}},
		{"200", 200, []int{100, 100}},
		{"250", 250, []int{100, 100, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("tributary", map[string]string{"Function": "ingest"})
			s.Property("requestId", "r")
			for i := range tt.metrics {
				s.Add(fmt.Sprintf("m%03d", i), Count, 1)
			}
			w := &countingWriter{}
			if _, err := s.WriteTo(w, fixedNow); err != nil {
				t.Fatal(err)
			}
			if len(w.writes) != len(tt.wantSizes) {
				t.Fatalf("%d Write calls, want %d (one per line)", len(w.writes), len(tt.wantSizes))
			}
			next := 0
			for i, line := range w.writes {
				var doc struct {
					AWS struct {
						CloudWatchMetrics []struct {
							Metrics []struct{ Name string }
						}
					} `json:"_aws"`
					Function  string
					RequestID string `json:"requestId"`
				}
				if err := json.Unmarshal(line, &doc); err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
				defs := doc.AWS.CloudWatchMetrics[0].Metrics
				if len(defs) != tt.wantSizes[i] {
					t.Errorf("line %d has %d metrics, want %d", i, len(defs), tt.wantSizes[i])
				}
				for _, d := range defs {
					if want := fmt.Sprintf("m%03d", next); d.Name != want {
						t.Fatalf("line %d: metric %q, want %q", i, d.Name, want)
					}
					next++
				}
				if doc.Function != "ingest" || doc.RequestID != "r" {
					t.Errorf("line %d: dimension/property not repeated: %+v", i, doc)
				}
			}
		})
	}
}

type countingWriter struct{ writes [][]byte }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWriteToValidation(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // n characters, 2n bytes
	tooMany := map[string]string{}
	for i := range MaxDimensions + 1 {
		tooMany[fmt.Sprintf("D%02d", i)] = "v"
	}
	tests := []struct {
		name  string
		build func() *Set
		want  []string // substrings of the error, naming the offender
	}{
		{"empty namespace", func() *Set {
			s := New("", nil)
			s.Add("M", Count, 1)
			return s
		}, []string{"namespace is empty"}},
		{"namespace too long", func() *Set {
			s := New(long(1025), nil)
			s.Add("M", Count, 1)
			return s
		}, []string{"namespace", "longer than 1024"}},
		{"empty metric name", func() *Set {
			s := New("ns", nil)
			s.Add("", Count, 1)
			return s
		}, []string{"metric name is empty"}},
		{"metric name too long", func() *Set {
			s := New("ns", nil)
			s.Add(long(1025), Count, 1)
			return s
		}, []string{`metric "` + long(1025) + `": name is longer than 1024`}},
		{"unknown unit", func() *Set {
			s := New("ns", nil)
			s.Add("Latency", "Millis", 1)
			return s
		}, []string{`metric "Latency": unknown unit "Millis"`}},
		{"empty unit", func() *Set {
			s := New("ns", nil)
			s.Add("Latency", "", 1)
			return s
		}, []string{`metric "Latency": unknown unit ""`}},
		{"unit case matters", func() *Set {
			s := New("ns", nil)
			s.Add("Latency", "milliseconds", 1)
			return s
		}, []string{`metric "Latency": unknown unit "milliseconds"`}},
		{"conflicting units", func() *Set {
			s := New("ns", nil)
			s.Add("Latency", Milliseconds, 1)
			s.Add("Latency", Seconds, 1)
			return s
		}, []string{`metric "Latency": added with unit "Milliseconds" and unit "Seconds"`}},
		{"NaN", func() *Set {
			s := New("ns", nil)
			s.Add("Ratio", None, math.NaN())
			return s
		}, []string{`metric "Ratio": value NaN`}},
		{"+Inf", func() *Set {
			s := New("ns", nil)
			s.Add("Big", Bytes, math.Inf(1))
			return s
		}, []string{`metric "Big": value +Inf`}},
		{"-Inf", func() *Set {
			s := New("ns", nil)
			s.Add("Big", Bytes, math.Inf(-1))
			return s
		}, []string{`metric "Big": value -Inf`}},
		{"sum overflows to Inf", func() *Set {
			s := New("ns", nil)
			s.Add("Big", Bytes, math.MaxFloat64)
			s.Add("Big", Bytes, math.MaxFloat64)
			return s
		}, []string{`metric "Big": value +Inf`}},
		{"metric collides with dimension", func() *Set {
			s := New("ns", map[string]string{"Function": "ingest"})
			s.Add("Function", Count, 1)
			return s
		}, []string{`metric "Function" collides with the dimension`}},
		{"metric named _aws", func() *Set {
			s := New("ns", nil)
			s.Add("_aws", Count, 1)
			return s
		}, []string{`metric "_aws" collides with the EMF metadata`}},
		{"metric collides with property", func() *Set {
			s := New("ns", nil)
			s.Add("requestId", Count, 1)
			s.Property("requestId", "r")
			return s
		}, []string{`metric "requestId" collides with the property`}},
		{"property collides with dimension", func() *Set {
			s := New("ns", map[string]string{"Function": "ingest"})
			s.Add("M", Count, 1)
			s.Property("Function", "other")
			return s
		}, []string{`property "Function" collides with the dimension`}},
		{"property named _aws", func() *Set {
			s := New("ns", nil)
			s.Add("M", Count, 1)
			s.Property("_aws", "x")
			return s
		}, []string{`property "_aws" collides with the EMF metadata`}},
		{"empty property name", func() *Set {
			s := New("ns", nil)
			s.Add("M", Count, 1)
			s.Property("", "x")
			return s
		}, []string{"property name is empty"}},
		{"dimension named _aws", func() *Set {
			s := New("ns", map[string]string{"_aws": "x"})
			s.Add("M", Count, 1)
			return s
		}, []string{`dimension "_aws" collides with the EMF metadata`}},
		{"empty dimension name", func() *Set {
			s := New("ns", map[string]string{"": "x"})
			s.Add("M", Count, 1)
			return s
		}, []string{"dimension name is empty"}},
		{"empty dimension value", func() *Set {
			s := New("ns", map[string]string{"Stage": ""})
			s.Add("M", Count, 1)
			return s
		}, []string{`dimension "Stage": value is empty`}},
		{"dimension name too long", func() *Set {
			s := New("ns", map[string]string{long(251): "x"})
			s.Add("M", Count, 1)
			return s
		}, []string{"name is longer than 250"}},
		{"dimension value too long", func() *Set {
			s := New("ns", map[string]string{"Stage": long(1025)})
			s.Add("M", Count, 1)
			return s
		}, []string{`dimension "Stage": value is longer than 1024`}},
		{"31 dimensions", func() *Set {
			s := New("ns", tooMany)
			s.Add("M", Count, 1)
			return s
		}, []string{"31 dimensions, at most 30"}},
		{"all errors reported", func() *Set {
			s := New("", map[string]string{"Stage": ""})
			s.Add("A", "bogus", 1)
			s.Add("B", Count, math.NaN())
			s.Property("Stage", "x")
			return s
		}, []string{"namespace is empty", `dimension "Stage": value is empty`,
			`metric "A": unknown unit "bogus"`, `metric "B": value NaN`, `property "Stage" collides`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.build()
			var buf bytes.Buffer
			n, err := s.WriteTo(&buf, fixedNow)
			if err == nil {
				t.Fatalf("WriteTo succeeded, wrote %q", buf.String())
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if n != 0 || buf.Len() != 0 {
				t.Errorf("invalid set wrote %d bytes: %q", n, buf.String())
			}
		})
	}
}

func TestWriteToNothing(t *testing.T) {
	tests := []struct {
		name string
		set  *Set
	}{
		{"new set", New("ns", map[string]string{"Function": "f"})},
		{"properties only", func() *Set { s := New("ns", nil); s.Property("requestId", "r"); return s }()},
		{"invalid but empty", New("", map[string]string{"": ""})},
		{"zero Set", &Set{}},
		{"nil Set", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := tt.set.WriteTo(&buf, fixedNow)
			if n != 0 || err != nil || buf.Len() != 0 {
				t.Errorf("WriteTo = %d, %v, wrote %q; want 0, nil, nothing", n, err, buf.String())
			}
			if got := tt.set.Len(); got != 0 {
				t.Errorf("Len() = %d, want 0", got)
			}
		})
	}
}

func TestZeroSetUsable(t *testing.T) {
	var s Set
	s.Add("M", Count, 1)
	s.Property("p", "v")
	var buf bytes.Buffer
	_, err := s.WriteTo(&buf, fixedNow)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "namespace is empty") {
		t.Errorf("zero Set: err = %v, want empty namespace error", err)
	}
}

func TestNewCopiesDims(t *testing.T) {
	dims := map[string]string{"Function": "ingest"}
	s := New("ns", dims)
	dims["Function"] = "changed"
	dims["Extra"] = "x"
	s.Add("M", Count, 1)
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf, fixedNow); err != nil {
		t.Fatal(err)
	}
	checkSpec(t, buf.Bytes(), fixedNow, "ns", map[string]string{"Function": "ingest"},
		map[string]float64{"M": 1}, map[string]Unit{"M": Count}, nil)
}

func TestWriteToWriterError(t *testing.T) {
	tests := []struct {
		name    string
		metrics int
		failAt  int // Write call that fails (0-based)
		wantN   int // successful lines before the failure
	}{
		{"first line", 1, 0, 0},
		{"second line", 150, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("ns", nil)
			for i := range tt.metrics {
				s.Add(fmt.Sprintf("m%03d", i), Count, 1)
			}
			w := &failingWriter{failAt: tt.failAt}
			n, err := s.WriteTo(w, fixedNow)
			if !errors.Is(err, errWrite) {
				t.Fatalf("err = %v, want %v", err, errWrite)
			}
			if n != int64(w.written) {
				t.Errorf("n = %d, writer accepted %d bytes", n, w.written)
			}
			if w.lines != tt.wantN {
				t.Errorf("%d lines written before the error, want %d", w.lines, tt.wantN)
			}
		})
	}
}

var errWrite = errors.New("disk full")

type failingWriter struct {
	failAt, calls, lines, written int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	defer func() { w.calls++ }()
	if w.calls == w.failAt {
		w.written += len(p) / 2
		return len(p) / 2, errWrite
	}
	w.lines++
	w.written += len(p)
	return len(p), nil
}

// TestLineSeparatorsEscaped: strings are written with ddbjson.QuoteLine,
// so an EMF line never holds a raw U+2028 or U+2029 that a log reader might
// split it at.
func TestLineSeparatorsEscaped(t *testing.T) {
	s := New("tributary", map[string]string{"Path": "a\u2028b"})
	s.Add("Records", Count, 1)
	s.Property("note", "c\u2029d")
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf, fixedNow); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if strings.ContainsAny(line, "\u2028\u2029") || !strings.Contains(line, `"a\u2028b"`) || !strings.Contains(line, `"c\u2029d"`) {
		t.Errorf("separators not escaped: %s", line)
	}
}

// jsonValidUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func jsonValidUTF8(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // range yields U+FFFD per invalid byte
	}
	return b.String()
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{-2.5, "-2.5"},
		{12.5, "12.5"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{1.25e-7, "1.25e-7"},
		{9007199254740993, "9007199254740992"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{func() float64 { a, b := 0.1, 0.2; return a + b }(), "0.30000000000000004"}, // not constant-folded
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := string(appendFloat(nil, tt.in))
			if got != tt.want {
				t.Errorf("appendFloat(%v) = %s, want %s", tt.in, got, tt.want)
			}
			// Same as encoding/json, and parses back to the same value.
			if js, _ := json.Marshal(tt.in); string(js) != got {
				t.Errorf("appendFloat(%v) = %s, encoding/json gives %s", tt.in, got, js)
			}
			var back float64
			if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in {
				t.Errorf("%s parses back to %v (%v), want %v", got, back, err, tt.in)
			}
		})
	}
}

func TestUnitConstants(t *testing.T) {
	tests := []struct {
		unit Unit
		want string
	}{
		{Count, "Count"},
		{Milliseconds, "Milliseconds"},
		{Seconds, "Seconds"},
		{Bytes, "Bytes"},
		{None, "None"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if string(tt.unit) != tt.want || !validUnits[tt.unit] {
				t.Errorf("unit %q: want %q in the documented list", tt.unit, tt.want)
			}
		})
	}
	if len(validUnits) != 27 {
		t.Errorf("validUnits has %d entries, the specification lists 27", len(validUnits))
	}
}
