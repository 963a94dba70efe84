package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/filter"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

const projectionsUsage = `show [--store DIR | --table NAME] | adopt (--store DIR | --table NAME) [--projection NAME]... | check FILE

  check  loads a projection spec (docs/projections-spec.md), reports every problem
         in it at once, or prints the entity types, aggregates and rows it
         implies, the event source mappings' filter criteria and the SAM
         template parameters that deploy it

  show   prints the binary's projection set: each projection's name, fingerprint
         and entity types; with a store, also the set its marker records, and
         whether an engine of this set may write to it
  adopt  records this set (or the --projection subset) in the store's marker,
         replacing whatever it records: for a store that holds aggregates but no
         marker (written before markers existed), or one whose projection changed
         its definition without changing what it contributes. Adopting a store
         another set built leaves its aggregates wrong: rebuild it instead
         (backfill from an export, then the stream; or replay --rebuild-into
         when the stream holds the table's whole history).`

func runProjections(ctx context.Context, e *Env, args []string) (err error) {
	sub := "show"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := e.FlagSet("projections", projectionsUsage)
	var sf storeFlags
	sf.register(fs)
	var only multiFlag
	if sub == "adopt" {
		fs.Var(&only, "projection", "adopt for only this projection (repeat for several): a store of a subset")
	}
	var specFile *string
	if sub != "check" {
		specFile = specFlag(fs)
	}
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if sub == "check" {
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: check takes one spec file", errUsage)
		}
		return checkSpec(e, fs.Arg(0))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	e, err = e.withSpec(*specFile)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(e.Stdout)
	defer flush(out, &err)
	switch sub {
	case "show":
		printSet(out, e.set())
		if sf.dir == "" && sf.table == "" {
			return nil
		}
		st, closeStore, err := sf.open(ctx, false)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, closeStore()) }()
		m, err := engine.ReadMarker(ctx, st)
		if err != nil {
			return err
		}
		if m == nil {
			empty, err := engine.Empty(ctx, st)
			if err != nil {
				return err
			}
			if empty {
				fmt.Fprintf(out, "\n%s is empty and unmarked: the first engine to write to it marks it for its set\n", sf.String())
				return nil
			}
			fmt.Fprintf(out, "\n%s holds aggregates but records no projection set: no engine may write to it until it is adopted (%s projections adopt) or rebuilt\n", sf.String(), e.Name)
			return errFailed
		}
		fmt.Fprintf(out, "\n%s was built by (marked %s):\n", sf.String(), m.Since.UTC().Format(time.RFC3339))
		for _, id := range m.Set {
			fmt.Fprintf(out, "  %s\n", quote.Printable(id.String()))
		}
		if sameIDs(m.Set, e.set().IDs()) {
			fmt.Fprintln(out, "this set: an engine of it may write to the store")
			return nil
		}
		fmt.Fprintf(out, "another set: %s\n", quote.Printable((&engine.SetMismatchError{Table: m, Engine: e.set().IDs()}).Error()))
		return errFailed
	case "adopt":
		set, err := e.set().Select(only...)
		if err != nil {
			return fmt.Errorf("%w: --projection: %v", errUsage, err)
		}
		st, closeStore, err := sf.open(ctx, false)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, closeStore()) }()
		old, err := engine.Adopt(ctx, st, set)
		if err != nil {
			return fmt.Errorf("%s: %w", sf.String(), err)
		}
		if old != nil {
			fmt.Fprintf(out, "%s: replaced the marker of %s\n", sf.String(), quote.Printable(formatSet(old.Set)))
		}
		fmt.Fprintf(out, "%s: marked for %s\n", sf.String(), quote.Printable(set.String()))
		return nil
	}
	return fmt.Errorf("%w: unknown subcommand %q: want show, adopt or check", errUsage, sub)
}

func printSet(out *bufio.Writer, set *projections.Set) {
	fmt.Fprintln(out, "projection set:")
	byName := map[string]projections.Projection{}
	for _, p := range set.Projections() {
		byName[p.Name()] = p
	}
	for _, id := range set.IDs() {
		fmt.Fprintf(out, "  %-40s reads %s\n", quote.Printable(id.String()), printableList(byName[id.Name].EntityTypes(), ", "))
	}
}

func formatSet(ids []projections.ProjectionID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	return strings.Join(parts, ", ")
}

