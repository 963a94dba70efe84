package function_test

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/functions/function"
)

func TestLoadArchiverConfig(t *testing.T) {
	c, err := function.LoadArchiverConfig(env(map[string]string{"ARCHIVE_BUCKET": "my-archive", "ARCHIVE_PREFIX": "ttl/app"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.TypeAttribute != "EntityType" || c.TTLAttribute != "ttl" || c.MultipartThreshold != 5<<20 {
		t.Errorf("defaults %+v", c)
	}
	if o := c.S3Options(); o.KMSKeyID != "" || o.MultipartThreshold != 5<<20 {
		t.Errorf("S3 options %+v", o)
	}
	if c.Prefix != "ttl/app" || c.EntityTypes != nil {
		t.Errorf("config %+v (no ENTITY_TYPES: no entity types named)", c)
	}
	c, _ = function.LoadArchiverConfig(env(map[string]string{"ARCHIVE_BUCKET": "my-archive", "ENTITY_TYPES": " Comment, Document ,,"}))
	if strings.Join(c.EntityTypes, "|") != "Comment|Document" {
		t.Errorf("ENTITY_TYPES: %q", c.EntityTypes)
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
		{"malformed threshold", map[string]string{"ARCHIVE_DIR": "/tmp", "ARCHIVE_MULTIPART_THRESHOLD": "5MB"}, []string{"not a number of bytes"}},
		{"all at once", map[string]string{"ARCHIVE_BUCKET": "x", "ARCHIVE_PREFIX": "/a"}, []string{"ARCHIVE_BUCKET", "ARCHIVE_PREFIX"}},
	} {
		_, err := function.LoadArchiverConfig(env(tc.env))
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
