package filter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline/filter"
)

// TestProjectorFiltersMatchEngine: a record passes the filter exactly when
// one of its images has an entity type some projection reads, the same
// records the engine would act on.
func TestProjectorFiltersMatchEngine(t *testing.T) {
	fc, err := filter.Projector(seed.Set().EntityTypes(), filter.Streams, "EntityType")
	if err != nil {
		t.Fatal(err)
	}
	projected := map[string]bool{}
	for _, p := range seed.All() {
		for _, typ := range p.EntityTypes() {
			projected[typ] = true
		}
	}
	for _, tt := range []struct {
		newType, oldType string
	}{
		{"Order", ""}, {"", "Order"}, {"Order", "Order"}, {"User", "Order"}, {"Order", "User"},
		{"User", ""}, {"", "User"}, {"User", "Workspace"}, {"", ""}, {"Comment", ""}, {"", "Comment"},
	} {
		record := map[string]any{}
		images := map[string]any{}
		if tt.newType != "" {
			images["NewImage"] = map[string]any{"EntityType": map[string]any{"S": tt.newType}}
		}
		if tt.oldType != "" {
			images["OldImage"] = map[string]any{"EntityType": map[string]any{"S": tt.oldType}}
		}
		record["dynamodb"] = images
		want := projected[tt.newType] || projected[tt.oldType]
		if got := matchesAny(t, fc, record); got != want {
			t.Errorf("new %q old %q: passes %v, want %v", tt.newType, tt.oldType, got, want)
		}
	}
}

// matchesAny evaluates the subset of Lambda's filter syntax the generated
// patterns use: nested objects, and arrays of exact string values.
func matchesAny(t *testing.T, fc filter.Criteria, record map[string]any) bool {
	t.Helper()
	for _, f := range fc.Filters {
		var p map[string]any
		if err := json.Unmarshal([]byte(f.Pattern), &p); err != nil {
			t.Fatal(err)
		}
		if matches(p, record) {
			return true
		}
	}
	return false
}

func matches(pattern, value map[string]any) bool {
	for k, pv := range pattern {
		v, ok := value[k]
		if !ok {
			return false
		}
		switch pv := pv.(type) {
		case map[string]any:
			vm, ok := v.(map[string]any)
			if !ok || !matches(pv, vm) {
				return false
			}
		case []any:
			found := false
			for _, e := range pv {
				found = found || e == v
			}
			if !found {
				return false
			}
		}
	}
	return true
}

func TestProjectorFiltersLimits(t *testing.T) {
	if _, err := filter.Projector(nil, filter.Streams, "EntityType"); err == nil || !strings.Contains(err.Error(), "no projection") {
		t.Errorf("no projections: %v", err)
	}
	var many []string
	for i := range 400 {
		many = append(many, strings.Repeat("T", 8)+string(rune('a'+i%26))+strings.Repeat("x", i%7)+string(rune('A'+i/26)))
	}
	_, err := filter.Projector(many, filter.Streams, "EntityType")
	if err == nil || !strings.Contains(err.Error(), "more than the 4096") {
		t.Errorf("oversized pattern: %v", err)
	}
	fc, err := filter.Projector([]string{"B", "A", "B"}, filter.Streams, "EntityType")
	if err != nil || !strings.Contains(fc.Filters[0].Pattern, `["A","B"]`) {
		t.Errorf("types not sorted and deduplicated: %+v %v", fc, err)
	}
}
