package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline/export/repartition"
)

// Config is the function's configuration, read from the environment: the
// defaults of every event's job (an event may override each).
type Config struct {
	Job repartition.JobConfig // EXPORT_LOCATION, OUTPUT_LOCATION, TYPE_ATTRIBUTE, TRANSFORM, COMPRESSION, COMPRESSION_LEVEL, MAX_PART_MB
	// KMSKeyID encrypts output with SSE-KMS (KMS_KEY_ID); default SSE-S3.
	KMSKeyID string
	// TempDir spools output parts before upload (TMPDIR; Lambda: /tmp,
	// sized by the function's ephemeral storage).
	TempDir string
}

// loadConfig reads the configuration and reports every problem at once.
func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Job: repartition.JobConfig{
			Export:        getenv("EXPORT_LOCATION"),
			Out:           getenv("OUTPUT_LOCATION"),
			TypeAttribute: getenv("TYPE_ATTRIBUTE"),
			Transform:     getenv("TRANSFORM"),
			Compression:   repartition.Compression(getenv("COMPRESSION")),
		},
		KMSKeyID: getenv("KMS_KEY_ID"),
		TempDir:  getenv("TMPDIR"),
	}
	var errs []error
	if c.Job.Compression != "" {
		if _, err := repartition.ParseCompression(string(c.Job.Compression)); err != nil {
			errs = append(errs, fmt.Errorf("COMPRESSION: %w", err))
		}
	}
	if v := getenv("COMPRESSION_LEVEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("COMPRESSION_LEVEL %q: want a whole number", v))
		}
		c.Job.Level = n
	}
	if v := getenv("MAX_PART_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("MAX_PART_MB %q: want a whole number of MB, at least 1", v))
		}
		c.Job.MaxPartBytes = n << 20
	}
	for name, v := range map[string]string{"EXPORT_LOCATION": c.Job.Export, "OUTPUT_LOCATION": c.Job.Out} {
		if v == "" {
			continue
		}
		if _, err := objstore.Parse(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if c.Job.Transform != "" {
		if _, err := repartition.DefaultTransforms().Lookup(c.Job.Transform); err != nil {
			errs = append(errs, fmt.Errorf("TRANSFORM: %w", err))
		}
	}
	return c, errors.Join(errs...)
}
