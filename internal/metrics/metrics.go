// Package metrics is the one list of the CloudWatch metrics Tributary
// writes: each family's dimensions and the names and units of its metrics.
// Every emitter makes its embedded-metric-format lines through a [Family],
// so a metric that is not listed here cannot be written, and the stack's
// alarms and dashboard are checked against this list (a test reads them
// out of template.yaml).
package metrics

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/tributary/tributary/internal/emf"
)

// Namespace is the default namespace of every metric listed here; the
// template reads this one.
const Namespace = "Tributary"

// Defaults fills in what a consumer's config (pipeline.Config,
// engine.Config, archive.Options) leaves empty of its reporting: the
// logger, slog.Default(), and the metrics namespace, Namespace. It is the
// one place these defaults are set.
func Defaults(logger **slog.Logger, namespace *string) {
	if *logger == nil {
		*logger = slog.Default()
	}
	if *namespace == "" {
		*namespace = Namespace
	}
}

// A Metric is one metric's name and unit.
type Metric struct {
	Name string
	Unit emf.Unit
	// Doc says what the metric counts or measures.
	Doc string
}

// A Family is a dimension set and the metrics written with it.
type Family struct {
	// Name names the family for errors and docs.
	Name string
	// Dimensions are the dimension names, sorted, as EMF writes them.
	Dimensions []string
	// Fixed holds the dimensions whose value is always the same (Component).
	Fixed map[string]string
	// Values lists, for a dimension that takes one of a few values, those
	// values.
	Values  map[string][]string
	Metrics []Metric
}

// The families. Function is the Lambda function's name (the pipeline's
// Config.Function, "local" off Lambda).
var (
	// ByType is written by every stream consumer per batch, per entity type
	// ("(none)", "(other)" and "(undecodable)" for records that name none,
	// one the consumer does not list, or cannot be decoded).
	ByType = &Family{Name: "by entity type", Dimensions: []string{"EntityType", "Function"}, Metrics: []Metric{
		{"Records", emf.Count, "records the batch held"},
		{"Processed", emf.Count, "records applied"},
		{"Skipped", emf.Count, "records passed over: a type no handler reads, or skipped as permanently failed"},
		{"Failed", emf.Count, "records that failed (left for retry, or skipped as permanent)"},
	}}
	// Batch is written by every stream consumer per batch.
	Batch = &Family{Name: "batch", Dimensions: []string{"Function"}, Metrics: []Metric{
		{"BatchDuration", emf.Milliseconds, "time to handle the batch"},
		{"BatchRecords", emf.Count, "records the batch held"},
		{"RecordsDone", emf.Count, "records applied or passed over: the batch's progress (0 while every record fails)"},
		{"AppliedAge", emf.Milliseconds, "age of the newest change the batch applied, when it applied one: how far the function's output is behind the table"},
	}}
	// Engine is written by the projection engine per batch: Component is
	// "engine" for a live set and "shadow" for a shadow set.
	Engine = &Family{Name: "engine", Dimensions: []string{"Component", "Function"}, Values: map[string][]string{"Component": {"engine", "shadow"}}, Metrics: []Metric{
		{"Changes", emf.Count, "changes the engine decided on"},
		{"ItemsWritten", emf.Count, "projection items written"},
		{"Stale", emf.Count, "changes older than the ledger's: already applied"},
		{"Superseded", emf.Count, "changes a newer change of the same batch replaced"},
		{"Transactions", emf.Count, "transactions committed"},
		{"Conflicts", emf.Count, "transactions refused because a ledger entry moved (retried)"},
		{"WriteUnits", emf.Count, "write capacity units the commits consumed"},
		{"ApplyDuration", emf.Milliseconds, "time to apply the batch"},
	}}
	// Shadow is written by a projector that keeps a shadow set, per batch.
	Shadow = &Family{Name: "shadow", Dimensions: []string{"Component"}, Fixed: map[string]string{"Component": "shadow"}, Metrics: []Metric{
		{"ShadowFailures", emf.Count, "batches the shadow could not apply in full (kept for redrive)"},
		{"ShadowDuration", emf.Milliseconds, "time the shadow took on the batch"},
		{"ShadowLag", emf.Milliseconds, "how far the shadow's newest applied change is behind the live set's"},
	}}
	// Archive is written by the archiver per batch.
	Archive = &Family{Name: "archive", Dimensions: []string{"Function"}, Metrics: []Metric{
		{"ArchivedItems", emf.Count, "items archived"},
		{"IgnoredRecords", emf.Count, "records that were not TTL removals"},
		{"ArchiveObjects", emf.Count, "objects written"},
		{"ArchivePutFailures", emf.Count, "objects that could not be written"},
		{"ArchiveUncompressedBytes", emf.Bytes, "bytes archived before compression"},
	}}
	// Remodel is written by the remodeler per batch that applied a change.
	Remodel = &Family{Name: "remodel", Dimensions: []string{"Function"}, Metrics: []Metric{
		{"CatchUpLag", emf.Milliseconds, "age of the newest change the target applied"},
	}}
)

