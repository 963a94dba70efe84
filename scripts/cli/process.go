package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
)

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runProcess(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("process", "")
	var sf storeFlags
	sf.register(fs)
	var files multiFlag
	fs.Var(&files, "events", "captured Lambda event file (DynamoDB Streams or Kinesis form); repeat for several")
	format := fs.String("format", "", "event form: streams or kinesis (default: told from each file's structure: its records' eventSource)")
	archiveTo := fs.String("archive", "", "also run the archiver's handler: write the events' TTL removals to this directory or s3://bucket/prefix")
	verbose := fs.Bool("v", false, "log each batch as JSON to stderr")
	var pf projectionFlags
	pf.register(fs, typeFlag|versionFlag|ttlFlag)
	var only subsetFlag
	only.register(fs)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	e, decode, err := e.withProjections(pf)
	if err != nil {
		return err
	}
	set, err := only.set(e)
	if err != nil {
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
	defer func() { err = errors.Join(err, closeStore()) }()
	log := e.engineLog(*verbose)
	eng, err := openEngine(ctx, st, sf.String(), set, engine.Config{Logger: log})
	if err != nil {
		return err
	}
	cfg := pipeline.Config{Logger: log, Options: decode}
	var archiver *archive.Handler
	if *archiveTo != "" {
		putter, prefix, err := openArchive(ctx, *archiveTo)
		if err != nil {
			return err
		}
		archiver = archive.New(putter, archive.Options{Prefix: prefix, TTLAttribute: decode.TTLAttribute, Logger: log})
	}
	failed := false
	for _, name := range files {
		f, data, report, err := processEvent(ctx, e, eng, cfg, name, *format, "no projection reads their entity type")
		if err != nil {
			return err
		}
		failed = failed || report
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
			fmt.Fprintf(e.Stdout, "%s: archiver: response %s\n", name, aresp)
			if ares.Report != "" {
				failed = true
			}
		}
	}
	s := eng.Stats()
	fmt.Fprintf(e.Stdout, "engine: %d changes, %d item states written in %d transactions, %d stale, %d superseded, %.0f write units\n",
		s.Changes, s.Items, s.Transactions, s.Stale, s.Superseded, s.WriteUnits)
	if archiver != nil {
		a := archiver.Stats()
		fmt.Fprintf(e.Stdout, "archiver: %d TTL removals archived in %d objects (%d failed writes), %d other changes ignored\n",
			a.Archived, a.Objects, a.FailedPuts, a.Ignored)
	}
	if failed {
		return errFailed
	}
	return nil
}

// processEvent runs the captured Lambda event in file name (in format,
// "" to tell it from the file) through exactly the handler a Lambda
// function runs over h (bytes in, partial batch response out), prints
// what it did (skipped says why records were skipped) and the records
// that failed, and returns the event's form and bytes and whether its
// response reports failures.
func processEvent(ctx context.Context, e *Env, h pipeline.BatchHandler, cfg pipeline.Config, name, format, skipped string) (string, []byte, bool, error) {
	f, data, err := readLambdaEvent(e, name, format)
	if err != nil {
		return "", nil, false, err
	}
	p := pipeline.NewStreamsProcessor(h, cfg)
	if f == "kinesis" {
		p = pipeline.NewKinesisProcessor(h, cfg)
	}
	res, err := p.Process(ctx, data)
	if err != nil {
		return "", nil, false, fmt.Errorf("%s: %w", name, err)
	}
	resp, err := p.Response(res)
	if err != nil {
		return "", nil, false, err
	}
	fmt.Fprintf(e.Stdout, "%s: %d records, %d applied, %d skipped (%s), %d failed; response %s\n", name, res.Records, res.Applied, res.Skipped, skipped, len(res.Failed), resp)
	for _, f := range res.Failed {
		fmt.Fprintf(e.Stderr, "%s: %s\n", name, quote.Printable(f.String()))
	}
	return f, data, res.Report != "", nil
}

// readLambdaEvent reads a captured Lambda event, gzip-compressed or not, in
// format ("": told from its structure), up to Lambda's payload limit.
func readLambdaEvent(e *Env, name, format string) (_ string, _ []byte, err error) {
	in, closeIn, err := openInput(e, name)
	if err != nil {
		return "", nil, err
	}
	defer func() { err = errors.Join(err, closeIn()) }()
	var data []byte
	if format == "" {
		if format, data, err = detectInput(name, in); err != nil {
			return "", nil, err
		}
	}
	if format != "streams" && format != "kinesis" {
		return "", nil, fmt.Errorf("%w: %s: process takes Lambda events (streams or kinesis), not %s", errUsage, name, format)
	}
	if data == nil {
		data, err = readPayload(name, format, in)
	} else if len(data) > pipeline.MaxLambdaPayloadBytes {
		err = fmt.Errorf("%s: more than %d bytes: not a %s payload (%s)", name, pipeline.MaxLambdaPayloadBytes, format, payloadLimits[format].why)
	}
	return format, data, err
}

// openArchive returns where the archiver writes: a directory, or an S3
// bucket and prefix (a custom endpoint from AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL means a local server, addressed by path).
func openArchive(ctx context.Context, spec string) (archive.Putter, string, error) {
	return openArchiveLocation(ctx, spec, "--archive", false)
}
