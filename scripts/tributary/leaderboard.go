package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/scripts/cli"
)

// leaderboard is the `leaderboard` command: a season's top players from
// the seed season-leaderboard projection's rows (`rows` does the same for
// any projection).
func leaderboard() cli.Command {
	return cli.Command{Name: "leaderboard", Summary: "print a season's leaderboard from a store (the seed season-leaderboard projection)", Run: runLeaderboard}
}

func runLeaderboard(ctx context.Context, e *cli.Env, args []string) (err error) {
	fs := e.FlagSet("leaderboard", "")
	sf := e.StoreFlags(fs)
	season := fs.String("season", "", "season, e.g. 2026-Q2 (required)")
	top := fs.Int("top", 10, "how many players")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if *season == "" {
		return fmt.Errorf("%w: --season is required", cli.ErrUsage)
	}
	if *top < 1 {
		return fmt.Errorf("%w: --top must be at least 1", cli.ErrUsage)
	}
	st, closeStore, err := sf.Open(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()
	rows, err := st.QueryRows(ctx, "season-leaderboard", "SEASON#"+*season, *top)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(e.Stdout)
	fmt.Fprintf(out, "season %s, top %d\n%4s  %-12s %-20s %8s\n", quote.Printable(*season), *top, "rank", "player", "handle", "rating")
	for i, r := range rows {
		fmt.Fprintf(out, "%4d  %-12s %-20s %8s\n", i+1, attr(r.Attrs, "player"), attr(r.Attrs, "handle"), attr(r.Attrs, "rating"))
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "(no players)")
	}
	return out.Flush()
}

// attr returns an S or N attribute of a row for a table on a terminal, its
// control characters escaped: rows hold what items hold.
func attr(item map[string]types.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return quote.Printable(v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return ""
}
