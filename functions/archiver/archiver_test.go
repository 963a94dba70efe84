package archiver_test

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/functions/archiver"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

func TestLoadArchiverConfig(t *testing.T) {
	c, err := archiver.LoadConfig(vars(map[string]string{"ARCHIVE_BUCKET": "my-archive", "ARCHIVE_PREFIX": "ttl/app"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Schema.TypeAttribute != "" || c.Schema.TTLAttribute != "" || c.MultipartThreshold != 5<<20 {
		t.Errorf("defaults %+v", c)
	}
	if o := c.S3Options(); o.KMSKeyID != "" || o.MultipartThreshold != 5<<20 {
		t.Errorf("S3 options %+v", o)
	}
	if c.Prefix != "ttl/app" || c.EntityTypes != nil {
		t.Errorf("config %+v (no ENTITY_TYPES: no entity types named)", c)
	}
	c, _ = archiver.LoadConfig(vars(map[string]string{"ARCHIVE_BUCKET": "my-archive", "ENTITY_TYPES": " Comment, Document ,,"}))
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
		_, err := archiver.LoadConfig(vars(tc.env))
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

// vars looks variables up in m, as os.LookupEnv does in a main.
func vars(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestArchiverSchema: the archiver dates items by the TTL attribute its
// environment declares, and refuses a TTL_ATTRIBUTE that names another.
func TestArchiverSchema(t *testing.T) {
	env := &projections.Environment{Schema: pipeline.Schema{TTLAttribute: "expires"}}
	cfg, err := archiver.LoadConfig(vars(map[string]string{"ARCHIVE_DIR": t.TempDir(), "TTL_ATTRIBUTE": "ttl"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archiver.New(cfg, env, objstore.NewDir(t.TempDir()), quiet(), nil); err == nil ||
		!strings.Contains(err.Error(), `TTL_ATTRIBUTE "ttl", but this table's environment reads the expiry from "expires"`) {
		t.Errorf("a TTL_ATTRIBUTE against the environment's: %v", err)
	}
	cfg.Schema.TTLAttribute = ""
	if _, err := archiver.New(cfg, env, objstore.NewDir(t.TempDir()), quiet(), nil); err != nil {
		t.Errorf("the environment's TTL attribute: %v", err)
	}
}
