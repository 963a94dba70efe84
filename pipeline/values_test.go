package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary/tributary/pipeline"
)

// Errors and logs quote item values cut short: a 200,000-digit number or a
// 200 KB string is named by its start and its size, not copied whole.
func TestMessagesCutValues(t *testing.T) {
	const huge = 200000
	digits := strings.Repeat("7", huge)
	long := strings.Repeat("X", huge)
	tests := []struct {
		name      string
		old, new  string // replaced in a one-record Streams event
		wantInErr string
	}{
		{"BadNumber", `"total":{"N":"0.50"}`, `"total":{"N":"` + digits + `x"}`, "(200001 bytes)"},
		{"UnknownEventName", `"eventName":"INSERT"`, `"eventName":"` + long + `"`, "(200000 bytes)"},
		{"BadSequenceNumber", `"SequenceNumber":"1000"`, `"SequenceNumber":"` + long + `"`, "(200000 bytes)"},
		{"UnknownAttributeType", `"status":{"S":"PENDING"}`, `"status":{"` + long + `":"PENDING"}`, "(200000 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := bytes.Replace(streamsEvent(1), []byte(tt.old), []byte(tt.new), 1)
			if bytes.Equal(event, streamsEvent(1)) {
				t.Fatalf("%s not in the event", tt.old)
			}
			_, err := pipeline.DecodeStreamsEvent(event, pipeline.Options{})
			var de *pipeline.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			msg := de.Records[0].Error()
			if len(msg) > 512 || !strings.Contains(msg, tt.wantInErr) {
				t.Fatalf("message is %d bytes, want under 512 and naming the size %s: %.300s", len(msg), tt.wantInErr, msg)
			}
		})
	}
}

func TestUnknownTypeErrorCutsTheType(t *testing.T) {
	m := pipeline.NewMux[string]()
	m.Policy = pipeline.FailUnknown
	m.Register("Order", "orders")
	event := bytes.Replace(streamsEvent(1), []byte(`"EntityType":{"S":"Order"}`), []byte(`"EntityType":{"S":"`+strings.Repeat("T", 200000)+`"}`), 1)
	changes, err := pipeline.DecodeStreamsEvent(event, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := changes[0]
	_, err = m.Lookup(context.Background(), &c, c.New, c.NewType)
	var ute *pipeline.UnknownTypeError
	if !errors.As(err, &ute) {
		t.Fatalf("err = %v, want an *UnknownTypeError", err)
	}
	if msg := err.Error(); len(msg) > 256 || !strings.Contains(msg, "(200000 bytes)") {
		t.Fatalf("message is %d bytes: %.300s", len(msg), msg)
	}
}

// The processor's log lines stay short whatever the entity type and the
// error of the failed record.
func TestFailureLogCutsValues(t *testing.T) {
	long := strings.Repeat("T", 200000)
	event := bytes.Replace(streamsEvent(2), []byte(`"EntityType":{"S":"Order"}`), []byte(`"EntityType":{"S":"`+long+`"}`), 1)
	var logs bytes.Buffer
	h := eachChange(func(context.Context, pipeline.Change) error { return pipeline.Permanent(errors.New("rejected")) })
	p := pipeline.NewStreamsProcessor(h, pipeline.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if _, err := p.Process(context.Background(), event); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if len(line) > 1024 {
			t.Errorf("log line of %d bytes: %.200s", len(line), line)
		}
	}
	if !strings.Contains(logs.String(), "(200000 bytes)") {
		t.Errorf("the failure log does not name the entity type's size:\n%.500s", logs.String())
	}
}
