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
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// Options configure a tributary binary.
type Options struct {
	// Name is the binary's name in its usage and its messages; default
	// the base name of the program (os.Args[0]) for Main, "tributary" for
	// Run.
	Name string
	// Environment is the table's environment: its attributes, the
	// projection set that process, replay, redrive, verify, backfill,
	// filters and projections run, and the transforms repartition can
	// name (projections.Environment). Required. Every command reads the
	// table's attributes from it, so that a binary that knows its table
	// needs no attribute flag; a --projections spec replaces its
	// projections and the attributes the spec declares.
	Environment *projections.Environment
	// Commands are added to the standard ones, after them in the usage
	// (the stock binary adds demo and leaderboard). A command with the
	// name of a standard one replaces it. Env.FlagSet, ParseFlags and
	// Env.StoreFlags give them the standard commands' conventions.
	Commands []Command
}

// A Command is one subcommand of the tool.
type Command struct {
	// Name is what selects the command: tributary <Name> [flags].
	Name string
	// Summary is its line in the usage.
	Summary string
	// Run runs the command with the arguments after its name. An error
	// matching ErrUsage exits 2 after printing it, ErrFailed exits 1
	// without a message, any other error is printed and exits 1.
	Run func(ctx context.Context, env *Env, args []string) error
}

// Env is what a command reads and writes.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Name is the binary's name, for messages (Options.Name).
	Name string
	// Environment is the table's environment (Options.Environment).
	Environment *projections.Environment
	// extra are the Options' commands.
	extra []Command
}

// set returns the projection set commands run.
func (e *Env) set() *projections.Set { return e.Environment.Projections }

