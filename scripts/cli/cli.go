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
	"os"
	"os/signal"
	"syscall"

	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/export/repartition"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/spec"
)

// Options configure a tributary binary.
type Options struct {
	// Projections is the projection set that the commands which build or
	// check projections run: process, replay, redrive, verify, filters and
	// projections. Required.
	Projections *projections.Set
	// Transforms are the repartition transforms `repartition --transform`
	// can name (the stock binary's: comments-table).
	Transforms []*repartition.Transform
	// TypeAttribute is the item attribute holding the entity type that
	// Projections dispatch on (the functions' TYPE_ATTRIBUTE); default
	// EntityType. A --projections spec brings its own.
	TypeAttribute string
	// VersionAttribute is the item attribute holding its version number
	// (the functions' VERSION_ATTRIBUTE); default version.
	VersionAttribute string
	// Commands are added to the standard ones, after them in the usage
	// (the stock binary adds Demo and Leaderboard). A command with the name
	// of a standard one replaces it.
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
	Run func(ctx context.Context, env Env, args []string) error
}

// Env is what a command reads and writes.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Projections is the binary's projection set.
	Projections *projections.Set
}

// command is one subcommand, as the built-in ones are written.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command reads and writes, so tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	// set is the projection set commands run: the binary's
	// (Options.Projections), or a --projections spec's.
	set *projections.Set
	// typeAttr is the entity-type attribute the set reads: a spec's, the
	// Options', or "" for the decoders' default; typeAttrFrom says whose.
	typeAttr, typeAttrFrom string
	// versionAttr is the Options' version attribute ("" for the default).
	versionAttr string
	// extra are the Options' commands.
	extra []Command
	// transforms are the Options' transforms, by name.
	transforms *repartition.Registry
}

// Env returns the public view of e, for the Options' commands.
func (e *env) Env() Env {
	return Env{Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, Projections: e.set}
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
func (e *env) commands() []command {
	std := []command{
		{"decode", "print captured change records as normalised changes, one JSON object a line", runDecode},
		{"process", "run captured Lambda events through the projector's handler into a store", runProcess},
		{"aggregates", "print the aggregates a store holds", runAggregates},
		{"rows", "print a projection's materialised rows of one partition, in descending sort order", runRows},
		{"replay", "replay a window of a Kinesis or DynamoDB stream into the projections (resumable; --rebuild-into a new table)", runReplay},
		{"redrive", "run the batches an on-failure destination kept (S3 or a local copy) through the projector again", runRedrive},
		{"archive", "list (ls) or print (cat) a TTL archive in a directory or S3", runArchive},
		{"restore", "load TTL-archived items back into a table, or an export-shaped directory", runRestore},
		{"repartition", "split a DynamoDB export to S3 by entity type, optionally transformed", runRepartition},
		{"reimport", "load a repartition's output into DynamoDB: ImportTable, BatchWriteItem loader, or StartBulkPutItems", runReimport},
		{"verify", "recompute every projection from an export and diff it against the live aggregates", runVerify},
		{"filters", "print the FilterCriteria of the projector's or archiver's event source mapping", runFilters},
		{"projections", "show the projection set (and a store's marker), or adopt a store for it", runProjections},
	}
	for _, c := range e.extra {
		run := c.Run
		cmd := command{c.Name, c.Summary, func(ctx context.Context, e *env, args []string) error { return run(ctx, e.Env(), args) }}
		replaced := false
		for i := range std {
			if std[i].name == c.Name {
				std[i], replaced = cmd, true
			}
		}
		if !replaced {
			std = append(std, cmd)
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
	if opts.Projections == nil {
		fmt.Fprintln(stderr, "tributary: no projection set (cli.Options.Projections)")
		return 2
	}
	reg := repartition.NewRegistry()
	for _, t := range opts.Transforms {
		reg.Register(t)
	}
	return run(ctx, &env{
		stdout: stdout, stderr: stderr, stdin: stdin,
		set: opts.Projections, extra: opts.Commands, transforms: reg,
		typeAttr: opts.TypeAttribute, typeAttrFrom: "this binary's projections (cli.Options.TypeAttribute)",
		versionAttr: opts.VersionAttribute,
	}, args)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range e.commands() {
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
	usage(e)
	return 2
}

func usage(e *env) {
	w := e.stderr
	fmt.Fprintln(w, "Usage: tributary <command> [flags] [args]\n\nCommands:")
	for _, c := range e.commands() {
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

// specFlag registers --projections on fs: a spec file whose projections a
// command runs instead of the binary's. withSpec applies it after parsing.
func specFlag(fs *flag.FlagSet) *string {
	return fs.String("projections", "", "a projection spec file (docs/projections-spec.md) to run instead of this binary's projections")
}

// withSpec returns e with the projections of the spec file, or e itself
// when file is "".
func (e *env) withSpec(file string) (*env, error) {
	if file == "" {
		return e, nil
	}
	sp, err := spec.LoadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--projections: %w", err)
	}
	set, err := sp.Set()
	if err != nil {
		return nil, fmt.Errorf("--projections %s: %w", file, err)
	}
	with := *e
	with.set, with.typeAttr, with.typeAttrFrom = set, sp.TypeAttribute(), "the projection spec "+file
	return &with, nil
}

// typeAttribute returns the entity-type attribute a command reads: the one
// its flag gives (flag "" means not given), which must then agree with the
// projections' (a spec's or the Options'), else the projections', else the
// decoders' default.
func (e *env) typeAttribute(flagValue string) (string, error) {
	switch {
	case flagValue != "" && e.typeAttr != "" && flagValue != e.typeAttr:
		return "", fmt.Errorf("%w: --type-attribute %q, but %s read the entity type from %q", errUsage, flagValue, e.typeAttrFrom, e.typeAttr)
	case flagValue != "":
		return flagValue, nil
	case e.typeAttr != "":
		return e.typeAttr, nil
	}
	return pipeline.DefaultTypeAttribute, nil
}

// attrFlags are the item attributes a command that decodes changes for the
// projections reads: --type-attribute and --version-attribute.
type attrFlags struct{ typeAttr, versionAttr string }

func (f *attrFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.typeAttr, "type-attribute", "", "the item attribute holding the entity type (the functions' TYPE_ATTRIBUTE; default the projections', or EntityType)")
	fs.StringVar(&f.versionAttr, "version-attribute", "", "the item attribute holding its version number (the functions' VERSION_ATTRIBUTE; default version)")
}

// projectionFlags are the command line of a command that runs projections
// over decoded changes: --projections and the attrFlags.
type projectionFlags struct {
	spec  *string
	attrs attrFlags
}

func (f *projectionFlags) register(fs *flag.FlagSet) {
	f.spec = specFlag(fs)
	f.attrs.register(fs)
}

// withProjections returns e with the spec of f applied (withSpec), and the
// decoders' options for its projections (decodeOptions), after parsing.
func (e *env) withProjections(f projectionFlags) (*env, pipeline.Options, error) {
	with, err := e.withSpec(*f.spec)
	if err != nil {
		return nil, pipeline.Options{}, err
	}
	decode, err := with.decodeOptions(f.attrs)
	return with, decode, err
}

// decodeOptions returns the decoders' options for e's projections and the
// flags f, after parsing.
func (e *env) decodeOptions(f attrFlags) (pipeline.Options, error) {
	ta, err := e.typeAttribute(f.typeAttr)
	if err != nil {
		return pipeline.Options{}, err
	}
	va := f.versionAttr
	if va == "" {
		va = e.versionAttr
	}
	return pipeline.Options{TypeAttribute: ta, VersionAttribute: va}, nil
}
