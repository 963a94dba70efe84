// Package emf writes CloudWatch embedded metric format (EMF) log lines.
//
// An EMF line is a single JSON object printed to a log stream (on Lambda,
// standard output). CloudWatch Logs recognises the "_aws" member and
// extracts the metrics it describes; everything else in the object stays
// searchable in CloudWatch Logs Insights. The encoding is written by hand
// against the specification at
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
// and looks like this (wrapped here, one line on the wire):
//
//	{"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{
//	    "Namespace":"tributary","Dimensions":[["Function"]],
//	    "Metrics":[{"Name":"Latency","Unit":"Milliseconds"}]}]},
//	 "Function":"ingest","Latency":12.5,"requestId":"abc"}
//
// A [Set] holds one namespace, one dimension set, a sum per metric name and
// some string properties. [Set.WriteTo] validates the set against the
// specification's rules and writes one line per 100 metrics.
package emf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tributary/tributary/internal/ddbjson"
)

// Unit is a CloudWatch metric unit, spelled as the specification spells it.
type Unit string

// The units this project uses. Any other unit from the specification's list
// (for example "Percent" or "Bytes/Second") is also accepted as Unit("...").
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Seconds      Unit = "Seconds"
	Bytes        Unit = "Bytes"
	None         Unit = "None"
)

// validUnits is the list from the specification's JSON schema (MetricUnit).
var validUnits = map[Unit]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true,
	"Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true,
	"Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

// Limits from the specification.
const (
	// MaxMetrics is the most MetricDefinitions one directive may hold;
	// WriteTo starts a new line after this many metrics.
	MaxMetrics = 100
	// MaxDimensions is the most dimension keys one DimensionSet may hold.
	MaxDimensions = 30

	maxNamespaceLen = 1024 // characters, schema "Namespace" maxLength
	maxMetricName   = 1024 // characters, schema "MetricName" maxLength
	maxDimNameLen   = 250  // characters, schema "DimensionReference" maxLength
	maxDimValueLen  = 1024 // characters, "Target members" for dimensions

	awsKey = "_aws"
)

// ErrInvalid is wrapped by every validation error returned from
// [Set.WriteTo]; test for it with errors.Is.
var ErrInvalid = errors.New("emf: invalid")

type metric struct {
	unit     Unit
	sum      float64
	badUnits []Unit // units that disagreed with the first one, in Add order
}

// Set collects metrics that share a namespace and dimensions, and renders
// them as EMF lines.
//
// A Set is not safe for concurrent use: guard it with a mutex or give each
// goroutine (or each invocation) its own Set.
type Set struct {
	namespace string
	dimNames  []string // sorted
	dims      map[string]string
	metrics   map[string]*metric
	props     map[string]string
}

// New returns an empty Set for namespace whose metrics all carry dims (one
// dimension set holding every key of dims, sorted). dims is copied; it may
// be nil. Invalid input is reported by WriteTo, not here.
func New(namespace string, dims map[string]string) *Set {
	s := &Set{namespace: namespace, dims: make(map[string]string, len(dims))}
	for k, v := range dims {
		s.dims[k] = v
		s.dimNames = append(s.dimNames, k)
	}
	slices.Sort(s.dimNames)
	return s
}

// Add adds v to the metric called name. Adding to a name again accumulates
// a sum. The unit is that of the first Add; a later Add with a different
// unit makes WriteTo fail.
func (s *Set) Add(name string, unit Unit, v float64) {
	if s.metrics == nil {
		s.metrics = make(map[string]*metric)
	}
	m, ok := s.metrics[name]
	if !ok {
		s.metrics[name] = &metric{unit: unit, sum: v}
		return
	}
	if unit != m.unit && !slices.Contains(m.badUnits, unit) {
		m.badUnits = append(m.badUnits, unit)
	}
	m.sum += v
}

// Property sets a string member at the root of every line, for searching in
// Logs Insights (a request ID, say). It is not a dimension and creates no
// metric. Setting a key again replaces its value.
func (s *Set) Property(key, value string) {
	if s.props == nil {
		s.props = make(map[string]string)
	}
	s.props[key] = value
}

// Len reports the number of distinct metric names in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.metrics)
}

