// Package cli is the operator's command-line tool, tributary, as a library:
// it inspects captured change events, runs them through the same handlers as
// the Lambda functions, replays streams, archives, repartitions, reimports and
// verifies. The stock binary (scripts/tributary) is a main over it; a team
// builds its own binary with its own projections the same way.
//
// Usage:
//
//	tributary <command> [flags] [args]
//
// Run `tributary help` for the list of commands and `tributary <command> -h`
// for a command's flags.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tributary/tributary/internal/quote"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command reads and writes, so tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
}

// errUsage marks a command-line mistake; main exits 2 for it.
var errUsage = errors.New("usage")

// errFailed marks a command that ran but found a problem (a verification
// mismatch); main exits 1 without repeating a message.
var errFailed = errors.New("failed")

func commands() []command {
	return []command{
		{"demo", "simulate a workload through Lambda's delivery with faults, then check the aggregates", runDemo},
		{"decode", "print captured change records as normalised changes, one JSON object a line", runDecode},
		{"process", "run captured Lambda events through the projector's handler into a store", runProcess},
		{"aggregates", "print the aggregates a store holds", runAggregates},
		{"leaderboard", "print a season's leaderboard from a store", runLeaderboard},
		{"replay", "replay a window of a Kinesis or DynamoDB stream into the projections (resumable; --rebuild-into a new table)", runReplay},
		{"redrive", "run the batches an on-failure destination kept (S3 or a local copy) through the projector again", runRedrive},
		{"archive", "list (ls) or print (cat) a TTL archive in a directory or S3", runArchive},
		{"restore", "load TTL-archived items back into a table, or an export-shaped directory", runRestore},
		{"repartition", "split a DynamoDB export to S3 by entity type, optionally transformed", runRepartition},
		{"reimport", "load a repartition's output into DynamoDB: ImportTable, BatchWriteItem loader, or StartBulkPutItems", runReimport},
		{"verify", "recompute every projection from an export and diff it against the live aggregates", runVerify},
		{"filters", "print the FilterCriteria of the projector's or archiver's event source mapping", runFilters},
	}
}

// Main runs the command line in os.Args and exits with its status: 0 on
// success, 1 when a command failed, 2 for a usage mistake. It stops the
// running command on SIGINT and SIGTERM.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(e.stderr, "tributary %s: %s\n", c.name, quote.Printable(err.Error()))
			return 2
		case errors.Is(err, errFailed):
			return 1
		}
		// Errors quote keys and values of items: escape what a terminal
		// would interpret.
		fmt.Fprintf(e.stderr, "tributary %s: %s\n", c.name, quote.Printable(err.Error()))
		return 1
	}
	fmt.Fprintf(e.stderr, "tributary: unknown command %s\n\n", quote.Value(args[0]))
	usage(e.stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: tributary <command> [flags] [args]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'tributary <command> -h' for a command's flags.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(e *env, name, argsUsage string) *flag.FlagSet {
	fs := flag.NewFlagSet("tributary "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: tributary %s [flags] %s\n\nFlags:\n", name, argsUsage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, mapping a parse error to errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
