package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

func runRows(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("rows", "--projection NAME --partition KEY [--top N] [--json]")
	var sf storeFlags
	sf.register(fs)
	projection := fs.String("projection", "", "the projection whose rows to print (required)")
	partition := fs.String("partition", "", "the rows' partition, e.g. SEASON#2026-Q2 (required)")
	top := fs.Int("top", 10, "how many rows, from the highest sort key down (0: all)")
	asJSON := fs.Bool("json", false, `print one JSON object a line: the sort key ("sort") and the row's values in DynamoDB JSON ("values"; for one release also as "attributes", their name before)`)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *projection == "" || *partition == "":
		return fmt.Errorf("%w: --projection and --partition are required", errUsage)
	case *top < 0:
		return fmt.Errorf("%w: --top must not be negative", errUsage)
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	st, closeStore, err := sf.open(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	// A projection the store's set does not hold has no rows to show: a
	// misspelt name is an error, not an empty answer.
	if m, err := engine.ReadMarker(ctx, st); err != nil {
		return err
	} else if m != nil && !slices.ContainsFunc(m.Set, func(id projections.ProjectionID) bool { return id.Name == *projection }) {
		names := make([]string, len(m.Set))
		for i, id := range m.Set {
			names[i] = id.Name
		}
		return fmt.Errorf("%w: --projection %s: the %s holds the projections %s", errUsage, quote.Value(*projection), sf.String(), printableList(names, ", "))
	}
	rows, err := st.QueryRows(ctx, *projection, *partition, *top)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(e.Stdout)
	for _, r := range rows {
		values := quote.PrintableJSON(pipeline.AppendItem(nil, r.Attrs))
		if *asJSON {
			if _, err := out.Write(appendRowJSON(nil, r.Ref.Sort, values)); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "%s  %s\n", quote.Printable(r.Ref.Sort), values)
	}
	if len(rows) == 0 && !*asJSON {
		fmt.Fprintf(out, "(no rows of %s in %s)\n", quote.Printable(*projection), quote.Printable(*partition))
	}
	return out.Flush()
}

// appendRowJSON appends the line `rows --json` prints for a row: its sort
// key and its values (DynamoDB JSON, made printable), under "values" as
// `aggregates --json` names them, and for one release also under
// "attributes", the name before.
func appendRowJSON(b []byte, sort string, values []byte) []byte {
	b = append(b, `{"sort":`...)
	b = quote.AppendJSON(b, sort)
	b = append(b, `,"values":`...)
	b = append(b, values...)
	b = append(b, `,"attributes":`...)
	b = append(b, values...)
	return append(b, "}\n"...)
}