// WriteTo validates s and writes it to w as EMF: one compact JSON object
// per line, each ending in "\n", with at most [MaxMetrics] metrics per line
// (metrics sorted by name; dimensions and properties repeated on every
// line), stamped with now in epoch milliseconds. Each line goes to w in a
// single Write call.
//
// If s has no metrics WriteTo writes nothing and returns 0, nil. If s is
// invalid WriteTo writes nothing and returns an error wrapping [ErrInvalid]
// that names each offending namespace, dimension, metric or property. WriteTo
// does not change s.
func (s *Set) WriteTo(w io.Writer, now time.Time) (int64, error) {
	if s.Len() == 0 {
		return 0, nil
	}
	if err := s.validate(); err != nil {
		return 0, err
	}
	names := make([]string, 0, len(s.metrics))
	for name := range s.metrics {
		names = append(names, name)
	}
	slices.Sort(names)
	props := make([]string, 0, len(s.props))
	for k := range s.props {
		props = append(props, k)
	}
	slices.Sort(props)

	var total int64
	var buf []byte
	for chunk := range slices.Chunk(names, MaxMetrics) {
		buf = s.appendLine(buf[:0], now.UnixMilli(), chunk, props)
		n, err := w.Write(buf)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *Set) appendLine(b []byte, ts int64, names, props []string) []byte {
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = ddbjson.QuoteLine(b, s.namespace)
	b = append(b, `,"Dimensions":[[`...)
	for i, d := range s.dimNames {
		if i > 0 {
			b = append(b, ',')
		}
		b = ddbjson.QuoteLine(b, d)
	}
	b = append(b, `]],"Metrics":[`...)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = ddbjson.QuoteLine(b, name)
		b = append(b, `,"Unit":`...)
		b = ddbjson.QuoteLine(b, string(s.metrics[name].unit))
		b = append(b, '}')
	}
	b = append(b, `]}]}`...)
	for _, d := range s.dimNames {
		b = append(b, ',')
		b = ddbjson.QuoteLine(b, d)
		b = append(b, ':')
		b = ddbjson.QuoteLine(b, s.dims[d])
	}
	for _, name := range names {
		b = append(b, ',')
		b = ddbjson.QuoteLine(b, name)
		b = append(b, ':')
		b = appendFloat(b, s.metrics[name].sum)
	}
	for _, k := range props {
		b = append(b, ',')
		b = ddbjson.QuoteLine(b, k)
		b = append(b, ':')
		b = ddbjson.QuoteLine(b, s.props[k])
	}
	return append(b, "}\n"...)
}

// validate checks every rule and reports all violations, in a fixed order.
func (s *Set) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}

	switch n := utf8.RuneCountInString(s.namespace); {
	case n == 0:
		bad("namespace is empty")
	case n > maxNamespaceLen:
		bad("namespace %q is longer than %d characters", s.namespace, maxNamespaceLen)
	}

	if len(s.dimNames) > MaxDimensions {
		bad("%d dimensions, at most %d allowed", len(s.dimNames), MaxDimensions)
	}
	for _, d := range s.dimNames {
		switch {
		case d == "":
			bad("dimension name is empty")
		case d == awsKey:
			bad("dimension %q collides with the EMF metadata member", d)
		case utf8.RuneCountInString(d) > maxDimNameLen:
			bad("dimension %q: name is longer than %d characters", d, maxDimNameLen)
		}
		switch v := s.dims[d]; {
		case v == "":
			bad("dimension %q: value is empty", d)
		case utf8.RuneCountInString(v) > maxDimValueLen:
			bad("dimension %q: value is longer than %d characters", d, maxDimValueLen)
		}
	}

	names := make([]string, 0, len(s.metrics))
	for name := range s.metrics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		m := s.metrics[name]
		switch {
		case name == "":
			bad("metric name is empty")
		case name == awsKey:
			bad("metric %q collides with the EMF metadata member", name)
		case utf8.RuneCountInString(name) > maxMetricName:
			bad("metric %q: name is longer than %d characters", name, maxMetricName)
		}
		if _, ok := s.dims[name]; ok {
			bad("metric %q collides with the dimension of the same name", name)
		}
		if _, ok := s.props[name]; ok {
			bad("metric %q collides with the property of the same name", name)
		}
		if !validUnits[m.unit] {
			bad("metric %q: unknown unit %q", name, m.unit)
		}
		for _, u := range m.badUnits {
			bad("metric %q: added with unit %q and unit %q", name, m.unit, u)
		}
		if math.IsNaN(m.sum) || math.IsInf(m.sum, 0) {
			bad("metric %q: value %v is not a finite number", name, m.sum)
		}
	}

	props := make([]string, 0, len(s.props))
	for k := range s.props {
		props = append(props, k)
	}
	slices.Sort(props)
	for _, k := range props {
		switch {
		case k == "":
			bad("property name is empty")
		case k == awsKey:
			bad("property %q collides with the EMF metadata member", k)
		}
		if _, ok := s.dims[k]; ok {
			bad("property %q collides with the dimension of the same name", k)
		}
	}
	return errors.Join(errs...)
}

// appendFloat appends f as a JSON number, formatted the way encoding/json
// formats float64. f must be finite.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
