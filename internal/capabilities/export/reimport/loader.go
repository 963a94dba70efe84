package reimport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/batchwrite"
	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/pipeline"
)

// loaderAPI is the part of the DynamoDB client the loader uses.
// *dynamodb.Client implements it.
type loaderAPI interface {
	batchwrite.API
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// LoadOptions configures Load.
type LoadOptions struct {
	// Table is the existing table to load into (required).
	Table string
	// Entities selects the entity types to load (as the items spell them,
	// repartition.UnknownEntity for items without one); empty loads them all.
	Entities []string
	// IfNewer writes each item with its own conditional PutItem, only if the
	// table has no such item or an older version of it (by
	// VersionAttribute): a rerun never overwrites newer data. Items without
	// a version are then written only where the table has none.
	IfNewer bool
	// VersionAttribute names the version attribute. Default "version".
	VersionAttribute string
	// Workers is the number of parts loaded at once. Default 4.
	Workers int
	// Takeover takes the load's claim from whatever run holds it (the
	// caller asserts that it is gone).
	Takeover bool
	// Write configures the batch writer: MaxAttempts, MaxWriteUnits,
	// Resume (continue from the checkpoint of an earlier run of the same
	// load: table, output, IfNewer), CheckpointEvery, Progress, Sleep and
	// Now. Load sets its Condition and checkpoint fields itself.
	Write batchwrite.Options
}

// LoadStats are a load's counts: the items of the selected parts, and the
// writer's counts.
type LoadStats struct {
	Items int64
	batchwrite.Stats
}

// checkpointDir is where, below the output, a load keeps its checkpoint
// and its claim: one of each per target table (checkpoint.Objects, job
// checkpoint.JobIDFor("reimport", table); the claim <job>.run.json). The
// claim makes a second load of the output into the same table wait its
// turn: it is refused while the first runs.
const checkpointDir = "_reimport/"

// Load writes the items of a repartition's output into an existing table
// with the batch writer (infra/batchwrite): BatchWriteItem, 25 items a
// request, or with IfNewer one conditional PutItem per item; items DynamoDB
// leaves unprocessed are retried with exponential backoff and full jitter;
// the write rate is held under MaxWriteUnits; progress is checkpointed in
// the output store, so that a rerun with Resume continues where this one
// stopped (rewriting at most the batches in flight, which puts make
// harmless). A claim it fails to release fails it too, named in the error.
func Load(ctx context.Context, client loaderAPI, out *Output, opts LoadOptions) (_ LoadStats, err error) {
	if opts.Table == "" {
		return LoadStats{}, errors.New("reimport: Load needs a table")
	}
	if opts.VersionAttribute == "" {
		opts.VersionAttribute = pipeline.DefaultVersionAttribute
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	desc, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(opts.Table)})
	if err != nil {
		return LoadStats{}, fmt.Errorf("reimport: describing table %s: %w", opts.Table, err)
	}
	var keyAttrs []string
	for _, k := range desc.Table.KeySchema {
		keyAttrs = append(keyAttrs, aws.ToString(k.AttributeName))
	}
	for _, name := range opts.Entities {
		if _, err := out.Entity(name); err != nil {
			return LoadStats{}, err
		}
	}
	var parts []repartition.PartInfo
	for _, m := range out.Entities {
		if len(opts.Entities) == 0 || selected(m, opts.Entities) {
			parts = append(parts, m.Parts...)
		}
	}
	l := &loader{out: out, opts: opts, keyAttrs: keyAttrs}
	for _, p := range parts {
		l.stats.Items += p.Items
	}
	wo := opts.Write
	wo.Checkpoints = checkpoint.NewObjects(out.store, checkpointDir)
	wo.Job = checkpoint.JobIDFor("reimport", opts.Table)
	claimKey := checkpointDir + wo.Job + ".run.json"
	claim, err := objstore.Acquire(ctx, out.store, claimKey,
		objstore.NewOwner(fmt.Sprintf("reimport of %s into table %s", out.store, opts.Table)), opts.Takeover)
	if err != nil {
		return l.stats, fmt.Errorf("reimport: %w, which is loading %s into table %s; if that run is gone, take the claim over (--takeover)", err, out.store, opts.Table)
	}
	defer func() {
		if rerr := claim.Release(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("reimport: releasing the claim %s: %w (a later load may have to take it over: --takeover)", objstore.Name(out.store, claimKey), rerr))
		}
	}()
	wo.About = map[string]string{"table": opts.Table, "output": out.Summary.Fingerprint, "ifNewer": strconv.FormatBool(opts.IfNewer)}
	wo.Condition = nil
	if opts.IfNewer {
		wo.Condition = l.ifNewer
	}
	if l.w, err = batchwrite.New(ctx, client, opts.Table, wo); err != nil {
		return l.stats, fmt.Errorf("reimport: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	next := make(chan repartition.PartInfo)
	var wg sync.WaitGroup
	for range min(opts.Workers, max(len(parts), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				if err := l.part(ctx, p); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for _, p := range parts {
		select {
		case next <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	runErr := context.Cause(ctx)
	cancel(nil)
	// Save the final state whatever happened.
	ws, saveErr := l.w.Close(ctx)
	l.stats.Stats = ws
	if runErr != nil {
		return l.stats, runErr
	}
	return l.stats, saveErr
}

func selected(m *repartition.EntityManifest, names []string) bool {
	for _, n := range names {
		if m.Entity == n || m.Segment == n || m.Segment == "entity="+n || (n == repartition.UnknownEntity && m.Entity == "") {
			return true
		}
	}
	return false
}

type loader struct {
	out      *Output
	opts     LoadOptions
	keyAttrs []string
	w        *batchwrite.Writer
	stats    LoadStats
}

// part checks one part against its manifest entry, then loads it, batch
// by batch, in order, from where the checkpoint says it stopped: no item
// of a part that is not the one the repartition wrote is written.
func (l *loader) part(ctx context.Context, p repartition.PartInfo) error {
	from := l.w.Position(p.Key)
	if from >= p.Items {
		l.w.Resumed(p.Items)
		return nil
	}
	if err := l.out.verifyPart(ctx, p); err != nil {
		return err
	}
	name := objstore.Name(l.out.store, p.Key)
	dec := pipeline.NewExportDecoder(pipeline.Options{Schema: pipeline.Schema{KeyAttributes: l.keyAttrs, VersionAttribute: l.opts.VersionAttribute}})
	b := l.w.Source(p.Key)
	err := l.out.ReadPart(ctx, p, func(line []byte, n int) error {
		if int64(n) <= from {
			if int64(n) == from {
				l.w.Resumed(from)
			}
			return nil
		}
		c, err := dec.Decode(line, name, n)
		if err != nil {
			return export.Corrupt(name, n, err)
		}
		if c.New == nil || len(c.Keys) != len(l.keyAttrs) {
			return &export.FileError{File: name, Line: n, Err: fmt.Errorf("item lacks the table's key attributes %v", l.keyAttrs)}
		}
		return b.Add(ctx, pipeline.ItemKey(c.Keys), c.New, int64(n))
	})
	if err != nil {
		return err
	}
	return b.Flush(ctx)
}

// ifNewer is the condition of IfNewer: write if the item is absent, or
// (for a versioned item) if the stored version is lower.
func (l *loader) ifNewer(item pipeline.Item) batchwrite.Condition {
	c := batchwrite.Condition{Expression: "attribute_not_exists(#k)", Names: map[string]string{"#k": l.keyAttrs[0]}}
	if v, ok := item[l.opts.VersionAttribute].(*types.AttributeValueMemberN); ok {
		c.Names["#v"] = l.opts.VersionAttribute
		c.Values = map[string]types.AttributeValue{":v": v}
		c.Expression = "attribute_not_exists(#k) OR #v < :v"
	}
	return c
}
