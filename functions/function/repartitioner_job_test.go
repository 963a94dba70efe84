package function

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tributary/tributary/pipeline/export/repartition"
)

// TestRepartitionEventJob pins the job fields a state machine's event may
// carry, by their JSON names, over the function's configuration; fields the
// event leaves out keep the configured values.
func TestRepartitionEventJob(t *testing.T) {
	h := &RepartitionerHandler{cfg: RepartitionerConfig{Job: repartition.JobConfig{
		Export: "s3://b/configured", Out: "s3://b/out", TypeAttribute: "EntityType", VersionAttribute: "version",
		KeyAttributes: []string{"PK", "SK"}, Compression: repartition.Gzip, Level: 5, MaxPartBytes: 1 << 20,
	}}}
	if got := h.job(RepartitionEvent{Action: "plan"}); !reflect.DeepEqual(got, h.cfg.Job) {
		t.Errorf("an event without job fields: %+v, want the configuration %+v", got, h.cfg.Job)
	}
	var ev RepartitionEvent
	if err := json.Unmarshal([]byte(`{"action":"plan","export":"s3://b/e","incrementals":["s3://b/i"],"out":"s3://b/o2",
		"typeAttribute":"kind","versionAttribute":"rev","keyAttributes":["Id"],"transform":"t","compression":"zstd",
		"level":3,"maxPartBytes":2048,"skipMd5":true,"allowMissingManifest":true,"executionId":"arn:x","takeover":true}`), &ev); err != nil {
		t.Fatal(err)
	}
	want := repartition.JobConfig{
		Export: "s3://b/e", Incrementals: []string{"s3://b/i"}, Out: "s3://b/o2",
		TypeAttribute: "kind", VersionAttribute: "rev", KeyAttributes: []string{"Id"}, Transform: "t",
		Compression: repartition.Zstd, Level: 3, MaxPartBytes: 2048, SkipMD5: true, AllowMissingManifest: true,
		ExecutionID: "arn:x", Takeover: true,
	}
	if got := h.job(ev); !reflect.DeepEqual(got, want) {
		t.Errorf("job\n got %+v\nwant %+v", got, want)
	}
}
