package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

// Lambda's limits on an event source mapping's FilterCriteria (API
// reference, Filter.Pattern; Lambda quotas: filters per mapping).
const (
	maxFilters       = 5
	maxPatternLength = 4096
)

// filterCriteria is an event source mapping's FilterCriteria, in the shape
// of the Lambda API and of `aws lambda update-event-source-mapping
// --filter-criteria`.
type filterCriteria struct {
	Filters []filterPattern `json:"Filters"`
}

type filterPattern struct {
	Pattern string `json:"Pattern"`
}

// pattern builds one filter pattern; encoding/json sorts map keys, so the
// same input always gives the same bytes.
func pattern(v map[string]any) (filterPattern, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return filterPattern{}, err
	}
	p := strings.TrimSuffix(b.String(), "\n")
	if len(p) > maxPatternLength {
		return filterPattern{}, fmt.Errorf("filter pattern is %d characters, more than the %d Lambda accepts: %.80s…", len(p), maxPatternLength, p)
	}
	return filterPattern{Pattern: p}, nil
}

// onSource places a record-level pattern where the source carries the
// DynamoDB record: at the top of a DynamoDB Streams record, under "data" in
// a Kinesis record from a table's Kinesis streaming destination (Lambda
// filters on the decoded JSON of data).
func onSource(source string, v map[string]any) map[string]any {
	if source == "kinesis" {
		return map[string]any{"data": v}
	}
	return v
}

// projectedTypes returns the entity types the projections read, sorted,
// without duplicates.
func projectedTypes(projs []projections.Projection) []string {
	var types []string
	for _, p := range projs {
		types = append(types, p.EntityTypes()...)
	}
	slices.Sort(types)
	return slices.Compact(types)
}

// projectorFilters keeps the records whose new or old image has an entity
// type some projection reads: inserts and updates of projected items, their
// deletions and TTL expiries (old image only), and items whose type changed
// into or out of a projected one. Everything else is dropped by Lambda
// before it invokes the function (and is not billed), which is exactly what
// the engine would do with it: an item no projection reads costs nothing.
func projectorFilters(projs []projections.Projection, source, typeAttr string) (filterCriteria, error) {
	types := projectedTypes(projs)
	if len(types) == 0 {
		return filterCriteria{}, fmt.Errorf("no projection reads any entity type: a filter would drop every record")
	}
	var fc filterCriteria
	for _, image := range []string{"NewImage", "OldImage"} {
		p, err := pattern(onSource(source, map[string]any{
			"dynamodb": map[string]any{image: map[string]any{typeAttr: map[string]any{"S": types}}},
		}))
		if err != nil {
			return filterCriteria{}, err
		}
		fc.Filters = append(fc.Filters, p)
	}
	return fc, nil
}

// archiverFilters keeps only the deletions made by DynamoDB's time to live
// (the documented pattern: userIdentity is the DynamoDB service, plus
// eventName REMOVE).
func archiverFilters(source string) (filterCriteria, error) {
	p, err := pattern(onSource(source, map[string]any{
		"eventName":    []string{"REMOVE"},
		"userIdentity": map[string]any{"type": []string{"Service"}, "principalId": []string{"dynamodb.amazonaws.com"}},
	}))
	if err != nil {
		return filterCriteria{}, err
	}
	return filterCriteria{Filters: []filterPattern{p}}, nil
}

// generateFilters returns the FilterCriteria of one function's event source
// mapping.
func generateFilters(function, source, typeAttr string) (filterCriteria, error) {
	var (
		fc  filterCriteria
		err error
	)
	switch function {
	case "projector":
		fc, err = projectorFilters(seed.All(), source, typeAttr)
	case "archiver":
		fc, err = archiverFilters(source)
	default:
		return filterCriteria{}, fmt.Errorf("%w: unknown --function %q: want projector or archiver", errUsage, function)
	}
	if err == nil && len(fc.Filters) > maxFilters {
		err = fmt.Errorf("%d filters, more than the %d an event source mapping takes", len(fc.Filters), maxFilters)
	}
	return fc, err
}

// writeFiltersYAML writes fc as the FilterCriteria property of a SAM
// DynamoDB or Kinesis event, indented by indent spaces: the form
// template.yaml holds.
func writeFiltersYAML(w io.Writer, fc filterCriteria, indent int) error {
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	fmt.Fprintf(&b, "%sFilterCriteria:\n%s  Filters:\n", pad, pad)
	for _, f := range fc.Filters {
		fmt.Fprintf(&b, "%s    - Pattern: '%s'\n", pad, strings.ReplaceAll(f.Pattern, "'", "''"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func runFilters(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "filters", "")
	function := fs.String("function", "projector", "whose event source mapping: projector (the registered projections' entity types) or archiver (TTL removals)")
	source := fs.String("source", "streams", "the mapping's source: streams (DynamoDB Streams) or kinesis (the table's Kinesis data stream)")
	typeAttr := fs.String("type-attribute", "EntityType", "the item attribute holding the entity type (the functions' TYPE_ATTRIBUTE)")
	format := fs.String("format", "json", "json (for aws lambda update-event-source-mapping --filter-criteria) or yaml (the FilterCriteria of a SAM event, as in template.yaml)")
	indent := fs.Int("indent", 0, "with --format yaml: spaces before FilterCriteria")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if *source != "streams" && *source != "kinesis" {
		return fmt.Errorf("%w: unknown --source %q: want streams or kinesis", errUsage, *source)
	}
	if *typeAttr == "" {
		return fmt.Errorf("%w: --type-attribute is empty", errUsage)
	}
	if *indent < 0 {
		return fmt.Errorf("%w: --indent must not be negative", errUsage)
	}
	fc, err := generateFilters(*function, *source, *typeAttr)
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(fc)
	case "yaml":
		return writeFiltersYAML(e.stdout, fc, *indent)
	}
	return fmt.Errorf("%w: unknown --format %q: want json or yaml", errUsage, *format)
}
