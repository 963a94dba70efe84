package reimport_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/tributary/tributary/internal/awstest"
)

// The loader's integration tests watch its requests on the wire. The loader
// uses a real *dynamodb.Client whose HTTP client (an awstest.Wire) sits
// between the SDK and the AWS-protocol test server (moto): it records the
// JSON bodies of every request and response, and for selected requests
// rewrites the server's real response, or answers with a real
// DynamoDB-protocol error, to produce what DynamoDB does under load and moto
// never does (BatchWriteItem's UnprocessedItems, throttling). Nothing below
// the HTTP layer is faked. infra/batchwrite's tests use the same wire.

// wantLines returns the sorted expected lines of the given segments (all
// of them if none are given).
func wantLines(lines map[string][]string, segs ...string) []string {
	var out []string
	for seg, ls := range lines {
		if len(segs) == 0 || slices.Contains(segs, seg) {
			out = append(out, ls...)
		}
	}
	sort.Strings(out)
	return out
}

// newTable creates a PK/SK table on the test server, deleted after the test.
func newTable(t *testing.T) string {
	t.Helper()
	name := awstest.UniqueName(t, "export")
	awstest.CreateTable(t.Context(), t, awstest.DynamoDB(t), name, false)
	return name
}
