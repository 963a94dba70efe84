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

// Main runs the Kinesis projector of env. It does not return.
func Main(env *projections.Environment) {
	entry.Start("kinesis-projector", env, func(ctx context.Context, env *projections.Environment, log *slog.Logger) (lambda.Handler, error) {
		cfg, t, opts, err := projector.Load(ctx)
		if err != nil {
			return nil, err
		}
		return New(ctx, cfg, t, env, log, os.Stdout, opts...)
	})
}

// New returns the Kinesis projector's handler (projector.Build for
// Kinesis events: partial batch responses name Kinesis sequence numbers).
func New(ctx context.Context, cfg projector.Config, t driver.Table, env *projections.Environment, log *slog.Logger, metrics io.Writer, opts ...projector.Option) (*projector.Handler, error) {
	return projector.Build(ctx, pipeline.SourceKinesis, cfg, t, env, log, metrics, opts...)
}
