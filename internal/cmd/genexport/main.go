// Command genexport writes a full export (DYNAMODB_JSON) of the
// payments-ledger mix (exportgen.Payments) into a directory, and its
// projection spec beside it: the input of the one-off runs at production
// size that docs/backfill.md reports (the gates' memory at 1 and 10
// million items).
//
//	go run ./internal/cmd/genexport -items 1000000 -dir /tmp/pay1m
//
// writes /tmp/pay1m/AWSDynamoDB/<ExportId>/ and /tmp/pay1m/payments.yaml;
// then, for example,
//
//	tributary backfill --export /tmp/pay1m/AWSDynamoDB/<ExportId> --spec /tmp/pay1m/payments.yaml --store /tmp/pay1m/store --no-sync
//	tributary verify --export /tmp/pay1m/AWSDynamoDB/<ExportId> --spec /tmp/pay1m/payments.yaml --store /tmp/pay1m/store
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/exportgen"
)

func main() {
	items := flag.Int("items", 1_000_000, "how many items")
	seed := flag.Uint64("seed", 1, "the generator's seed (the same seed, the same items)")
	files := flag.Int("files", 8, "how many data files")
	dir := flag.String("dir", "", "the directory to write into (required)")
	flag.Parse()
	if err := run(*dir, *items, *seed, *files); err != nil {
		fmt.Fprintln(os.Stderr, "genexport:", err)
		os.Exit(1)
	}
}

func run(dir string, items int, seed uint64, files int) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(dir).WithoutSync(),
		exportgen.Export{ID: exportgen.ExportID(at, seed), Time: at, Files: files, Table: "payments"}, exportgen.Payments(items, seed))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "payments.yaml"), exportgen.PaymentsSpec, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d items, %d bytes (%d gzipped) in %d data files\n", filepath.Join(dir, res.Dir), res.Items, res.UncompressedBytes, res.CompressedBytes, len(res.DataFiles))
	return nil
}
