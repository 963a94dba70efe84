package exportgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/seed"
)

// CopyDir copies a local directory (a checked-in export fixture, say) into
// a store, keys being the files' paths below dir with forward slashes.
func CopyDir(ctx context.Context, st Store, dir string) error {
	return filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return st.Put(ctx, filepath.ToSlash(rel), b)
	})
}

// SameAsLocal repartitions cfg's export again into the local directory dir
// (cfg.Out is ignored) and reports, as an error, how out differs from it:
// each entity's parts, compared by the manifest's SHA-256 over its parts.
// It checks that a run elsewhere (the Lambda function's, in S3) wrote what
// `tributary repartition` writes.
func SameAsLocal(ctx context.Context, cfg repartition.JobConfig, dir string, out *reimport.Output) error {
	cfg.Out = dir
	job, err := repartition.OpenJob(ctx, cfg, func(l objstore.Location) (objstore.Store, error) {
		if l.IsS3() {
			return nil, fmt.Errorf("exportgen.SameAsLocal: %s is not local", l)
		}
		return objstore.NewDir(l.Dir).WithoutSync(), nil
	}, seed.Environment())
	if err != nil {
		return err
	}
	if _, err := job.Partitioner.Run(ctx, 2, false); err != nil {
		return err
	}
	local, err := reimport.OpenOutput(ctx, objstore.NewDir(dir))
	if err != nil {
		return err
	}
	if len(local.Entities) != len(out.Entities) {
		return fmt.Errorf("%d entities locally, %d in the output", len(local.Entities), len(out.Entities))
	}
	for i, m := range local.Entities {
		if m.Segment != out.Entities[i].Segment || m.PartsSHA256 != out.Entities[i].PartsSHA256 {
			return fmt.Errorf("%s: the output's parts differ from a local run's", m.Segment)
		}
	}
	return nil
}
