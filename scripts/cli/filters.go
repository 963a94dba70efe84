package cli

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/pipeline/filter"
	"github.com/tributary/tributary/projections"
)

// generateFilters returns the FilterCriteria of one function's event source
// mapping: the projector's for set's entity types, or the archiver's.
func generateFilters(set *projections.Set, function string, source filter.Source, typeAttr string) (filter.Criteria, error) {
	var (
		fc  filter.Criteria
		err error
	)
	switch function {
	case "projector":
		fc, err = filter.Projector(set.EntityTypes(), source, typeAttr)
	case "archiver":
		fc, err = filter.Archiver(source)
	default:
		return filter.Criteria{}, fmt.Errorf("%w: unknown --function %q: want projector or archiver", errUsage, function)
	}
	if err == nil && len(fc.Filters) > filter.MaxFilters {
		err = fmt.Errorf("%d filters, more than the %d an event source mapping takes", len(fc.Filters), filter.MaxFilters)
	}
	return fc, err
}

func runFilters(_ context.Context, e *Env, args []string) error {
	fs := e.FlagSet("filters", "")
	function := fs.String("function", "projector", "whose event source mapping: projector (the projection set's entity types) or archiver (TTL removals)")
	source := fs.String("source", "streams", "the mapping's source: streams (DynamoDB Streams) or kinesis (the table's Kinesis data stream)")
	var sf schemaFlags
	sf.register(fs, typeFlag)
	format := fs.String("format", "json", "json (for aws lambda update-event-source-mapping --filter-criteria) or yaml (the FilterCriteria of a SAM event, as in template.yaml)")
	indent := fs.Int("indent", 0, "with --format yaml: spaces before FilterCriteria")
	specFile := specFlag(fs)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	e, err := e.withSpec(*specFile)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if *source != "streams" && *source != "kinesis" {
		return fmt.Errorf("%w: unknown --source %q: want streams or kinesis", errUsage, *source)
	}
	schema, err := e.schema(sf)
	if err != nil {
		return err
	}
	if *function == "projector" && e.set() == nil {
		return errNoProjections
	}
	if *indent < 0 {
		return fmt.Errorf("%w: --indent must not be negative", errUsage)
	}
	fc, err := generateFilters(e.set(), *function, filter.Source(*source), schema.TypeAttribute)
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		b, err := marshalJSONLine(fc)
		if err != nil {
			return err
		}
		_, err = e.Stdout.Write(b)
		return err
	case "yaml":
		return fc.WriteYAML(e.Stdout, *indent)
	}
	return fmt.Errorf("%w: unknown --format %q: want json or yaml", errUsage, *format)
}
