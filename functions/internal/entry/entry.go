// Package entry is what every Lambda function of Tributary does at init,
// before its handler takes a record: hand over to another main when
// TRIBUTARY_MAIN names one, resolve the table's environment (a spec file in
// place of the main's projections), build the handler, and report an init
// failure the way Lambda shows it.
package entry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// MainEnv names the environment variable that hands a function over to
// another main: when it is set (to the path of an executable, typically
// /opt/bin/<function> in a Lambda layer), a function replaces its process
// with that executable at init, before it reads any other configuration.
// The stock functions of the SAM template use it to run a team's own Go
// mains from a layer (docs/deploy.md). The variable is removed from the
// environment the executable sees.
const MainEnv = "TRIBUTARY_MAIN"

// SpecEnv names the variable that replaces the main's projections (and the
// attributes the spec declares) with a spec file's: PROJECTIONS_FILE.
const SpecEnv = "PROJECTIONS_FILE"

// Init is what a function's Main builds its handler with at init: the
// context, the function's logger, and its AWS clients, made from the AWS
// configuration (its role's credentials and region), which is loaded once,
// when a client is first asked for.
type Init struct {
	Ctx context.Context
	Log *slog.Logger
	aws *aws.Config
}

// AWS returns the function's AWS configuration (AWSConfig), loaded on
// the first call.
func (in *Init) AWS() (aws.Config, error) {
	if in.aws == nil {
		cfg, err := AWSConfig(in.Ctx)
		if err != nil {
			return cfg, err
		}
		in.aws = &cfg
	}
	return *in.aws, nil
}

// The S3 client and the store are functions rather than methods of Init:
// a method is linked into every function's binary (the SDK reflects on
// methods), and an SDK client is megabytes a function that does not call
// it would carry. For the same reason this package does not import the
// DynamoDB client: the functions that need one make it of AWS's config.

// S3 returns an S3 client of the function's AWS configuration.
func S3(in *Init) (*s3.Client, error) {
	cfg, err := in.AWS()
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg), nil
}

// Store opens the object store at loc (objstore.Location.Open): a
// directory, or S3 through the function's client with opts (only an S3
// location loads the AWS configuration).
func Store(in *Init, loc objstore.Location, opts objstore.S3Options) (objstore.Store, error) {
	var client objstore.S3API
	if loc.IsS3() {
		c, err := S3(in)
		if err != nil {
			return nil, err
		}
		client = c
	}
	return loc.Open(client, opts), nil
}

// Main runs the function name, the one init of every function's Main:
// it hands over when MainEnv says so, resolves the table's environment
// (Resolve: env, or the spec PROJECTIONS_FILE makes of it), reads the
// function's configuration from the process's variables (load, the
// function's LoadConfig), and builds the handler with build (which opens
// the clients it needs with in and calls the function's New; New resolves
// the attributes the configuration gives against the environment's, then
// the defaults, then Validate: Schema). It hands the handler to the
// Lambda runtime. A failure is logged as a JSON line and ends the process,
// so that Lambda reports the init error. It does not return.
func Main[C any](name string, env *projections.Environment, load func(func(string) (string, bool)) (C, error), build func(in *Init, cfg C, env *projections.Environment) (lambda.Handler, error)) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("function", name)
	fail := func(err error) {
		log.Error("init failed", "error", err.Error())
		os.Exit(1)
	}
	// A layer's code runs under the function's role: before handing over
	// to a main in it, or reading a spec from it, the layer must be one the
	// stack's account allows.
	if err := CheckLayer(os.Getenv("PROJECTIONS_LAYER"), os.Getenv("LAYER_ACCOUNTS")); err != nil {
		fail(err)
	}
	if exe := os.Getenv(MainEnv); exe != "" {
		err := handOver(exe) // returns only on failure
		fail(fmt.Errorf("%s %s: %w", MainEnv, exe, err))
	}
	resolved, err := Resolve(env, os.LookupEnv)
	if err != nil {
		fail(err)
	}
	h, err := func() (lambda.Handler, error) {
		cfg, err := load(os.LookupEnv)
		if err != nil {
			return nil, err
		}
		return build(&Init{Ctx: context.Background(), Log: log}, cfg, resolved)
	}()
	if err != nil {
		fail(err)
	}
	lambda.Start(h)
}

