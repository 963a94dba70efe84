// Package filter generates the FilterCriteria of the event source mappings
// that feed Tributary's functions, so that Lambda drops, before invoking a
// function and without billing it, exactly the records the function would
// ignore: for a projector, the records of entity types no projection reads;
// for the archiver, everything but TTL removals. The same criteria serve a
// DynamoDB stream and a table's Kinesis data stream (whose records Lambda
// filters on the decoded JSON of their data).
package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Lambda's limits on an event source mapping's FilterCriteria (API
// reference, Filter.Pattern; Lambda quotas: filters per mapping).
const (
	MaxFilters       = 5
	maxPatternLength = 4096
)

// Source is what an event source mapping reads.
type Source string

// The sources a mapping can read.
const (
	Streams Source = "streams" // a DynamoDB stream
	Kinesis Source = "kinesis" // the Kinesis data stream of a table's Kinesis streaming destination
)

// Criteria is an event source mapping's FilterCriteria, in the shape of the
// Lambda API and of `aws lambda update-event-source-mapping
// --filter-criteria`.
type Criteria struct {
	Filters []Pattern `json:"Filters"`
}

// Pattern is one filter.
type Pattern struct {
	Pattern string `json:"Pattern"`
}

// pattern builds one filter pattern; encoding/json sorts map keys, so the
// same input always gives the same bytes.
func pattern(v map[string]any) (Pattern, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return Pattern{}, err
	}
	p := strings.TrimSuffix(b.String(), "\n")
	if len(p) > maxPatternLength {
		return Pattern{}, fmt.Errorf("filter pattern is %d characters, more than the %d Lambda accepts: %.80s…", len(p), maxPatternLength, p)
	}
	return Pattern{Pattern: p}, nil
}

// onSource places a record-level pattern where the source carries the
// DynamoDB record: at the top of a DynamoDB Streams record, under "data" in
// a Kinesis record.
func onSource(source Source, v map[string]any) map[string]any {
	if source == Kinesis {
		return map[string]any{"data": v}
	}
	return v
}

func checkSource(source Source) error {
	if source != Streams && source != Kinesis {
		return fmt.Errorf("unknown source %q: want streams or kinesis", source)
	}
	return nil
}

// Projector keeps the records whose new or old image has one of the entity
// types (held in the attribute typeAttr): inserts and updates of projected
// items, their deletions and TTL expiries (old image only), and items whose
// type changed into or out of a projected one. Everything else is dropped,
// which is exactly what the engine would do with it.
func Projector(entityTypes []string, source Source, typeAttr string) (Criteria, error) {
	if err := checkSource(source); err != nil {
		return Criteria{}, err
	}
	if typeAttr == "" {
		return Criteria{}, fmt.Errorf("empty type attribute")
	}
	types := slices.Clone(entityTypes)
	slices.Sort(types)
	types = slices.Compact(types)
	if len(types) == 0 {
		return Criteria{}, fmt.Errorf("no projection reads any entity type: a filter would drop every record")
	}
	var c Criteria
	for _, image := range []string{"NewImage", "OldImage"} {
		p, err := pattern(onSource(source, map[string]any{
			"dynamodb": map[string]any{image: map[string]any{typeAttr: map[string]any{"S": types}}},
		}))
		if err != nil {
			return Criteria{}, err
		}
		c.Filters = append(c.Filters, p)
	}
	return c, nil
}

// Archiver keeps only the deletions made by DynamoDB's time to live (the
// documented pattern: userIdentity is the DynamoDB service, plus eventName
// REMOVE).
func Archiver(source Source) (Criteria, error) {
	if err := checkSource(source); err != nil {
		return Criteria{}, err
	}
	p, err := pattern(onSource(source, map[string]any{
		"eventName":    []string{"REMOVE"},
		"userIdentity": map[string]any{"type": []string{"Service"}, "principalId": []string{"dynamodb.amazonaws.com"}},
	}))
	if err != nil {
		return Criteria{}, err
	}
	return Criteria{Filters: []Pattern{p}}, nil
}

// WriteYAML writes c as the FilterCriteria property of a SAM DynamoDB or
// Kinesis event, indented by indent spaces.
func (c Criteria) WriteYAML(w io.Writer, indent int) error {
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	fmt.Fprintf(&b, "%sFilterCriteria:\n%s  Filters:\n", pad, pad)
	for _, f := range c.Filters {
		fmt.Fprintf(&b, "%s    - Pattern: '%s'\n", pad, strings.ReplaceAll(f.Pattern, "'", "''"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
