package archive

import (
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(map[string]string{"ARCHIVE_BUCKET": "my-archive", "ARCHIVE_PREFIX": "ttl/app"}))
	if err != nil || c.Validate() != nil {
		t.Fatalf("%v %v", err, c.Validate())
	}
	if c.TypeAttribute != "EntityType" || c.TTLAttribute != "ttl" || c.MultipartThreshold != 5<<20 {
		t.Errorf("defaults %+v", c)
	}
	if o := c.S3Options(); o.KMSKeyID != "" || o.MultipartThreshold != 5<<20 {
		t.Errorf("S3 options %+v", o)
	}
	if o := c.HandlerOptions(nil); o.Prefix != "ttl/app" || o.TTLAttribute != "ttl" {
		t.Errorf("handler options %+v", o)
	}

	if pc := c.PipelineConfig(nil); pc.EntityTypes != nil {
		t.Errorf("metrics name entity types %v without ENTITY_TYPES", pc.EntityTypes)
	}
	c, _ = ConfigFromEnv(env(map[string]string{"ARCHIVE_BUCKET": "my-archive", "ENTITY_TYPES": " Comment, Document ,,"}))
	if pc := c.PipelineConfig(nil); strings.Join(pc.EntityTypes, "|") != "Comment|Document" {
		t.Errorf("ENTITY_TYPES: metrics name %q", pc.EntityTypes)
	}

	if _, err := ConfigFromEnv(env(map[string]string{"ARCHIVE_MULTIPART_THRESHOLD": "5MB"})); err == nil {
		t.Error("a malformed threshold was accepted")
	}

	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"neither", nil, []string{"set ARCHIVE_BUCKET (S3) or ARCHIVE_DIR"}},
		{"both", map[string]string{"ARCHIVE_BUCKET": "abc", "ARCHIVE_DIR": "/tmp"}, []string{"only one"}},
		{"bad bucket", map[string]string{"ARCHIVE_BUCKET": "my*bucket"}, []string{"ARCHIVE_BUCKET"}},
		{"kms without bucket", map[string]string{"ARCHIVE_DIR": "/tmp", "ARCHIVE_KMS_KEY_ID": "k"}, []string{"ARCHIVE_KMS_KEY_ID"}},
		{"prefix slash", map[string]string{"ARCHIVE_DIR": "/tmp", "ARCHIVE_PREFIX": "a/"}, []string{"ARCHIVE_PREFIX"}},
		{"prefix dots", map[string]string{"ARCHIVE_DIR": "/tmp", "ARCHIVE_PREFIX": "a/../b"}, []string{"ARCHIVE_PREFIX"}},
		{"prefix partition", map[string]string{"ARCHIVE_DIR": "/tmp", "ARCHIVE_PREFIX": "x/entity=A"}, []string{"looks like a partition"}},
		{"small threshold", map[string]string{"ARCHIVE_DIR": "/tmp", "ARCHIVE_MULTIPART_THRESHOLD": "1024"}, []string{"below S3's smallest part"}},
		{"all at once", map[string]string{"ARCHIVE_BUCKET": "x", "ARCHIVE_PREFIX": "/a"}, []string{"ARCHIVE_BUCKET", "ARCHIVE_PREFIX"}},
	} {
		c, _ := ConfigFromEnv(env(tc.env))
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q: %v", tc.name, w, err)
			}
		}
	}
}
