// Package kinesisprojector is the Lambda function that applies the Kinesis
// data stream fed by a table's Kinesis streaming destination to its
// projections, exactly once, in the aggregate table: Kinesis duplicates and
// reordering are harmless to the engine's ledger. A main is one call over
// the table's environment:
//
//	func main() { kinesisprojector.Main(tickets.Environment()) }
//
// It is configured like the Streams projector (projector.Config); partial
// batch responses name Kinesis sequence numbers.
package kinesisprojector

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// Config is the Kinesis projector's configuration: the Streams projector's,
// with Source Kinesis (LoadConfig sets it).
type Config = projector.Config

// LoadConfig reads the configuration as projector.LoadConfig does, for
// Kinesis events.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	cfg, err := projector.LoadConfig(lookup)
	cfg.Source = pipeline.SourceKinesis
	return cfg, err
}

// Main runs the Kinesis projector of env. It does not return.
func Main(env *projections.Environment) {
	entry.Main("kinesis-projector", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		conf, err := in.AWS()
		if err != nil {
			return nil, err
		}
		t, opts, err := projector.Open(conf, cfg)
		if err != nil {
			return nil, err
		}
		return New(in.Ctx, cfg, env, t, in.Log, os.Stdout, opts...)
	})
}

// New returns the Kinesis projector's handler: projector.New for Kinesis
// events, whatever cfg.Source says (partial batch responses name Kinesis
// sequence numbers).
func New(ctx context.Context, cfg Config, env *projections.Environment, t driver.Table, log *slog.Logger, metrics io.Writer, opts ...projector.Option) (*projector.Handler, error) {
	cfg.Source = pipeline.SourceKinesis
	return projector.New(ctx, cfg, env, t, log, metrics, opts...)
}
