package projector_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/projections/spec"
)

// TestSpecRecordFailures runs the projector's handler, as the stock main builds
// it from a PROJECTIONS_FILE, over records whose evaluation a spec cannot
// finish: an expression that would loop 8.1e11 times on the item, one whose
// arithmetic is not finite. Each record fails at once, permanently, and is
// named in the partial batch response; the record before it applies.
func TestSpecRecordFailures(t *testing.T) {
	for _, tc := range []struct{ name, when, n string }{
		{"over the budget", "let r = 1..n; all(r, {all(r, # > 0)})", "900000"},
		{"not finite", "1 / (n - 7) > 0", "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "spec.yaml")
			src := "version: 1\nprojections:\n  - name: p\n    entityTypes: [T]\n    item: {n: int}\n    when: '" + tc.when + "'\n    counters: [{key: T, values: {items: 1}}]\n"
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			env, err := spec.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := projector.New(ctx, projector.Config{Table: "t"}, env, boltstoretest.Open(t), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			record := func(seq int, n string) string {
				return fmt.Sprintf(`{"eventID":"e%d","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",`+
					`"eventSourceARN":"arn:aws:dynamodb:eu-west-1:111122223333:table/app/stream/2026-11-01T00:00:00.000",`+
					`"dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"T#%d"},"SK":{"S":"A"}},`+
					`"NewImage":{"PK":{"S":"T#%d"},"SK":{"S":"A"},"EntityType":{"S":"T"},"n":{"N":%q},"version":{"N":"1"}},`+
					`"SequenceNumber":"4421600000000000000000000%d","StreamViewType":"NEW_AND_OLD_IMAGES"}}`, seq, seq, seq, n, seq)
			}
			event := `{"Records":[` + record(1, "1") + "," + record(2, tc.n) + "]}"
			done := make(chan struct{})
			var out []byte
			go func() {
				defer close(done)
				out, err = p.Invoke(ctx, []byte(event))
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("the handler is still evaluating after a minute")
			}
			if err != nil || string(out) != `{"batchItemFailures":[{"itemIdentifier":"44216000000000000000000002"}]}` {
				t.Errorf("%s %v", out, err)
			}
			if strings.Contains(string(out), "itemIdentifier\":\"44216000000000000000000001") {
				t.Error("the record before the failure is reported")
			}
		})
	}
}
