package archive

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Config is the archiver function's configuration, read from its
// environment by ConfigFromEnv:
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
type Config struct {
	Bucket             string
	Dir                string
	Prefix             string
	KMSKeyID           string
	MultipartThreshold int64
	TypeAttribute      string
	TTLAttribute       string
	EntityTypes        []string
}

// ConfigFromEnv reads a Config with getenv (os.Getenv in a main) and fills
// in the defaults. The error reports a malformed number; Validate checks the
// rest.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Bucket:        strings.TrimSpace(getenv("ARCHIVE_BUCKET")),
		Dir:           getenv("ARCHIVE_DIR"),
		Prefix:        getenv("ARCHIVE_PREFIX"),
		KMSKeyID:      strings.TrimSpace(getenv("ARCHIVE_KMS_KEY_ID")),
		TypeAttribute: getenv("TYPE_ATTRIBUTE"),
		TTLAttribute:  getenv("TTL_ATTRIBUTE"),
	}
	for _, t := range strings.Split(getenv("ENTITY_TYPES"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.EntityTypes = append(c.EntityTypes, t)
		}
	}
	var err error
	if v := getenv("ARCHIVE_MULTIPART_THRESHOLD"); v != "" {
		if c.MultipartThreshold, err = strconv.ParseInt(v, 10, 64); err != nil {
			err = fmt.Errorf("ARCHIVE_MULTIPART_THRESHOLD: %q is not a number of bytes", v)
		}
	}
	c.setDefaults()
	return c, err
}

func (c *Config) setDefaults() {
	if c.MultipartThreshold == 0 {
		c.MultipartThreshold = DefaultMultipartThreshold
	}
	if c.TypeAttribute == "" {
		c.TypeAttribute = pipeline.DefaultTypeAttribute
	}
	if c.TTLAttribute == "" {
		c.TTLAttribute = DefaultTTLAttribute
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
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
	if err := ValidatePrefix(c.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("ARCHIVE_PREFIX: %w", err))
	}
	if c.MultipartThreshold < DefaultPartSize {
		errs = append(errs, fmt.Errorf("ARCHIVE_MULTIPART_THRESHOLD: %d is below S3's smallest part, %d bytes", c.MultipartThreshold, DefaultPartSize))
	}
	if strings.TrimSpace(c.TypeAttribute) == "" {
		errs = append(errs, errors.New("TYPE_ATTRIBUTE: empty"))
	}
	if strings.TrimSpace(c.TTLAttribute) == "" {
		errs = append(errs, errors.New("TTL_ATTRIBUTE: empty"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("archive: invalid configuration: %w", errors.Join(errs...))
}

// ValidatePrefix accepts "" and slash-separated non-empty segments other
// than "." and "..", without a leading or trailing slash; a segment may not
// look like a partition ("entity=..." or "date=..."), which would confuse
// readers.
func ValidatePrefix(p string) error {
	if p == "" {
		return nil
	}
	if !objstore.ValidKey(p) {
		return fmt.Errorf("%q: want segments separated by single slashes, none empty, \".\" or \"..\", no leading or trailing slash", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, "entity=") || strings.HasPrefix(seg, "date=") {
			return fmt.Errorf("%q: segment %q looks like a partition", p, seg)
		}
	}
	if len(p) > 512 {
		return fmt.Errorf("%q: longer than 512 bytes", p)
	}
	return nil
}

// S3Options returns the S3 store options the configuration asks for.
func (c Config) S3Options() objstore.S3Options {
	return objstore.S3Options{KMSKeyID: c.KMSKeyID, MultipartThreshold: c.MultipartThreshold, PartSize: DefaultPartSize}
}

// Defaults of the S3 store's options: objects of S3's smallest part (5 MiB)
// and up go multipart, in parts of that size.
const (
	DefaultMultipartThreshold = objstore.MinPartSize
	DefaultPartSize           = objstore.MinPartSize
)

// HandlerOptions returns the Handler options the configuration asks for,
// with metrics written to metrics (os.Stdout on Lambda).
func (c Config) HandlerOptions(metrics io.Writer) Options {
	return Options{Prefix: c.Prefix, TTLAttribute: c.TTLAttribute, Metrics: metrics}
}

// PipelineConfig returns the stream processor's configuration.
func (c Config) PipelineConfig(metrics io.Writer) pipeline.Config {
	return pipeline.Config{Options: pipeline.Options{TypeAttribute: c.TypeAttribute}, Metrics: metrics, EntityTypes: c.EntityTypes}
}
