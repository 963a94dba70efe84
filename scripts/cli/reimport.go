package cli

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/batchwrite"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
)

// runReimport is `tributary reimport`: load a repartition's output back
// into DynamoDB, three ways.
func runReimport(ctx context.Context, e *Env, args []string) error {
	fs := e.FlagSet("reimport", "")
	from := fs.String("from", "", "a repartition's output: a directory or s3://bucket/prefix (required)")
	var entities stringList
	fs.Var(&entities, "entity", "entity type to load (repeatable; default all; "+repartition.UnknownEntity+" for items without one)")
	importTable := fs.String("import-table", "", "ImportTable: create this new table from the entity's parts in S3 (one --entity)")
	bulkPut := fs.Bool("bulk-put", false, "StartBulkPutItems: server-side load of the entity's parts in S3 into the existing --table (one --entity)")
	table := fs.String("table", "", "existing table to load into (BatchWriteItem loader, or the --bulk-put target)")
	endpoint := fs.String("endpoint", "", "DynamoDB endpoint URL, e.g. a local AWS-protocol server")
	hashKey := fs.String("hash-key", "", "--import-table: the new table's partition key (default the first of the table's key attributes)")
	rangeKey := fs.String("range-key", "", "--import-table: the new table's sort key (default the second of the table's key attributes; none if it has only one)")
	keyTypes := fs.String("key-types", "S,S", "--import-table: the key attributes' types, S, N or B")
	noWait := fs.Bool("no-wait", false, "--import-table, --bulk-put: start the operation and return")
	poll := fs.Duration("poll", 10*time.Second, "--import-table, --bulk-put: how often to report progress")
	maxWCU := fs.Float64("max-wcu", 0, "write units per second at most (loader: 0 is unlimited; --bulk-put: at least 1024, 0 is DynamoDB's default)")
	ifNewer := fs.Bool("if-newer", false, "loader: write each item with a conditional PutItem, only over an older version (never overwrites newer data; 25× the requests)")
	var sf schemaFlags
	sf.register(fs, versionFlag|keysFlag)
	workers := fs.Int("workers", max(4, 2*runtime.NumCPU()), "loader: parts loaded at once")
	resume := fs.Bool("resume", false, "loader: continue from the checkpoint a stopped run left in the output (under _reimport/)")
	takeover := fs.Bool("takeover", false, "loader: take the load over from the run that holds it: say so only when that run is gone")
	kmsKey := fs.String("kms-key-id", "", "--bulk-put: encrypt the report with SSE-KMS under this key")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{*importTable != "", *bulkPut, *table != "" && !*bulkPut} {
		if on {
			modes++
		}
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case *from == "":
		return fmt.Errorf("%w: --from is required", errUsage)
	case modes != 1:
		return fmt.Errorf("%w: give one of --import-table NEW_TABLE, --table NAME, or --bulk-put --table NAME", errUsage)
	case *bulkPut && *table == "":
		return fmt.Errorf("%w: --bulk-put needs --table", errUsage)
	case (*importTable != "" || *bulkPut) && len(entities) != 1:
		return fmt.Errorf("%w: --import-table and --bulk-put load one entity type: give exactly one --entity", errUsage)
	case *bulkPut && *ifNewer:
		return fmt.Errorf("%w: --bulk-put --if-newer: the per-item condition of StartBulkPutItems is written into its input lines in a format this version does not produce yet; use --table NAME --if-newer", errUsage)
	case *bulkPut && *maxWCU != 0 && *maxWCU < 1024:
		return fmt.Errorf("%w: --bulk-put takes --max-wcu of at least 1024", errUsage)
	case *maxWCU < 0:
		return fmt.Errorf("%w: --max-wcu must not be negative", errUsage)
	}
	schema, err := e.schema(sf)
	if err != nil {
		return err
	}
	if *hashKey == "" {
		*hashKey = schema.KeyAttributes[0]
		if *rangeKey == "" && len(schema.KeyAttributes) > 1 {
			*rangeKey = schema.KeyAttributes[1]
		}
	}
	loc, err := objstore.Parse(*from)
	if err != nil {
		return fmt.Errorf("%w: --from: %v", errUsage, err)
	}
	xf := exportFlags{kmsKey: *kmsKey}
	st, err := xf.store(ctx, loc)
	if err != nil {
		return err
	}
	out, err := reimport.OpenOutput(ctx, st)
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("loading AWS configuration: %w", err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if *endpoint != "" {
			o.BaseEndpoint = aws.String(*endpoint)
		}
	})
	switch {
	case *importTable != "":
		ks := reimport.KeySchema{HashKey: *hashKey, RangeKey: *rangeKey}
		kt := strings.Split(*keyTypes, ",")
		ks.HashType = types.ScalarAttributeType(kt[0])
		if len(kt) > 1 {
			ks.RangeType = types.ScalarAttributeType(kt[1])
		}
		return reimportTable(ctx, e, client, out, reimport.ImportOptions{Table: *importTable, Entity: entities[0], Key: ks}, *noWait, *poll)
	case *bulkPut:
		return reimportBulk(ctx, e, client, out, reimport.BulkPutOptions{Table: *table, Entity: entities[0], MaxWriteUnits: int64(*maxWCU)}, *noWait, *poll)
	}
	return reimportLoad(ctx, e, client, out, reimport.LoadOptions{
		Table: *table, Entities: entities, IfNewer: *ifNewer, VersionAttribute: schema.VersionAttribute, Workers: *workers, Takeover: *takeover,
		Write: batchwrite.Options{MaxWriteUnits: *maxWCU, Resume: *resume},
	})
}

