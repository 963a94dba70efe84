package repartition_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
)

// BenchmarkRepartition splits a generated 64 MB export (four data files)
// with every core, for `make bench`; MB/s is of uncompressed input. The
// 2 GB comparison with DuckDB and the machine's limit is
// scripts/repartition-bench/bench.sh (docs/exports.md).
func BenchmarkRepartition(b *testing.B) {
	ctx := context.Background()
	e, size := exportgen.Generated(b, 42, 20_000, 64<<20, 4)
	for _, c := range []repartition.Compression{repartition.Gzip, repartition.Zstd, repartition.None} {
		b.Run(string(c), func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				out := objstore.NewDir(b.TempDir()).WithoutSync()
				r, err := repartition.NewRepartitioner(e, nil, out, repartition.Options{Compression: c})
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
