// Package archiver is the Lambda function that archives the items
// DynamoDB's time to live deletes, from the table's stream (filtered to TTL
// removals), to S3 or a local directory, exactly once (docs/archive.md). A
// main is one call over the table's environment, whose attributes (the
// entity type's, the TTL's) it reads:
//
//	func main() { archiver.Main(tickets.Environment()) }
package archiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/tributary/tributary/functions/internal/archiveenv"
	"github.com/tributary/tributary/functions/internal/entry"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Config is the archiver's configuration, read from the environment by
// LoadConfig:
//
//	ARCHIVE_BUCKET               S3 bucket to archive into (or ARCHIVE_DIR)
//	ARCHIVE_DIR                  local directory to archive into (or ARCHIVE_BUCKET)
//	ARCHIVE_PREFIX               key prefix, e.g. "ttl-archive/orders" (default none)
//	ARCHIVE_KMS_KEY_ID           SSE-KMS key; unset means SSE-S3 (AES256)
//	ARCHIVE_MULTIPART_THRESHOLD  bytes from which objects go multipart (default 5 MiB)
//	TYPE_ATTRIBUTE               entity type attribute, and the expiry's,
//	TTL_ATTRIBUTE                in epoch seconds: by default the
//	                             environment's (EntityType, ttl); a value that
//	                             differs from one it declares stops the
//	                             function at init
//	ENTITY_TYPES                 comma-separated entity types the per-type metrics
//	                             name; the others count as "(other)" (default none)
type Config struct {
	Bucket             string
	Dir                string
	Prefix             string
	KMSKeyID           string
	MultipartThreshold int64
	// Schema holds the attributes the variables give (the type's and the
	// TTL's); empty ones are the environment's.
	Schema      pipeline.Schema
	EntityTypes []string
}

// LoadConfig reads the archiver's configuration with lookup (os.LookupEnv in
// a main), fills in the
// defaults and reports every problem at once.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	getenv := entry.Getenv(lookup)
	given := entry.GivenSchema(getenv)
	loc, locErrs := archiveenv.Read(getenv)
	c := Config{
		Bucket: loc.Bucket, Dir: loc.Dir, Prefix: loc.Prefix, KMSKeyID: loc.KMSKeyID,
		Schema:      pipeline.Schema{TypeAttribute: given.TypeAttribute, TTLAttribute: given.TTLAttribute},
		EntityTypes: entry.List(getenv("ENTITY_TYPES")),
	}
	var errs []error
	if v := getenv("ARCHIVE_MULTIPART_THRESHOLD"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("ARCHIVE_MULTIPART_THRESHOLD: %q is not a number of bytes", v))
		}
		c.MultipartThreshold = n
	}
	if c.MultipartThreshold == 0 {
		c.MultipartThreshold = defaultMultipartThreshold
	}
	errs = append(errs, locErrs...)
	if c.MultipartThreshold < defaultPartSize {
		errs = append(errs, fmt.Errorf("ARCHIVE_MULTIPART_THRESHOLD: %d is below S3's smallest part, %d bytes", c.MultipartThreshold, defaultPartSize))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// Defaults of the S3 store's options: objects of S3's smallest part (5 MiB)
// and up go multipart, in parts of that size.
const (
	defaultMultipartThreshold = objstore.MinPartSize
	defaultPartSize           = objstore.MinPartSize
)

// S3Options returns the S3 store options the configuration asks for.
func (c Config) S3Options() objstore.S3Options {
	return objstore.S3Options{KMSKeyID: c.KMSKeyID, MultipartThreshold: c.MultipartThreshold, PartSize: defaultPartSize}
}

// Main runs the TTL archiver of env's table. It does not return.
func Main(env *projections.Environment) {
	entry.Main("archiver", env, LoadConfig, func(in *entry.Init, cfg Config, env *projections.Environment) (lambda.Handler, error) {
		store, err := entry.Store(in, objstore.Location{Bucket: cfg.Bucket, Dir: cfg.Dir}, cfg.S3Options())
		if err != nil {
			return nil, err
		}
		return New(cfg, env, store, in.Log, os.Stdout)
	})
}

// Putter writes one archive object whole: an objstore store (a directory,
// an S3 prefix) is one.
type Putter interface {
	Put(ctx context.Context, key string, body []byte) error
}

// New returns the archiver's handler over store: the archive handler
// behind the DynamoDB Streams processor, reading the attributes of env's
// schema, or those cfg gives where env declares none.
func New(cfg Config, env *projections.Environment, store Putter, log *slog.Logger, metrics io.Writer) (*pipeline.Processor, error) {
	schema, err := entry.Schema(env, cfg.Schema)
	if err != nil {
		return nil, err
	}
	h := archive.New(store, archive.Options{Prefix: cfg.Prefix, TTLAttribute: schema.TTLAttribute, Logger: log, Metrics: metrics})
	return pipeline.NewStreamsProcessor(h, pipeline.Config{
		Options: pipeline.Options{Schema: schema}, Logger: log, Metrics: metrics, EntityTypes: cfg.EntityTypes,
	}), nil
}