// Handoff is written by a backfill on the road that catches up by replay
// (nothing attached to its store before the export), at each check of its
// hand-off guard: how long before the stream trims the export's second the
// backfill is estimated to finish (negative: too late, and refused), and
// how long it has left.
var Handoff = &Family{Name: "hand-off", Dimensions: []string{"Function"}, Metrics: []Metric{
	{"HandoffHeadroom", emf.Seconds, "time between the backfill's estimated finish and the stream's trimming of the export's second (negative: refused)"},
	{"EstimatedRemaining", emf.Seconds, "the backfill's estimated time left"},
}}

// Families lists every family.
func Families() []*Family {
	return []*Family{ByType, Batch, Engine, Shadow, Archive, Remodel, Handoff}
}

// Metric returns the family's metric called name.
func (f *Family) Metric(name string) (Metric, bool) {
	i := slices.IndexFunc(f.Metrics, func(m Metric) bool { return m.Name == name })
	if i < 0 {
		return Metric{}, false
	}
	return f.Metrics[i], true
}

// Set is a set of a family's metrics being collected for one line.
type Set struct {
	f    *Family
	set  *emf.Set
	errs []error
}

// New returns an empty set of f's metrics in namespace ("" is [Namespace])
// with the dimension values dims, one per name of f.Dimensions that has no
// fixed value. A missing or unknown dimension makes WriteTo fail.
func (f *Family) New(namespace string, dims map[string]string) *Set {
	if namespace == "" {
		namespace = Namespace
	}
	s := &Set{f: f}
	all := make(map[string]string, len(f.Dimensions))
	for k, v := range f.Fixed {
		all[k] = v
	}
	for k, v := range dims {
		if !slices.Contains(f.Dimensions, k) {
			s.errs = append(s.errs, fmt.Errorf("metrics: family %s has no dimension %s", f.Name, k))
		}
		if vs, ok := f.Values[k]; ok && !slices.Contains(vs, v) {
			s.errs = append(s.errs, fmt.Errorf("metrics: family %s: dimension %s is one of %v, not %q", f.Name, k, vs, v))
		}
		if fixed, ok := f.Fixed[k]; ok && fixed != v {
			s.errs = append(s.errs, fmt.Errorf("metrics: family %s: dimension %s is always %q, not %q", f.Name, k, fixed, v))
		}
		all[k] = v
	}
	for _, d := range f.Dimensions {
		if _, ok := all[d]; !ok {
			s.errs = append(s.errs, fmt.Errorf("metrics: family %s: no value for dimension %s", f.Name, d))
		}
	}
	s.set = emf.New(namespace, all)
	return s
}

// Add adds v to the metric called name, in the family's unit for it.
func (s *Set) Add(name string, v float64) {
	m, ok := s.f.Metric(name)
	if !ok {
		s.errs = append(s.errs, fmt.Errorf("metrics: family %s has no metric %s", s.f.Name, name))
		return
	}
	s.set.Add(m.Name, m.Unit, v)
}

// AddDuration adds d in the family's unit for name (milliseconds or
// seconds).
func (s *Set) AddDuration(name string, d time.Duration) {
	m, _ := s.f.Metric(name)
	switch m.Unit {
	case emf.Seconds:
		s.Add(name, d.Seconds())
	default:
		s.Add(name, float64(d.Microseconds())/1000)
	}
}

// WriteTo writes the set as EMF lines ([emf.Set.WriteTo]), or nothing and
// an error when a metric or dimension is not the family's.
func (s *Set) WriteTo(w io.Writer, now time.Time) (int64, error) {
	if err := errors.Join(s.errs...); err != nil {
		return 0, err
	}
	return s.set.WriteTo(w, now)
}

// Find returns the family whose dimensions are exactly dims (in any order)
// and that has a metric called name.
func Find(name string, dims []string) (*Family, bool) {
	sorted := slices.Sorted(slices.Values(dims))
	for _, f := range Families() {
		if _, ok := f.Metric(name); ok && slices.Equal(f.Dimensions, sorted) {
			return f, true
		}
	}
	return nil, false
}