// engineLog is the log of an engine a command runs: JSON lines on stderr
// with -v (verbose), else nothing.
func (e *Env) engineLog(verbose bool) *slog.Logger {
	w := io.Discard
	if verbose {
		w = e.Stderr
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

// ErrUsage marks a command-line mistake: the tool prints it and exits 2.
var ErrUsage = errors.New("usage")

// ErrFailed marks a command that ran but found a problem (a verification
// mismatch, a record that failed): the tool exits 1 without repeating a
// message.
var ErrFailed = errors.New("failed")

// errUsage and errFailed are the names the built-in commands use.
var (
	errUsage  = ErrUsage
	errFailed = ErrFailed
)

// errNoProjections is the error of a command that runs projections in a
// binary whose environment has none.
var errNoProjections = fmt.Errorf("%w: this binary's environment has no projections: give --projections FILE", ErrUsage)

// flush flushes out, a command's output, into *err: what was written goes
// out whatever happened, and output that cannot be written fails the
// command. A bufio.Writer keeps its first write error and returns it from
// then on, so *err may hold it already; it is not said twice.
func flush(out *bufio.Writer, err *error) {
	if ferr := out.Flush(); ferr != nil && !errors.Is(*err, ferr) {
		*err = errors.Join(*err, ferr)
	}
}

// commands returns the standard commands followed by e's own, a command of
// e's replacing a standard one of the same name.
func (e *Env) commands() []Command {
	std := []Command{
		{"decode", "print captured change records as normalised changes, one JSON object a line", runDecode},
		{"process", "run captured Lambda events through the projector's handler into a store", runProcess},
		{"aggregates", "print the aggregates a store holds", runAggregates},
		{"rows", "print a projection's materialised rows of one partition, in descending sort order", runRows},
		{"replay", "replay a window of a Kinesis or DynamoDB stream into the projections (resumable; --rebuild-into a new table)", runReplay},
		{"redrive", "run the batches an on-failure destination kept (S3 or a local copy) through the projector again", runRedrive},
		{"archive", "list (ls), print (cat) or compact a TTL archive in a directory or S3", runArchive},
		{"restore", "load TTL-archived items back into a table, or an export-shaped directory", runRestore},
		{"repartition", "split a DynamoDB export to S3 by entity type, optionally transformed", runRepartition},
		{"reimport", "load a repartition's output into DynamoDB: ImportTable, BatchWriteItem loader, or StartBulkPutItems", runReimport},
		{"verify", "recompute every projection from an export and diff it against the live aggregates", runVerify},
		{"backfill", "build the projections from an export, into a store the stream then keeps current (exactly once with it)", runBackfill},
		{"remodel", "put the table's items through a transform into a target of a new key design: backfill, apply, verify, items", runRemodel},
		{"filters", "print the FilterCriteria of the projector's or archiver's event source mapping", runFilters},
		{"projections", "show the projection set (and a store's marker), adopt a store for it, or check a spec file", runProjections},
		{"status", "what a store records: its projection set, the backfill that built it, partials not folded, the newest change applied per source", runStatus},
	}
	for _, c := range e.extra {
		replaced := false
		for i := range std {
			if std[i].Name == c.Name {
				std[i], replaced = c, true
			}
		}
		if !replaced {
			std = append(std, c)
		}
	}
	return std
}

// Main runs the command line in os.Args with opts and exits with its
// status: 0 on success, 1 when a command failed, 2 for a usage mistake. A
// first SIGINT or SIGTERM cancels the running command's context: it stops
// at its next store call, batch or input (a record's evaluation is bounded
// by its budget: docs/projections-spec.md). A second one ends the process
// at once: the signal's default action, as if the tool had no handler.
func Main(opts Options) {
	if opts.Name == "" {
		opts.Name = filepath.Base(os.Args[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			// The default action is back before anything sees ctx
			// cancelled, so that no second signal is swallowed.
			signal.Stop(sigs)
			cancel()
		}
	}()
	code := Run(ctx, opts, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	cancel()
	os.Exit(code)
}

// Run runs one command line (the arguments after the program name) and
// returns the process exit status, as Main would exit with.
func Run(ctx context.Context, opts Options, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := opts.Name
	if name == "" {
		name = "tributary"
	}
	if opts.Environment == nil {
		fmt.Fprintf(stderr, "%s: no environment (cli.Options.Environment)\n", name)
		return 2
	}
	env := *opts.Environment
	if env.LoadSpec == nil {
		env.LoadSpec = spec.Load // the tool reads specs, whatever its main's functions do
	}
	if err := env.Validate(); err != nil {
		fmt.Fprintf(stderr, "%s: the binary's environment: %s\n", name, quote.Lines(err.Error()))
		return 2
	}
	return run(ctx, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Name: name, Environment: &env, extra: opts.Commands}, args)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, e *Env, args []string) int {
	if len(args) == 0 {
		usage(e, e.Stderr)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e, e.Stdout) // asked for: the output, not an error
		return 0
	}
	for _, c := range e.commands() {
		if c.Name != args[0] {
			continue
		}
		err := c.Run(ctx, e, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errFailed):
			return 1
		}
		// Errors quote keys and values of items: escape what a terminal
		// would interpret, line by line, so that a report keeps its lines.
		fmt.Fprintf(e.Stderr, "%s %s: %s\n", e.Name, c.Name, quote.Lines(err.Error()))
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	fmt.Fprintf(e.Stderr, "%s: unknown command %s\n\n", e.Name, quote.Value(args[0]))
	usage(e, e.Stderr)
	return 2
}

func usage(e *Env, w io.Writer) {
	fmt.Fprintf(w, "Usage: %s <command> [flags] [args]\n\nCommands:\n", e.Name)
	for _, c := range e.commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> -h' for a command's flags.\n", e.Name)
}

// FlagSet returns a flag set for the command name of e's binary, for a
// binary's own commands (Options.Commands) as for the standard ones: its
// errors and usage ("Usage: NAME name [flags] argsUsage") go to e.Stderr,
// and it reports errors instead of exiting. Parse it with ParseFlags.
func (e *Env) FlagSet(name, argsUsage string) *flag.FlagSet {
	fs := flag.NewFlagSet(e.Name+" "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.Stderr, "Usage: %s\n\nFlags:\n", strings.TrimSpace(e.Name+" "+name+" [flags] "+argsUsage))
		fs.PrintDefaults()
	}
	return fs
}

// ParseFlags parses args into fs: a mistake is an ErrUsage (the command
// exits 2), -h or -help is flag.ErrHelp (it exits 0 after the usage).
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// specFlag registers --projections on fs: a spec file whose projections a
// command runs instead of the binary's. withSpec applies it after parsing.
func specFlag(fs *flag.FlagSet) *string {
	return fs.String("projections", "", "a projection spec file (docs/projections-spec.md) to run instead of this binary's projections (with the attributes it declares)")
}

// withSpec returns e with the environment the spec file makes of e's
// (projections.Environment.WithSpec), or e itself when file is "".
func (e *Env) withSpec(file string) (*Env, error) {
	if file == "" {
		return e, nil
	}
	env, err := e.Environment.WithSpec(file)
	if err != nil {
		return nil, fmt.Errorf("--projections: %w", err)
	}
	with := *e
	with.Environment = env
	return &with, nil
}

// schemaFlags are the flags that name the table's attributes, for a binary
// that does not know them or a check that they agree: --type-attribute,
// --version-attribute, --key-attributes and --ttl-attribute, each
// registered only where the command reads it.
type schemaFlags struct {
	given pipeline.Schema
	keys  string
}

// The attributes a command's schemaFlags register.
const (
	typeFlag = 1 << iota
	versionFlag
	keysFlag
	ttlFlag
)

func (f *schemaFlags) register(fs *flag.FlagSet, which int) {
	if which&typeFlag != 0 {
		fs.StringVar(&f.given.TypeAttribute, "type-attribute", "", "the item attribute holding the entity type (the functions' TYPE_ATTRIBUTE; default the environment's: this binary's, a --projections spec's, or EntityType)")
	}
	if which&versionFlag != 0 {
		fs.StringVar(&f.given.VersionAttribute, "version-attribute", "", "the item attribute holding its version number (the functions' VERSION_ATTRIBUTE; default the environment's, or version)")
	}
	if which&keysFlag != 0 {
		fs.StringVar(&f.keys, "key-attributes", "", "the table's key attributes, comma-separated, e.g. Id or pk,sk (default the environment's, or PK,SK)")
	}
	if which&ttlFlag != 0 {
		fs.StringVar(&f.given.TTLAttribute, "ttl-attribute", "", "the table's TTL attribute, epoch seconds (the archiver's TTL_ATTRIBUTE; default the environment's, or ttl)")
	}
}

// keyList returns --key-attributes as a list; nil when it is not given.
func (f *schemaFlags) keyList() []string {
	var out []string
	for _, k := range strings.Split(f.keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// schema returns the table's attributes for a command: its environment's,
// with those the flags give where the environment declares none (a flag
// that differs from an attribute the environment declares is a usage
// mistake), and the defaults for the rest.
func (e *Env) schema(f schemaFlags) (pipeline.Schema, error) {
	given := f.given
	given.KeyAttributes = f.keyList()
	s, err := e.Environment.Schema.Resolve(given, map[string]string{
		"type": "--type-attribute", "version": "--version-attribute", "keys": "--key-attributes", "ttl": "--ttl-attribute",
	})
	if err != nil {
		return s, fmt.Errorf("%w: %w", errUsage, err)
	}
	return s, nil
}

// projectionFlags are the command line of a command that runs projections
// over decoded changes: --projections and the attribute flags.
type projectionFlags struct {
	spec   *string
	schema schemaFlags
}

func (f *projectionFlags) register(fs *flag.FlagSet, which int) {
	f.spec = specFlag(fs)
	f.schema.register(fs, which)
}

// withProjections returns e with the spec of f applied (withSpec), and the
// decoders' options for its projections, after parsing. A binary without
// projections, given no spec, is refused.
func (e *Env) withProjections(f projectionFlags) (*Env, pipeline.Options, error) {
	with, err := e.withSpec(*f.spec)
	if err != nil {
		return nil, pipeline.Options{}, err
	}
	if with.set() == nil {
		return nil, pipeline.Options{}, errNoProjections
	}
	s, err := with.schema(f.schema)
	return with, pipeline.Options{Schema: s}, err
}
