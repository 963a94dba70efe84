package metrics

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/emf"
)

var now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// emfLine is the part of an EMF line the tests read.
type emfLine struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// TestSetWrites: a family's metrics, with its dimensions, are written as
// one EMF line in the family's units (a duration in milliseconds), in the
// default namespace or the one given, the fixed dimensions filled in.
func TestSetWrites(t *testing.T) {
	tests := []struct {
		name      string
		set       func() *Set
		namespace string
		dims      map[string]string
		values    map[string]float64
		units     map[string]string
	}{
		{"batch", func() *Set {
			s := Batch.New("", map[string]string{"Function": "projector"})
			s.Add("BatchRecords", 100)
			s.AddDuration("BatchDuration", 1500*time.Microsecond)
			s.AddDuration("AppliedAge", 2*time.Minute)
			return s
		}, Namespace, map[string]string{"Function": "projector"},
			map[string]float64{"BatchRecords": 100, "BatchDuration": 1.5, "AppliedAge": 120000},
			map[string]string{"BatchRecords": "Count", "BatchDuration": "Milliseconds", "AppliedAge": "Milliseconds"}},
		{"shadow, fixed Component", func() *Set {
			s := Shadow.New("", nil)
			s.Add("ShadowFailures", 1)
			s.AddDuration("ShadowLag", 3*time.Second)
			return s
		}, Namespace, map[string]string{"Component": "shadow"},
			map[string]float64{"ShadowFailures": 1, "ShadowLag": 3000},
			map[string]string{"ShadowFailures": "Count", "ShadowLag": "Milliseconds"}},
		{"engine of a shadow set, another namespace", func() *Set {
			s := Engine.New("Team", map[string]string{"Component": "shadow", "Function": "f"})
			s.Add("WriteUnits", 2.5)
			return s
		}, "Team", map[string]string{"Component": "shadow", "Function": "f"},
			map[string]float64{"WriteUnits": 2.5},
			map[string]string{"WriteUnits": "Count"}},
		{"archive bytes", func() *Set {
			s := Archive.New("", map[string]string{"Function": "archiver"})
			s.Add("ArchiveUncompressedBytes", 4096)
			return s
		}, Namespace, map[string]string{"Function": "archiver"},
			map[string]float64{"ArchiveUncompressedBytes": 4096},
			map[string]string{"ArchiveUncompressedBytes": "Bytes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := tc.set().WriteTo(&buf, now); err != nil {
				t.Fatal(err)
			}
			var line emfLine
			var all map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("%v\n%s", err, buf.String())
			}
			if err := json.Unmarshal(buf.Bytes(), &all); err != nil {
				t.Fatal(err)
			}
			if strings.Count(buf.String(), "\n") != 1 || line.AWS.Timestamp != now.UnixMilli() || len(line.AWS.CloudWatchMetrics) != 1 {
				t.Fatalf("not one EMF line at %d:\n%s", now.UnixMilli(), buf.String())
			}
			m := line.AWS.CloudWatchMetrics[0]
			var dimNames []string
			for k, v := range tc.dims {
				dimNames = append(dimNames, k)
				if all[k] != v {
					t.Errorf("dimension %s = %v, want %q", k, all[k], v)
				}
			}
			slices.Sort(dimNames)
			if m.Namespace != tc.namespace || len(m.Dimensions) != 1 || !slices.Equal(slices.Sorted(slices.Values(m.Dimensions[0])), dimNames) {
				t.Errorf("namespace %q dimensions %v, want %q %v", m.Namespace, m.Dimensions, tc.namespace, dimNames)
			}
			if len(m.Metrics) != len(tc.values) {
				t.Errorf("%d metrics, want %d: %s", len(m.Metrics), len(tc.values), buf.String())
			}
			for _, mm := range m.Metrics {
				if mm.Unit != tc.units[mm.Name] || all[mm.Name] != tc.values[mm.Name] {
					t.Errorf("%s = %v %s, want %v %s", mm.Name, all[mm.Name], mm.Unit, tc.values[mm.Name], tc.units[mm.Name])
				}
			}
		})
	}
}

