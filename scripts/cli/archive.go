package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/capabilities/archive/lake"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
)

// runArchive is `tributary archive ls|cat`: list and read a TTL archive.
func runArchive(ctx context.Context, e *Env, args []string) error {
	usage := func() {
		fmt.Fprintf(e.Stderr, `Usage: %[1]s archive <ls|cat> --from DIR|s3://bucket/prefix [--entity TYPE] [--date YYYY-MM-DD]
       %[1]s archive compact --from DIR|s3://bucket/prefix [--older-than DURATION] [--keep]

  ls       list the archive's objects, JSON lines and compacted: key (below --from), items, bytes
  cat      print the archived lines, {"Item":...,"Archive":{...}}, object by object
  compact  turn each partition's settled JSON-lines objects into Parquet under compacted/

Run '%[1]s archive <ls|cat|compact> -h' for the flags.
`, e.Name)
	}
	if len(args) == 0 {
		usage()
		return fmt.Errorf("%w: want a subcommand, ls, cat or compact", errUsage)
	}
	switch args[0] {
	case "ls":
		return archiveLs(ctx, e, args[1:])
	case "cat":
		return archiveCat(ctx, e, args[1:])
	case "compact":
		return archiveCompact(ctx, e, args[1:])
	case "-h", "-help", "--help", "help":
		usage()
		return flag.ErrHelp
	}
	usage()
	return fmt.Errorf("%w: unknown subcommand %q, want ls, cat or compact", errUsage, args[0])
}

