package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/projections"
)

func runAggregates(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("aggregates", "")
	var sf storeFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	only := fs.String("projection", "", "print only this projection")
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	st, closeStore, err := sf.open(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	v, err := projections.ReadView(ctx, st)
	if err != nil {
		return err
	}
	if *only != "" {
		for k := range v.Aggregates {
			if k.Projection != *only {
				delete(v.Aggregates, k)
			}
		}
		for r := range v.Rows {
			if r.Projection != *only {
				delete(v.Rows, r)
			}
		}
	}
	out := bufio.NewWriter(e.Stdout)
	if *asJSON {
		if _, err := out.Write(v.AppendJSONLines(nil)); err != nil {
			return err
		}
	} else {
		printView(out, v)
	}
	return out.Flush()
}

// printView prints a view as aligned text for people.
func printView(out *bufio.Writer, v *projections.View) {
	keys := make([]projections.AggregateKey, 0, len(v.Aggregates))
	width := 0
	for k := range v.Aggregates {
		keys = append(keys, k)
		width = max(width, len(quote.Printable(k.Projection))+len(quote.Printable(k.Key))+2)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Projection != keys[j].Projection {
			return keys[i].Projection < keys[j].Projection
		}
		return keys[i].Key < keys[j].Key
	})
	for _, k := range keys {
		fmt.Fprintf(out, "%-*s %s\n", width, quote.Printable(k.Projection)+"  "+quote.Printable(k.Key), quote.Pairs(v.Aggregates[k]))
	}
	if len(v.Rows) > 0 {
		fmt.Fprintf(out, "%d materialised rows (see --json, or rows --projection NAME --partition KEY)\n", len(v.Rows))
	}
}
