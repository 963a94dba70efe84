package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/infra/checkpoint"
)

// FuzzLoad: whatever a checkpoint file holds, Load returns the job's
// checkpoint or an error, and a checkpoint it returns can be saved over at
// its revision.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"job":"replay-0123456789abcdef","rev":3,"shards":{"s":{"seq":"1"}},"sources":{"p":25}}`))
	f.Add([]byte(`{"job":"replay-other","rev":1}`))
	f.Add([]byte(`{"job":"replay-0123456789abcdef","rev":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		dir := t.TempDir()
		const job = "replay-0123456789abcdef"
		if err := os.WriteFile(filepath.Join(dir, job+".json"), body, 0o600); err != nil {
			t.Fatal(err)
		}
		st := checkpoint.NewDir(dir)
		cp, err := st.Load(ctx, job)
		if err != nil {
			return
		}
		if cp.Job != job {
			t.Fatalf("Load gave job %q", cp.Job)
		}
		rev := cp.Rev
		if err := st.Save(ctx, cp); err != nil || cp.Rev != rev+1 {
			t.Fatalf("saving over a loaded checkpoint at revision %d: %v (now %d)", rev, err, cp.Rev)
		}
	})
}
