package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/boltstore"
	"github.com/tributary/tributary/infra/dynamostore"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/driver"
)

// store is an aggregate store a command works on.
type store = driver.Table

// storeFlags are the flags that choose an aggregate store: an embedded one
// under a directory (the default for local runs) or a DynamoDB table.
type storeFlags struct {
	dir, table, endpoint string
	// noSync opens the embedded store without fsync (a command's
	// --no-sync).
	noSync bool
}

func (s *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.dir, "store", "", "directory of the embedded aggregate store (created if missing)")
	fs.StringVar(&s.table, "table", "", "DynamoDB aggregate table (instead of --store)")
	fs.StringVar(&s.endpoint, "endpoint", "", "DynamoDB endpoint URL, e.g. a local AWS-protocol server (with --table)")
}

// String names the store for messages: "store DIR" or "table NAME".
func (s *storeFlags) String() string {
	if s.table != "" {
		return "table " + s.table
	}
	return "store " + s.dir
}

// openEngine makes an engine of set over t with engine.Open (which
// refuses a store another projection set built), naming the store in its
// error.
func openEngine(ctx context.Context, t driver.Table, where string, set *projections.Set, cfg engine.Config) (*engine.Engine, error) {
	e, err := engine.Open(ctx, t, set, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return e, nil
}

// StoreFile is the embedded aggregate store's file under a --store
// directory.
const StoreFile = "aggregates.db"

// StoreFlags are --store DIR, --table NAME and --endpoint URL, the choice
// of an aggregate store the standard commands make, for a binary's own
// commands: register them with Env.StoreFlags, open the store after
// ParseFlags.
type StoreFlags struct{ f storeFlags }

// StoreFlags registers the store flags on fs.
func (e *Env) StoreFlags(fs *flag.FlagSet) *StoreFlags {
	s := new(StoreFlags)
	s.f.register(fs)
	return s
}

// Open opens the store the flags name, which must exist, and returns it
// with the function that closes it; neither flag is an ErrUsage.
func (s *StoreFlags) Open(ctx context.Context) (driver.Table, func() error, error) {
	return s.f.open(ctx, false)
}

// String names the store for messages: "store DIR" or "table NAME".
func (s *StoreFlags) String() string { return s.f.String() }

func (s *storeFlags) open(ctx context.Context, create bool) (store, func() error, error) {
	switch {
	case s.dir != "" && s.table != "":
		return nil, nil, fmt.Errorf("%w: --store and --table are exclusive", errUsage)
	case s.dir != "":
		path := filepath.Join(s.dir, StoreFile)
		if !create {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return nil, nil, fmt.Errorf("no aggregate store at %s", path)
			}
		}
		var opts []boltstore.Option
		if s.noSync {
			opts = append(opts, boltstore.WithoutSync())
		}
		st, err := boltstore.Open(path, opts...)
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	case s.table != "":
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("loading AWS configuration: %w", err)
		}
		client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			if s.endpoint != "" {
				o.BaseEndpoint = aws.String(s.endpoint)
			}
		})
		if create {
			if err := dynamostore.CreateTable(ctx, client, s.table); err != nil {
				return nil, nil, err
			}
		}
		return dynamostore.New(client, s.table), func() error { return nil }, nil
	}
	return nil, nil, fmt.Errorf("%w: give --store DIR or --table NAME", errUsage)
}

// openLocation opens a parsed location as an object store: a directory, or
// an S3 prefix through the default AWS configuration (endpoint, when set,
// is the S3 endpoint to use; see s3Client). noSync skips fsync in a
// directory.
func openLocation(ctx context.Context, loc objstore.Location, endpoint string, opts objstore.S3Options, noSync bool) (objstore.Store, error) {
	var client objstore.S3API
	if loc.IsS3() {
		c, err := s3Client(ctx, endpoint)
		if err != nil {
			return nil, err
		}
		client = c
	}
	st := loc.Open(client, opts)
	if d, ok := st.(*objstore.Dir); ok && noSync {
		return d.WithoutSync(), nil
	}
	return st, nil
}

// s3Client builds an S3 client from the default AWS configuration. A custom
// endpoint (the endpoint argument, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL)
// is a local S3-protocol server: buckets are then addressed by path, as
// those expect, and its responses' missing checksums are not logged.
func s3Client(ctx context.Context, endpoint string) (*s3.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = endpoint != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}