// CheckLayer refuses a layer (its version ARN, PROJECTIONS_LAYER) of an
// account that accounts (LAYER_ACCOUNTS: the stack's account and the
// template's ProjectionsLayerAccounts, comma-separated) does not list. No
// layer, or no list (a function not deployed by the stock template), is
// no check.
func CheckLayer(layer, accounts string) error {
	if layer == "" || strings.TrimSpace(accounts) == "" {
		return nil
	}
	parts := strings.Split(layer, ":")
	if len(parts) < 7 || parts[2] != "lambda" || parts[5] != "layer" {
		return fmt.Errorf("PROJECTIONS_LAYER %s is not a Lambda layer version ARN", layer)
	}
	account := parts[4]
	for _, a := range List(accounts) {
		if a == account {
			return nil
		}
	}
	return fmt.Errorf("PROJECTIONS_LAYER %s is account %s's layer, and its code would run under this function's role: only the stack's account and those the template's ProjectionsLayerAccounts lists (%s) may provide it (docs/deploy.md)",
		layer, account, strings.Join(List(accounts), ", "))
}

// Resolve returns the environment a function runs with: env, or the
// environment PROJECTIONS_FILE's spec makes of it (Environment.WithSpec).
// A nil env is an empty one.
func Resolve(env *projections.Environment, lookup func(string) (string, bool)) (*projections.Environment, error) {
	if env == nil {
		env = &projections.Environment{}
	}
	file, _ := lookup(SpecEnv)
	if file = strings.TrimSpace(file); file == "" {
		if err := env.Validate(); err != nil {
			return nil, fmt.Errorf("the main's environment: %w", err)
		}
		return env, nil
	}
	with, err := env.WithSpec(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SpecEnv, err)
	}
	return with, nil
}

// List splits a comma-separated variable, dropping blanks.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// AWSConfig loads the function's AWS configuration (its role's
// credentials and region, from the Lambda environment).
func AWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return cfg, nil
}

// Getenv turns lookup (os.LookupEnv in a main) into a getter that gives an
// unset variable as empty.
func Getenv(lookup func(string) (string, bool)) func(string) string {
	return func(k string) string { v, _ := lookup(k); return v }
}

// GivenSchema reads the attributes the variables TYPE_ATTRIBUTE,
// VERSION_ATTRIBUTE, KEY_ATTRIBUTES and TTL_ATTRIBUTE give (the template's
// TypeAttribute, VersionAttribute, KeyAttributes and TTLAttribute); an
// unset variable leaves its attribute empty.
func GivenSchema(getenv func(string) string) pipeline.Schema {
	return pipeline.Schema{
		TypeAttribute:    strings.TrimSpace(getenv("TYPE_ATTRIBUTE")),
		VersionAttribute: strings.TrimSpace(getenv("VERSION_ATTRIBUTE")),
		KeyAttributes:    List(getenv("KEY_ATTRIBUTES")),
		TTLAttribute:     strings.TrimSpace(getenv("TTL_ATTRIBUTE")),
	}
}

// Schema returns the schema a function runs with: env's, with the
// attributes given names where env declares none (see GivenSchema), and
// the defaults for the rest, validated (pipeline.Schema.Resolve). A given
// attribute that differs from one env declares is an error naming its
// variable.
func Schema(env *projections.Environment, given pipeline.Schema) (pipeline.Schema, error) {
	return env.Schema.Resolve(given, map[string]string{
		"type": "TYPE_ATTRIBUTE", "version": "VERSION_ATTRIBUTE", "keys": "KEY_ATTRIBUTES", "ttl": "TTL_ATTRIBUTE",
	})
}

// Projections returns what a function that runs env's projections runs
// with: the schema (Schema) and the set of the projections names selects
// (PROJECTIONS; none: every one), or an error naming the variable.
func Projections(env *projections.Environment, given pipeline.Schema, names []string) (pipeline.Schema, *projections.Set, error) {
	schema, err := Schema(env, given)
	if err != nil {
		return schema, nil, err
	}
	if env.Projections == nil {
		return schema, nil, errors.New("no projections: the main's environment has none, and PROJECTIONS_FILE names no spec")
	}
	set, err := env.Projections.Select(names...)
	if err != nil {
		return schema, nil, fmt.Errorf("PROJECTIONS: %w", err)
	}
	return schema, set, nil
}
