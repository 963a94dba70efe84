package entry

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tributary/tributary/pipeline"
)

// FilterTypes reads FILTER_ENTITY_TYPES with lookup: the entity types the
// function's event source mapping filter passes, or nil when the variable
// is unset. A variable set but naming none is an error, saying what sets
// it (hint).
func FilterTypes(lookup func(string) (string, bool), hint string) ([]string, error) {
	v, ok := lookup("FILTER_ENTITY_TYPES")
	if !ok {
		return nil, nil
	}
	types := List(v)
	if len(types) == 0 {
		return nil, errors.New("FILTER_ENTITY_TYPES is set but names no entity type: the event source mapping's filter would pass no record" + hint)
	}
	return types, nil
}

// Permanent reads PERMANENT_FAILURES: report (the default) or skip.
func Permanent(getenv func(string) string) (pipeline.PermanentPolicy, error) {
	switch v := getenv("PERMANENT_FAILURES"); v {
	case "", "report":
		return pipeline.ReportPermanent, nil
	case "skip":
		return pipeline.SkipPermanent, nil
	default:
		return pipeline.ReportPermanent, fmt.Errorf("PERMANENT_FAILURES %q: want report or skip", v)
	}
}

// Count reads the variable name as a whole number, at least 1, of unit:
// 0 when it is unset.
func Count(getenv func(string) string, name string, unit time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q: want a whole number, at least 1", name, v)
	}
	return time.Duration(n) * unit, nil
}
