package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

// fakeProjection reads the given entity types.
type fakeProjection struct{ types []string }

func (fakeProjection) Name() string            { return "fake" }
func (p fakeProjection) EntityTypes() []string { return p.types }
func (fakeProjection) Contribute(pipeline.Item) (projections.Contribution, error) {
	return projections.Contribution{}, nil
}

func TestFiltersCommand(t *testing.T) {
	const types = `["CartItem","Comment","Document","Match","Order","Player"]`
	tests := []struct {
		args []string
		want string
	}{
		{nil, `{"Filters":[` +
			`{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"EntityType\":{\"S\":` + esc(types) + `}}}}"},` +
			`{"Pattern":"{\"dynamodb\":{\"OldImage\":{\"EntityType\":{\"S\":` + esc(types) + `}}}}"}]}` + "\n"},
		{[]string{"--source", "kinesis", "--type-attribute", "kind"}, `{"Filters":[` +
			`{"Pattern":"{\"data\":{\"dynamodb\":{\"NewImage\":{\"kind\":{\"S\":` + esc(types) + `}}}}}"},` +
			`{"Pattern":"{\"data\":{\"dynamodb\":{\"OldImage\":{\"kind\":{\"S\":` + esc(types) + `}}}}}"}]}` + "\n"},
		{[]string{"--function", "archiver"}, `{"Filters":[{"Pattern":"{\"eventName\":[\"REMOVE\"],` +
			`\"userIdentity\":{\"principalId\":[\"dynamodb.amazonaws.com\"],\"type\":[\"Service\"]}}"}]}` + "\n"},
		{[]string{"--function", "archiver", "--format", "yaml", "--indent", "2"}, "  FilterCriteria:\n    Filters:\n" +
			`      - Pattern: '{"eventName":["REMOVE"],"userIdentity":{"principalId":["dynamodb.amazonaws.com"],"type":["Service"]}}'` + "\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, stderr := runCLI(t, append([]string{"filters"}, tt.args...)...)
			if code != 0 || out != tt.want {
				t.Errorf("exit %d, stderr %q\n got: %s\nwant: %s", code, stderr, out, tt.want)
			}
		})
	}
}

func esc(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }

func TestFiltersCommandUsage(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		inStderr string
	}{
		{[]string{"--function", "nope"}, `unknown --function "nope"`},
		{[]string{"--source", "sqs"}, `unknown --source "sqs"`},
		{[]string{"--format", "toml"}, `unknown --format "toml"`},
		{[]string{"--type-attribute", ""}, "--type-attribute is empty"},
		{[]string{"--indent", "-1"}, "--indent"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		code, _, stderr := runCLI(t, append([]string{"filters"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.inStderr) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tt.args, code, stderr, tt.inStderr)
		}
	}
}

// TestProjectorFiltersMatchEngine: a record passes the filter exactly when
// one of its images has an entity type some projection reads, the same
// records the engine would act on.
func TestProjectorFiltersMatchEngine(t *testing.T) {
	fc, err := projectorFilters(seed.All(), "streams", "EntityType")
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
func matchesAny(t *testing.T, fc filterCriteria, record map[string]any) bool {
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
	if _, err := projectorFilters(nil, "streams", "EntityType"); err == nil || !strings.Contains(err.Error(), "no projection") {
		t.Errorf("no projections: %v", err)
	}
	var many []string
	for i := range 400 {
		many = append(many, strings.Repeat("T", 8)+string(rune('a'+i%26))+strings.Repeat("x", i%7)+string(rune('A'+i/26)))
	}
	_, err := projectorFilters([]projections.Projection{fakeProjection{many}}, "streams", "EntityType")
	if err == nil || !strings.Contains(err.Error(), "more than the 4096") {
		t.Errorf("oversized pattern: %v", err)
	}
	fc, err := projectorFilters([]projections.Projection{fakeProjection{[]string{"B", "A", "B"}}}, "streams", "EntityType")
	if err != nil || !strings.Contains(fc.Filters[0].Pattern, `["A","B"]`) {
		t.Errorf("types not sorted and deduplicated: %+v %v", fc, err)
	}
}
