package cli

import (
	"strings"
	"testing"
)

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
		{[]string{"--indent", "-1"}, "--indent"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		code, _, stderr := runCLI(t, append([]string{"filters"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.inStderr) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tt.args, code, stderr, tt.inStderr)
		}
	}
}