// TestSetRefuses: a metric the family does not list, a dimension it does
// not have, one missing, a value outside a dimension's list or other than
// its fixed one: WriteTo writes nothing and says what and which family.
func TestSetRefuses(t *testing.T) {
	tests := []struct {
		name string
		set  func() *Set
		want string
	}{
		{"a metric not listed", func() *Set {
			s := Batch.New("", map[string]string{"Function": "f"})
			s.Add("BatchRecords", 1)
			s.Add("Latency", 1)
			return s
		}, "metrics: family batch has no metric Latency"},
		{"a duration not listed", func() *Set {
			s := Remodel.New("", map[string]string{"Function": "f"})
			s.AddDuration("Lag", time.Second)
			return s
		}, "metrics: family remodel has no metric Lag"},
		{"another family's metric", func() *Set {
			s := Archive.New("", map[string]string{"Function": "f"})
			s.Add("ShadowLag", 1)
			return s
		}, "metrics: family archive has no metric ShadowLag"},
		{"a dimension not the family's", func() *Set {
			s := Batch.New("", map[string]string{"Function": "f", "EntityType": "Order"})
			s.Add("BatchRecords", 1)
			return s
		}, "metrics: family batch has no dimension EntityType"},
		{"a dimension missing", func() *Set {
			s := ByType.New("", map[string]string{"Function": "f"})
			s.Add("Records", 1)
			return s
		}, "metrics: family by entity type: no value for dimension EntityType"},
		{"a value not listed", func() *Set {
			s := Engine.New("", map[string]string{"Component": "remodel", "Function": "f"})
			s.Add("Changes", 1)
			return s
		}, `metrics: family engine: dimension Component is one of [engine shadow], not "remodel"`},
		{"a fixed value changed", func() *Set {
			s := Shadow.New("", map[string]string{"Component": "engine"})
			s.Add("ShadowFailures", 1)
			return s
		}, `metrics: family shadow: dimension Component is always "shadow", not "engine"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := tc.set().WriteTo(&buf, now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteTo: %v, want an error saying %q", err, tc.want)
			}
			if n != 0 || buf.Len() != 0 {
				t.Errorf("wrote %d bytes despite the error: %s", n, buf.String())
			}
		})
	}
}

// TestFamilies: every family's dimensions are sorted (as Find and the
// template's check compare them) and unique, its metrics named once with
// a unit EMF takes, its fixed and listed dimensions among its own; and a
// metric name with a dimension set is one family's, so that Find is never
// ambiguous.
func TestFamilies(t *testing.T) {
	owner := map[string]string{}
	for _, f := range Families() {
		if !slices.IsSorted(f.Dimensions) || len(slices.Compact(slices.Clone(f.Dimensions))) != len(f.Dimensions) || len(f.Dimensions) == 0 {
			t.Errorf("%s: dimensions %v are not sorted and unique", f.Name, f.Dimensions)
		}
		for d := range f.Fixed {
			if !slices.Contains(f.Dimensions, d) {
				t.Errorf("%s: fixed dimension %s is not one of %v", f.Name, d, f.Dimensions)
			}
		}
		for d := range f.Values {
			if !slices.Contains(f.Dimensions, d) {
				t.Errorf("%s: listed dimension %s is not one of %v", f.Name, d, f.Dimensions)
			}
		}
		if len(f.Metrics) == 0 {
			t.Errorf("%s: no metric", f.Name)
		}
		for _, m := range f.Metrics {
			switch m.Unit {
			case emf.Count, emf.Milliseconds, emf.Seconds, emf.Bytes:
			default:
				t.Errorf("%s: %s in %q", f.Name, m.Name, m.Unit)
			}
			if m.Doc == "" {
				t.Errorf("%s: %s says nothing of what it counts", f.Name, m.Name)
			}
			key := m.Name + " by " + strings.Join(f.Dimensions, ",")
			if o, ok := owner[key]; ok {
				t.Errorf("%s is both %s's and %s's", key, o, f.Name)
			}
			owner[key] = f.Name
			reversed := slices.Clone(f.Dimensions)
			slices.Reverse(reversed)
			got, ok := Find(m.Name, reversed)
			if !ok || got != f {
				t.Errorf("Find(%s, %v) = %v, %v; want %s", m.Name, f.Dimensions, got, ok, f.Name)
			}
		}
	}
	if _, ok := Find("Processed", []string{"Function"}); ok {
		t.Error("Find: Processed by Function alone is found, but only the by-type family writes it, by EntityType and Function")
	}
	if _, ok := Find("Latency", []string{"Function"}); ok {
		t.Error("Find: a metric no family lists is found")
	}
}