// checkSpec is `tributary projections check FILE`.
func checkSpec(e *Env, file string) (err error) {
	sp, err := spec.LoadFile(file)
	if err != nil {
		return err
	}
	ts := sp.DescribeTransforms()
	ps := sp.SpecProjections()
	out := bufio.NewWriter(e.Stdout)
	defer flush(out, &err)
	if len(ps) == 0 {
		fmt.Fprintf(out, "%s: %d transforms, valid\n", quote.Printable(file), len(ts))
		printTransforms(out, ts)
		return nil
	}
	set, err := sp.Set()
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	ids := map[string]projections.ProjectionID{}
	for _, id := range set.IDs() {
		ids[id.Name] = id
	}
	schema := sp.Schema().WithDefaults() // the spec's attributes, the defaults for those it leaves out
	keys := schema.KeyAttributes
	if len(ts) > 0 {
		fmt.Fprintf(out, "%s: %d projections, %d transforms, valid\n", quote.Printable(file), len(ps), len(ts))
	} else {
		fmt.Fprintf(out, "%s: %d projections, valid\n", quote.Printable(file), len(ps))
	}
	for _, p := range ps {
		fmt.Fprintf(out, "  %s  reads %s\n", quote.Printable(ids[p.Name()].String()), printableList(p.EntityTypes(), ", "))
		for _, c := range p.Counters() {
			shards := ""
			if c.Shards > 1 {
				shards = fmt.Sprintf(" (%d shards)", c.Shards)
			}
			fmt.Fprintf(out, "    counter %s%s: %s\n", quote.Printable(c.Key), shards, printableList(c.Values, ", "))
		}
		for _, r := range p.Rows() {
			fmt.Fprintf(out, "    row %s / %s: %s\n", quote.Printable(r.Partition), quote.Printable(r.Sort), printableList(r.Attributes, ", "))
			if w := rowIdentity(r, keys); w != "" {
				fmt.Fprintf(out, "      %s\n", w)
			}
		}
	}
	printTransforms(out, ts)
	types := set.EntityTypes()
	fmt.Fprintf(out, "entity types: %s (attribute %s)\n", printableList(types, ", "), quote.Printable(sp.TypeAttribute()))
	for _, src := range []struct {
		fn     string
		source filter.Source
	}{{"projector, DynamoDB Streams", filter.Streams}, {"kinesis-projector, Kinesis", filter.Kinesis}} {
		fc, err := generateFilters(set, "projector", src.source, sp.TypeAttribute())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "filter criteria (%s): ", src.fn)
		b, err := marshalJSONLine(fc)
		if err != nil {
			return err
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "SAM template parameters: %s\n", templateParameters(types, schema))
	return nil
}

// rowIdentity says where a row's keys cannot tell its item from another
// of the table (keys are its key attributes): "" when they hold every key
// attribute whole; a warning when they hold nothing of the item's key; a
// note when they hold some of it, or parts. Two items that give one row
// are refused, the second as a permanent failure naming both.
func rowIdentity(r spec.RowInfo, keys []string) string {
	var gaps []string
	missing := 0
	for _, k := range keys {
		switch {
		case slices.Contains(r.KeyHolds, k):
		case slices.Contains(r.KeyParts, k):
			gaps = append(gaps, quote.Printable(k)+" only in part")
		default:
			gaps = append(gaps, quote.Printable(k)+" not at all")
			missing++
		}
	}
	const then = "two items that agree on what they hold write one row, and the second is refused (a permanent failure naming both)"
	switch {
	case len(gaps) == 0:
		return ""
	case missing == len(keys):
		return fmt.Sprintf("warning: the row's keys hold nothing of the item's key (%s): %s", printableList(keys, ", "), then)
	}
	return fmt.Sprintf("note: the row's keys hold %s: %s", strings.Join(gaps, " and "), then)
}

// printTransforms prints what a spec's transforms make of each entity
// type's items (`tributary remodel`, docs/remodel.md).
func printTransforms(out *bufio.Writer, ts []spec.TransformInfo) {
	for _, t := range ts {
		others := "items of other types are not part of it"
		if t.CopyOthers {
			others = "items of other types are copied as they are"
		}
		fmt.Fprintf(out, "  transform %s: target keyed %s; %s\n", quote.Printable(t.Name), quote.Printable(t.Keys), others)
		for _, r := range t.Rewrites {
			fmt.Fprintf(out, "    %s: key %s; copies %s", quote.Printable(r.EntityType), printableList(r.Key, " "), quote.Printable(r.Copy))
			for _, part := range []struct {
				what  string
				names []string
			}{{"drops", r.Drop}, {"renames", r.Rename}, {"builds", r.Attributes}} {
				if len(part.names) > 0 {
					fmt.Fprintf(out, "; %s %s", part.what, printableList(part.names, ", "))
				}
			}
			fmt.Fprintln(out)
		}
	}
}

// templateParameters are the SAM template's parameters a table's entity
// types and attributes imply (the defaults for those not declared), in the
// form sam deploy --parameter-overrides takes, escaped for the terminal; s
// has its defaults filled in.
func templateParameters(types []string, s pipeline.Schema) string {
	return fmt.Sprintf("ProjectedEntityTypes=%s TypeAttribute=%s VersionAttribute=%s KeyAttributes=%s TTLAttribute=%s",
		printableList(types, ","), quote.Printable(s.TypeAttribute), quote.Printable(s.VersionAttribute), printableList(s.KeyAttributes, ","), quote.Printable(s.TTLAttribute))
}

// printableList joins strings from a spec or a store for the terminal,
// each escaped (quote.Printable).
func printableList(items []string, sep string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = quote.Printable(s)
	}
	return strings.Join(out, sep)
}

// marshalJSONLine encodes v as one line of JSON (HTML characters as they
// are) with what a terminal would interpret escaped (quote.PrintableJSON):
// the form the commands print JSON in.
func marshalJSONLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return quote.PrintableJSON(b.Bytes()), nil
}
