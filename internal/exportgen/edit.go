package exportgen

import (
	"encoding/json"
	"testing"
)

// EditSummary returns a manifest-summary.json's bytes with the fields of
// edit set (a field set to nil is left out): for the tests of what a
// reader makes of a summary an export could carry, or a damaged one.
func EditSummary(t testing.TB, summary []byte, edit map[string]any) []byte {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(summary, &s); err != nil {
		t.Fatalf("a manifest-summary.json to edit: %v", err)
	}
	for k, v := range edit {
		if v == nil {
			delete(s, k)
		} else {
			s[k] = v
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
