package pipeline_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// typed is a batch handler that reads some entity types.
type typed struct {
	types   []string
	handled int
}

func (h *typed) HandleBatch(_ context.Context, changes []pipeline.Change) error {
	h.handled += len(changes)
	return nil
}
func (h *typed) EntityTypes() []string { return h.types }

// Records no handler reads (no entity type, or one nothing is registered
// for) are counted as skipped, not applied, in the result and the metrics.
func TestSkippedRecordsCounted(t *testing.T) {
	event := streamsEvent(4)
	event = bytes.Replace(event, []byte(`"EntityType":{"S":"Order"},`), nil, 1)                                   // record 0: no type
	event = bytes.Replace(event, []byte(`"EntityType":{"S":"Order"}`), []byte(`"EntityType":{"S":"Invoice"}`), 1) // record 1: unread type
	var metrics bytes.Buffer
	cfg := quietConfig()
	cfg.Metrics = &metrics
	h := &typed{types: []string{"Order"}}
	res, err := pipeline.NewStreamsProcessor(h, cfg).Process(context.Background(), event)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 4 || res.Applied != 2 || res.Skipped != 2 || len(res.Failed) != 0 || h.handled != 4 {
		t.Fatalf("result %+v, handler saw %d; want 2 applied and 2 skipped", res, h.handled)
	}
	m := metrics.String()
	for _, want := range []string{`"EntityType":"Order","Function":"local","Failed":0,"Processed":2,"Records":2,"Skipped":0`, `"EntityType":"(none)","Function":"local","Failed":0,"Processed":0,"Records":1,"Skipped":1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, m)
		}
	}
}
