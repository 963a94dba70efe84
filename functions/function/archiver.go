package function

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/archive"
)

// ArchiverConfig is the archiver function's configuration, read from the
// environment by LoadArchiverConfig:
//
//	ARCHIVE_BUCKET               S3 bucket to archive into (or ARCHIVE_DIR)
//	ARCHIVE_DIR                  local directory to archive into (or ARCHIVE_BUCKET)
//	ARCHIVE_PREFIX               key prefix, e.g. "ttl-archive/orders" (default none)
//	ARCHIVE_KMS_KEY_ID           SSE-KMS key; unset means SSE-S3 (AES256)
//	ARCHIVE_MULTIPART_THRESHOLD  bytes from which objects go multipart (default 5 MiB)
//	TYPE_ATTRIBUTE               entity type attribute (default EntityType)
//	TTL_ATTRIBUTE                expiry attribute, epoch seconds (default ttl)
//	ENTITY_TYPES                 comma-separated entity types the per-type metrics
//	                             name; the others count as "(other)" (default none)
type ArchiverConfig struct {
	Bucket             string
	Dir                string
	Prefix             string
	KMSKeyID           string
	MultipartThreshold int64
	TypeAttribute      string
	TTLAttribute       string
	EntityTypes        []string
}

// LoadArchiverConfig reads the archiver's configuration with getenv,
// fills in the defaults and reports every problem at once.
func LoadArchiverConfig(getenv func(string) string) (ArchiverConfig, error) {
	c := ArchiverConfig{
		Bucket:        strings.TrimSpace(getenv("ARCHIVE_BUCKET")),
		Dir:           getenv("ARCHIVE_DIR"),
		Prefix:        getenv("ARCHIVE_PREFIX"),
		KMSKeyID:      strings.TrimSpace(getenv("ARCHIVE_KMS_KEY_ID")),
		TypeAttribute: getenv("TYPE_ATTRIBUTE"),
		TTLAttribute:  getenv("TTL_ATTRIBUTE"),
		EntityTypes:   List(getenv("ENTITY_TYPES")),
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
		c.MultipartThreshold = archive.DefaultMultipartThreshold
	}
	if c.TypeAttribute == "" {
		c.TypeAttribute = pipeline.DefaultTypeAttribute
	}
	if c.TTLAttribute == "" {
		c.TTLAttribute = archive.DefaultTTLAttribute
	}
	switch {
	case c.Bucket == "" && c.Dir == "":
		errs = append(errs, errors.New("set ARCHIVE_BUCKET (S3) or ARCHIVE_DIR (local directory)"))
	case c.Bucket != "" && c.Dir != "":
		errs = append(errs, errors.New("set only one of ARCHIVE_BUCKET and ARCHIVE_DIR"))
	}
	if c.Bucket != "" {
		if err := objstore.ValidBucket(c.Bucket); err != nil {
			errs = append(errs, fmt.Errorf("ARCHIVE_BUCKET: %w", err))
		}
	}
	if c.KMSKeyID != "" && c.Bucket == "" {
		errs = append(errs, errors.New("ARCHIVE_KMS_KEY_ID needs ARCHIVE_BUCKET: a local directory is not encrypted"))
	}
	if err := archive.ValidatePrefix(c.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("ARCHIVE_PREFIX: %w", err))
	}
	if c.MultipartThreshold < archive.DefaultPartSize {
		errs = append(errs, fmt.Errorf("ARCHIVE_MULTIPART_THRESHOLD: %d is below S3's smallest part, %d bytes", c.MultipartThreshold, archive.DefaultPartSize))
	}
	if strings.TrimSpace(c.TTLAttribute) == "" {
		errs = append(errs, errors.New("TTL_ATTRIBUTE: empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration: %w", err)
	}
	return c, nil
}

// S3Options returns the S3 store options the configuration asks for.
func (c ArchiverConfig) S3Options() objstore.S3Options {
	return objstore.S3Options{KMSKeyID: c.KMSKeyID, MultipartThreshold: c.MultipartThreshold, PartSize: archive.DefaultPartSize}
}

// Archiver runs the TTL archiver: it archives the items DynamoDB's time to
// live deletes, from the table's stream (filtered to TTL removals), to S3
// or a local directory, exactly once (docs/archive.md). It does not
// return.
func Archiver() {
	start("archiver", func(ctx context.Context, log *slog.Logger) (lambda.Handler, error) {
		cfg, err := LoadArchiverConfig(os.Getenv)
		if err != nil {
			return nil, err
		}
		var store archive.Putter = objstore.NewDir(cfg.Dir)
		if cfg.Bucket != "" {
			aws, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("loading the AWS configuration: %w", err)
			}
			store = objstore.NewS3(s3.NewFromConfig(aws), cfg.Bucket, "", cfg.S3Options())
		}
		return NewArchiver(cfg, store, log, os.Stdout), nil
	})
}

// NewArchiver returns the archiver's handler over store: the archive
// handler behind the DynamoDB Streams processor.
func NewArchiver(cfg ArchiverConfig, store archive.Putter, log *slog.Logger, metrics io.Writer) *pipeline.Processor {
	h := archive.New(store, archive.Options{Prefix: cfg.Prefix, TTLAttribute: cfg.TTLAttribute, Logger: log, Metrics: metrics})
	return pipeline.NewStreamsProcessor(h, pipeline.Config{
		Options: pipeline.Options{TypeAttribute: cfg.TypeAttribute}, Logger: log, Metrics: metrics, EntityTypes: cfg.EntityTypes,
	})
}
