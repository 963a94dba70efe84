package export_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/tributary/tributary/pipeline/export"
)

// BenchmarkRepartition splits a generated 64 MB export (four data files)
// with every core, for `make bench`; MB/s is of uncompressed input. The
// 2 GB comparison with DuckDB and the machine's limit is
// scripts/repartition-bench/bench.sh (docs/exports.md).
func BenchmarkRepartition(b *testing.B) {
	ctx := context.Background()
	e, size := generatedExport(b, 42, 20_000, 64<<20, 4)
	for _, c := range []export.Compression{export.Gzip, export.Zstd, export.None} {
		b.Run(string(c), func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				out := export.NewDir(b.TempDir()).WithoutSync()
				r, err := export.NewRepartitioner(e, nil, out, export.Options{Compression: c})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Run(ctx, runtime.NumCPU(), false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
