package function

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// MainEnv names the environment variable that hands a function over to
// another main: when it is set (to the path of an executable, typically
// /opt/bin/<function> in a Lambda layer), a function started by this
// package replaces its process with that executable at init, before it
// reads any other configuration. The stock functions of the SAM template
// use it to run a team's own Go mains from a layer (docs/deploy.md). The
// variable is removed from the environment the executable sees.
const MainEnv = "TRIBUTARY_MAIN"

// start builds a function's handler and hands it to the Lambda runtime; a
// failure to build it is logged and ends the process, so that Lambda
// reports the init error.
func start(name string, build func(ctx context.Context, log *slog.Logger) (lambda.Handler, error)) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("function", name)
	if exe := os.Getenv(MainEnv); exe != "" {
		err := handOver(exe) // returns only on failure
		log.Error("init failed", "error", MainEnv+" "+exe+": "+err.Error())
		os.Exit(1)
	}
	h, err := build(context.Background(), log)
	if err != nil {
		log.Error("init failed", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}
