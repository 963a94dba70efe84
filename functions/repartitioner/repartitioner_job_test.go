package repartitioner

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// TestRepartitionEventJob pins the job fields a state machine's event may
// carry, by their JSON names, over the function's configuration; fields the
// event leaves out keep the configured values.
func TestRepartitionEventJob(t *testing.T) {
	h := &Handler{env: &projections.Environment{}, cfg: Config{Job: JobConfig{
		Export: "s3://b/configured", Out: "s3://b/out", Schema: pipeline.Schema{TypeAttribute: "EntityType", VersionAttribute: "version",
			KeyAttributes: []string{"PK", "SK"}}, Compression: string(repartition.Gzip), Level: 5, MaxPartBytes: 1 << 20,
	}}}
	if got, err := h.job(Event{Action: "plan"}); err != nil || !reflect.DeepEqual(got, h.cfg.Job.job()) {
		t.Errorf("an event without job fields: %+v, %v; want the configuration %+v", got, err, h.cfg.Job)
	}
	var ev Event
	if err := json.Unmarshal([]byte(`{"action":"plan","export":"s3://b/e","incrementals":["s3://b/i"],"out":"s3://b/o2",
		"typeAttribute":"kind","versionAttribute":"rev","keyAttributes":["Id"],"transform":"t","compression":"zstd",
		"level":3,"maxPartBytes":2048,"skipMd5":true,"allowMissingManifest":true,"executionId":"arn:x","takeover":true}`), &ev); err != nil {
		t.Fatal(err)
	}
	want := repartition.JobConfig{
		Export: "s3://b/e", Incrementals: []string{"s3://b/i"}, Out: "s3://b/o2",
		Schema: pipeline.Schema{TypeAttribute: "kind", VersionAttribute: "rev", KeyAttributes: []string{"Id"}}, Transform: "t",
		Compression: string(repartition.Zstd), Level: 3, MaxPartBytes: 2048, SkipMD5: true, AllowMissingManifest: true,
		ExecutionID: "arn:x", Takeover: true,
	}
	if got, err := h.job(ev); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("job\n got %+v, %v\nwant %+v", got, err, want)
	}

	// An environment that declares its attributes refuses an event that
	// names others.
	h.env = &projections.Environment{Schema: pipeline.Schema{TypeAttribute: "EntityType", KeyAttributes: []string{"pk", "sk"}}}
	if _, err := h.job(ev); err == nil || !strings.Contains(err.Error(), `the event's typeAttribute "kind"`) || !strings.Contains(err.Error(), "the event's keyAttributes Id") {
		t.Errorf("an event against the environment's attributes: %v", err)
	}
}
