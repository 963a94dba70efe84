package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// The per-entity-type metrics name only the types the handler reads, and
// count every other value under one "(other)": whoever writes items cannot
// create custom metrics (each dimension value is one) nor values longer
// than CloudWatch allows.
func TestMetricDimensionsBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"Records":[`)
	for i := 0; i < 60; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		typ := fmt.Sprintf("Attacker%03d", i)
		switch {
		case i%3 == 0:
			typ = "Order"
		case i == 1:
			typ = strings.Repeat("X", 5000)
		}
		fmt.Fprintf(&b, `{"eventID":"e%d","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"ApproximateCreationDateTime":1796033700,"Keys":{"PK":{"S":"P%d"}},"NewImage":{"PK":{"S":"P%d"},"EntityType":{"S":"%s"}},"SequenceNumber":"%d","StreamViewType":"NEW_AND_OLD_IMAGES"}}`, i, i, i, typ, 1000+i)
	}
	b.WriteString(`]}`)
	for _, tc := range []struct {
		name    string
		handler pipeline.BatchHandler
		types   []string
	}{
		{"HandlerTypes", &typed{types: []string{"Order"}}, nil},
		{"ConfiguredTypes", &needy{}, []string{"Order"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var metrics bytes.Buffer
			cfg := quietConfig()
			cfg.Metrics = &metrics
			cfg.EntityTypes = tc.types
			if _, err := pipeline.NewStreamsProcessor(tc.handler, cfg).Process(context.Background(), b.Bytes()); err != nil {
				t.Fatal(err)
			}
			records := map[string]float64{}
			for _, line := range strings.Split(strings.TrimSpace(metrics.String()), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatal(err)
				}
				if et, ok := m["EntityType"].(string); ok {
					records[et] += m["Records"].(float64)
				}
			}
			if len(records) != 2 || records["Order"] != 20 || records["(other)"] != 40 {
				t.Fatalf("records per EntityType dimension: %v; want Order 20, (other) 40", records)
			}
		})
	}
}
