package export_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/export"
	"github.com/tributary/tributary/infra/export/exportgen"
	"github.com/tributary/tributary/internal/sim"
)

// BenchmarkRepartition splits a generated 64 MB export (four data files)
// with every core, for `make bench`; MB/s is of uncompressed input. The
// 2 GB comparison with DuckDB and the machine's limit is
// scripts/repartition-bench/bench.sh (docs/exports.md).
func BenchmarkRepartition(b *testing.B) {
	ctx := context.Background()
	h, err := sim.Workload{Seed: 42, Changes: 20_000}.Run()
	if err != nil {
		b.Fatal(err)
	}
	src := export.NewDir(b.TempDir()).WithoutSync()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(ctx, src, exportgen.Export{ID: exportgen.ExportID(at, 1), Time: at, Files: 4},
		exportgen.Synthetic(h.Table.Items(), 64<<20, 1))
	if err != nil {
		b.Fatal(err)
	}
	e, err := export.OpenExport(ctx, src, res.Dir, export.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []export.Compression{export.Gzip, export.Zstd, export.None} {
		b.Run(string(c), func(b *testing.B) {
			b.SetBytes(res.UncompressedBytes)
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