// archiveCompact is `tributary archive compact`: the compaction function's
// job, run by hand.
func archiveCompact(ctx context.Context, e *Env, args []string) error {
	fs := e.FlagSet("archive compact", "")
	from := fs.String("from", "", "the archive: a directory, or s3://bucket/prefix (required)")
	olderThan := fs.Duration("older-than", lake.DefaultOlderThan, "compact the objects last written at least this long ago (0s: every object); more than the archiver's retries may take")
	keep := fs.Bool("keep", false, "keep the JSON-lines objects once compacted (readers leave them out; the JSON-lines table still shows them)")
	columns := fs.String("columns", "", "typed columns of item attributes, attribute:type (string, double, boolean), comma-separated, e.g. status:string,amount:double")
	var sf schemaFlags
	sf.register(fs, typeFlag|keysFlag|ttlFlag)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case *from == "":
		return fmt.Errorf("%w: --from is required", errUsage)
	case *olderThan < 0:
		return fmt.Errorf("%w: --older-than %s is negative", errUsage, *olderThan)
	}
	typed, err := lake.ParseTypedColumns(*columns)
	if err != nil {
		return fmt.Errorf("%w: --columns: %v", errUsage, err)
	}
	schema, err := e.schema(sf)
	if err != nil {
		return err
	}
	st, prefix, err := openArchiveLocation(ctx, *from, "--from", true)
	if err != nil {
		return err
	}
	res, err := lake.Compact(ctx, st, lake.Options{
		Prefix: prefix, OlderThan: *olderThan, Keep: *keep, Schema: schema, Typed: typed,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	fmt.Fprintf(e.Stdout, "%d partition(s) with settled objects, %d object(s) younger than %s left\n", res.Partitions, res.Young, *olderThan)
	fmt.Fprintf(e.Stdout, "compacted %d object(s), %d bytes, into %d Parquet object(s), %d rows, %d bytes; %d line(s) held already\n",
		res.Inputs, res.InputBytes, len(res.Written), res.Rows, res.OutputBytes, res.Duplicates)
	if *keep {
		fmt.Fprintf(e.Stdout, "kept %d JSON-lines object(s)\n", res.Kept)
	} else {
		fmt.Fprintf(e.Stdout, "removed %d JSON-lines object(s)\n", res.Removed)
	}
	for _, p := range res.Busy {
		fmt.Fprintf(e.Stderr, "%s: %s is being compacted by another run: left for the next\n", e.Name, p)
	}
	return err
}

// selection holds the flags that pick archive objects.
type selection struct {
	from, entity, date, typeAttr string
}

func (s *selection) register(fs *flag.FlagSet) {
	fs.StringVar(&s.from, "from", "", "the archive: a directory, or s3://bucket/prefix (required)")
	fs.StringVar(&s.entity, "entity", "", "only this entity type (as the items spell it; "+archive.UnknownEntity+" for items without one)")
	fs.StringVar(&s.date, "date", "", "only this date partition, YYYY-MM-DD (the items' ttl date, or removal date)")
	fs.StringVar(&s.typeAttr, "type-attribute", "", "the item attribute holding the entity type (the archiver's TYPE_ATTRIBUTE; default the projections', or EntityType): with --entity, it tells apart the types of a partition named by a hash")
}

// open checks the flags and opens the archive.
func (s *selection) open(ctx context.Context, e *Env) (*archive.Archive, archive.Filter, error) {
	if s.from == "" {
		return nil, archive.Filter{}, fmt.Errorf("%w: --from is required", errUsage)
	}
	schema, err := e.schema(schemaFlags{given: pipeline.Schema{TypeAttribute: s.typeAttr}})
	if err != nil {
		return nil, archive.Filter{}, err
	}
	f := archive.Filter{Entity: s.entity, Date: s.date, TypeAttribute: schema.TypeAttribute}
	if err := f.Validate(); err != nil {
		return nil, f, fmt.Errorf("%w: --date: %v", errUsage, err)
	}
	st, prefix, err := openArchiveLocation(ctx, s.from, "--from", true)
	if err != nil {
		return nil, f, err
	}
	return archive.Open(st, prefix).WithCompacted(lake.Decode), f, nil
}

// openArchiveLocation opens an archive's location (flag names it in
// errors): a directory, or an S3 bucket, with the archive's prefix
// apart, as the archiver writes it. A directory to read must exist.
func openArchiveLocation(ctx context.Context, spec, flag string, read bool) (objstore.Store, string, error) {
	loc, err := objstore.Parse(spec)
	if err == nil {
		err = archive.ValidatePrefix(loc.Prefix)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", errUsage, flag, err)
	}
	if !loc.IsS3() && read {
		if st, err := os.Stat(loc.Dir); err != nil {
			return nil, "", err
		} else if !st.IsDir() {
			return nil, "", fmt.Errorf("%s %s is not a directory", flag, loc.Dir)
		}
	}
	prefix := loc.Prefix
	loc.Prefix = ""
	st, err := openLocation(ctx, loc, "", objstore.S3Options{}, false)
	return st, prefix, err
}

// objects lists the selected objects, warning about keys that are not
// archive objects.
func (s *selection) objects(ctx context.Context, e *Env, a *archive.Archive, f archive.Filter) ([]archive.ObjectInfo, error) {
	objs, other, err := a.Objects(ctx, f)
	if err != nil {
		return nil, err
	}
	warnOther(e, other)
	noteCovered(e, a)
	return objs, nil
}

// noteCovered says how many JSON-lines objects were left out because a
// compacted object holds their lines.
func noteCovered(e *Env, a *archive.Archive) {
	if n := a.Covered(); n > 0 {
		fmt.Fprintf(e.Stderr, "%s: left out %d JSON-lines object(s) whose lines a compacted object holds (kept, or not yet removed)\n", e.Name, n)
	}
}

func warnOther(e *Env, other []string) {
	if len(other) > 0 {
		fmt.Fprintf(e.Stderr, "%s: skipped %d key(s) that are not archive objects, e.g. %s\n", e.Name, len(other), quote.Printable(other[0]))
	}
}

// warnSkipped says how many lines of other entity types the reads left out
// of partitions whose hashed names stand for the selected type too.
func warnSkipped(e *Env, a *archive.Archive) {
	if n := a.Skipped(); n > 0 {
		fmt.Fprintf(e.Stderr, "tributary: left out %d line(s) of other entity types whose shortened names are the selected type's (an archive written before names kept the whole hash)\n", n)
	}
}

// selectObjects parses the flags of a command that reads archive objects
// and lists the objects they select.
func selectObjects(ctx context.Context, e *Env, name string, args []string) (*archive.Archive, []archive.ObjectInfo, error) {
	fs := e.FlagSet(name, "")
	var s selection
	s.register(fs)
	if err := ParseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	a, f, err := s.open(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	objs, err := s.objects(ctx, e, a, f)
	if err != nil {
		return nil, nil, err
	}
	return a, objs, nil
}

func archiveLs(ctx context.Context, e *Env, args []string) error {
	a, objs, err := selectObjects(ctx, e, "archive ls", args)
	if err != nil {
		return err
	}
	type row struct {
		key          string
		items, bytes int64
	}
	rows := make([]row, 0, len(objs)+1)
	var total row
	for _, o := range objs {
		n := int64(0)
		if err := a.ReadObject(ctx, o, func(int, []byte) error { n++; return nil }); err != nil {
			return err
		}
		rows = append(rows, row{o.Rel, n, o.Size})
		total.items += n
		total.bytes += o.Size
	}
	total.key = fmt.Sprintf("total: %d object", len(objs))
	if len(objs) != 1 {
		total.key += "s"
	}
	rows = append(rows, total)
	warnSkipped(e, a)
	// Keys left-aligned, counts right-aligned.
	wk, wi, wb := len("KEY"), len("ITEMS"), len("BYTES")
	for _, r := range rows {
		wk = max(wk, len(r.key))
		wi = max(wi, len(fmt.Sprint(r.items)))
		wb = max(wb, len(fmt.Sprint(r.bytes)))
	}
	out := bufio.NewWriter(e.Stdout)
	fmt.Fprintf(out, "%-*s  %*s  %*s\n", wk, "KEY", wi, "ITEMS", wb, "BYTES")
	for _, r := range rows {
		fmt.Fprintf(out, "%-*s  %*d  %*d\n", wk, r.key, wi, r.items, wb, r.bytes)
	}
	return out.Flush()
}

func archiveCat(ctx context.Context, e *Env, args []string) (err error) {
	a, objs, err := selectObjects(ctx, e, "archive cat", args)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(e.Stdout)
	defer flush(out, &err)
	for _, o := range objs {
		err := a.ReadObject(ctx, o, func(_ int, line []byte) error {
			if _, err := out.Write(line); err != nil {
				return err
			}
			return out.WriteByte('\n')
		})
		if err != nil {
			return err
		}
	}
	warnSkipped(e, a)
	return nil
}

// runRestore is `tributary restore`: load archived items back into a table,
// or into an export-shaped directory.
func runRestore(ctx context.Context, e *Env, args []string) error {
	fs := e.FlagSet("restore", "")
	var s selection
	s.register(fs)
	table := fs.String("table", "", "put the items into this DynamoDB table (BatchWriteItem)")
	endpoint := fs.String("endpoint", "", "DynamoDB endpoint URL for --table, e.g. a local server (default: AWS)")
	to := fs.String("to", "", "write the items into this directory (or s3://bucket/prefix) as a DynamoDB export (DYNAMODB_JSON), instead of a table")
	var sf schemaFlags
	sf.register(fs, keysFlag)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case (*table == "") == (*to == ""):
		return fmt.Errorf("%w: give exactly one of --table and --to", errUsage)
	case *endpoint != "" && *table == "":
		return fmt.Errorf("%w: --endpoint goes with --table", errUsage)
	}
	// The archived items are whole items: their keys are read by the
	// environment's key attributes (or --key-attributes where it declares
	// none), as decode and verify read an export's.
	schema, err := e.schema(sf)
	if err != nil {
		return err
	}
	a, f, err := s.open(ctx, e)
	if err != nil {
		return err
	}
	sel, err := a.Select(ctx, f, schema.KeyAttributes)
	if err != nil {
		return err
	}
	warnOther(e, sel.Other())
	noteCovered(e, a)
	warnSkipped(e, a)
	if sel.Items() == 0 {
		return errors.New("no archived items match")
	}
	superseded := ""
	if n := sel.Lines() - sel.Items(); n > 0 {
		superseded = fmt.Sprintf(" (%d older version(s) superseded)", n)
	}
	if *to != "" {
		loc, err := objstore.Parse(*to)
		if err != nil {
			return fmt.Errorf("%w: --to: %v", errUsage, err)
		}
		out, err := openLocation(ctx, loc, "", objstore.S3Options{}, false)
		if err != nil {
			return err
		}
		progress := restoreProgress(e, sel)
		res, err := archive.RestoreExport(ctx, sel, out, archive.ExportOptions{Progress: progress.addItems})
		progress.done()
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "wrote %d items from %d objects%s into %s\n", res.Items, len(sel.Objects()), superseded, res.Dir)
		return nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if *endpoint != "" {
			o.BaseEndpoint = endpoint
		}
	})
	progress := restoreProgress(e, sel)
	n, err := archive.RestoreTable(ctx, sel, client, *table, archive.TableOptions{Progress: progress.addItems})
	progress.done()
	if err != nil {
		return fmt.Errorf("after %d items: %w", n, err)
	}
	fmt.Fprintf(e.Stdout, "restored %d items from %d objects%s into table %s\n", n, len(sel.Objects()), superseded, *table)
	return nil
}

// restoreProgress is restore's progress line on stderr: the items of the
// selection restored, their rate and an estimate, as the other long
// commands write theirs.
func restoreProgress(e *Env, sel *archive.Selection) *byteProgress {
	p := newByteProgress(e.Stderr, "restore", int64(sel.Items()))
	p.unit = "items"
	return p
}
