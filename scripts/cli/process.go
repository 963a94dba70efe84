package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/archive"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/seed"
)

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runProcess(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "process", "")
	var sf storeFlags
	sf.register(fs)
	var files multiFlag
	fs.Var(&files, "events", "captured Lambda event file (DynamoDB Streams or Kinesis form); repeat for several")
	format := fs.String("format", "", "event form: streams or kinesis (default: guessed from each file)")
	archiveTo := fs.String("archive", "", "also run the archiver's handler: write the events' TTL removals to this directory or s3://bucket/prefix")
	verbose := fs.Bool("v", false, "log each batch as JSON to stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		return fmt.Errorf("%w: no --events files", errUsage)
	}
	st, closeStore, err := sf.open(ctx, true)
	if err != nil {
		return err
	}
	defer closeStore()
	logw := io.Discard
	if *verbose {
		logw = e.stderr
	}
	log := slog.New(slog.NewJSONHandler(logw, nil))
	engine := projections.New(st, projections.Config{Logger: log}, seed.All()...)
	cfg := pipeline.Config{Logger: log}
	var archiver *archive.Handler
	if *archiveTo != "" {
		putter, prefix, err := openArchive(ctx, *archiveTo)
		if err != nil {
			return err
		}
		archiver = archive.New(putter, archive.Options{Prefix: prefix, Logger: log})
	}
	failed := false
	for _, name := range files {
		data, err := readInput(e, name)
		if err != nil {
			return err
		}
		f := *format
		if f == "" {
			f = guessFormat(data)
		}
		var p *pipeline.Processor
		switch f {
		case "streams":
			p = pipeline.NewStreamsProcessor(engine, cfg)
		case "kinesis":
			p = pipeline.NewKinesisProcessor(engine, cfg)
		default:
			return fmt.Errorf("%w: %s: process takes Lambda events (streams or kinesis), not %s", errUsage, name, f)
		}
		// Exactly the handler the Lambda runs: bytes in, partial batch response out.
		res, err := p.Process(ctx, data)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		resp, err := p.Response(res)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: %d records, %d applied, %d failed; response %s\n", name, res.Records, res.Applied, len(res.Failed), resp)
		for _, f := range res.Failed {
			fmt.Fprintf(e.stderr, "%s: record %d (seq %s): %v\n", name, f.Index, f.SequenceNumber, f.Err)
		}
		if res.Report != "" {
			failed = true
		}
		if archiver != nil {
			ap := pipeline.NewStreamsProcessor(archiver, cfg)
			if f == "kinesis" {
				ap = pipeline.NewKinesisProcessor(archiver, cfg)
			}
			ares, err := ap.Process(ctx, data)
			if err != nil {
				return fmt.Errorf("%s: archiver: %w", name, err)
			}
			aresp, err := ap.Response(ares)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s: archiver: response %s\n", name, aresp)
			if ares.Report != "" {
				failed = true
			}
		}
	}
	s := engine.Stats()
	fmt.Fprintf(e.stdout, "engine: %d changes, %d item states written in %d transactions, %d stale, %d superseded, %.0f write units\n",
		s.Changes, s.Items, s.Transactions, s.Stale, s.Superseded, s.WriteUnits)
	if archiver != nil {
		a := archiver.Stats()
		fmt.Fprintf(e.stdout, "archiver: %d TTL removals archived in %d objects (%d failed writes), %d other changes ignored\n",
			a.Archived, a.Objects, a.FailedPuts, a.Ignored)
	}
	if failed {
		return errFailed
	}
	return nil
}

// openArchive returns where the archiver writes: a directory, or an S3
// bucket and prefix (a custom endpoint from AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL means a local server, addressed by path).
func openArchive(ctx context.Context, spec string) (archive.Putter, string, error) {
	return openArchiveLocation(ctx, spec, "--archive", false)
}