func reimportTable(ctx context.Context, e *Env, client *dynamodb.Client, out *reimport.Output, opts reimport.ImportOptions, noWait bool, poll time.Duration) error {
	m, err := out.Entity(opts.Entity)
	if err != nil {
		return err
	}
	d, err := reimport.StartImport(ctx, client, out, opts)
	if err != nil {
		return err
	}
	arn := aws.ToString(d.ImportArn)
	fmt.Fprintf(e.Stdout, "ImportTable %s: %s (%d items in %d parts, %s) into new table %s\n", arn, m.Segment, m.ItemCount, len(m.Parts), m.Compression, opts.Table)
	if noWait {
		return nil
	}
	start := time.Now()
	d, err = reimport.WaitImport(ctx, client, arn, m.ItemCount, poll, func(d *types.ImportTableDescription) {
		fmt.Fprintf(e.Stdout, "  %s after %s: %d of %d items processed, %d imported, %d errors\n",
			d.ImportStatus, time.Since(start).Round(time.Second), d.ProcessedItemCount, m.ItemCount, d.ImportedItemCount, d.ErrorCount)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "imported %d items into %s\n", d.ImportedItemCount, opts.Table)
	return nil
}

func reimportBulk(ctx context.Context, e *Env, client *dynamodb.Client, out *reimport.Output, opts reimport.BulkPutOptions, noWait bool, poll time.Duration) error {
	m, err := out.Entity(opts.Entity)
	if err != nil {
		return err
	}
	d, err := reimport.StartBulkPut(ctx, client, out, opts)
	if err != nil {
		return err
	}
	arn := aws.ToString(d.BulkOperationArn)
	fmt.Fprintf(e.Stdout, "StartBulkPutItems %s: %s (%d items) into %s\n", arn, m.Segment, m.ItemCount, opts.Table)
	if noWait {
		return nil
	}
	start := time.Now()
	d, err = reimport.WaitBulkPut(ctx, client, arn, poll, func(d *types.BulkOperationDescription) {
		pct := ""
		if tb := aws.ToInt64(d.TotalInputBytes); tb > 0 {
			pct = fmt.Sprintf(" (%.0f%% of the input)", 100*float64(aws.ToInt64(d.ProcessedInputBytes))/float64(tb))
		}
		fmt.Fprintf(e.Stdout, "  %s after %s: %d of %d items processed%s, %d failed\n",
			d.BulkOperationStatus, time.Since(start).Round(time.Second), d.ProcessedItemCount, m.ItemCount, pct, d.FailedItemCount)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "bulk put %d items into %s\n", d.ProcessedItemCount, opts.Table)
	return nil
}

func reimportLoad(ctx context.Context, e *Env, client *dynamodb.Client, out *reimport.Output, opts reimport.LoadOptions) error {
	var total int64
	for _, m := range out.Entities {
		if len(opts.Entities) == 0 || contains(opts.Entities, m.Entity) || (m.Entity == "" && contains(opts.Entities, repartition.UnknownEntity)) {
			total += m.ItemCount
		}
	}
	prog := newByteProgress(e.Stderr, "reimport", total)
	prog.unit = "WCU"
	opts.Write.Progress = func(items int64, units float64) { prog.add(int64(units), items) }
	mode := "BatchWriteItem"
	if opts.IfNewer {
		mode = "conditional PutItem (--if-newer)"
	}
	fmt.Fprintf(e.Stdout, "loading %d items from %s into %s with %s\n", total, out.Store(), opts.Table, mode)
	start := time.Now()
	s, err := reimport.Load(ctx, client, out, opts)
	prog.done()
	took := time.Since(start)
	fmt.Fprintf(e.Stdout, "%d written, %d skipped (the table had them in this or a newer version), %d already done by an earlier run; %.0f write units in %d requests, %d unprocessed items retried; %.1fs (%.0f items/s)\n",
		s.Written, s.Skipped, s.Resumed, s.Units, s.Requests, s.Unprocessed, took.Seconds(), float64(s.Written+s.Skipped)/max(took.Seconds(), 1e-3))
	if err != nil {
		return fmt.Errorf("%w (progress is checkpointed: rerun with --resume)", err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
