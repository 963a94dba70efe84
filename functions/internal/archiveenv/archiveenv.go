// Package archiveenv reads where a TTL archive is from a function's
// environment, as the archiver (which writes it) and the compactor (which
// compacts it) both take it.
package archiveenv

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/archive"
)

// Location is an archive's place: an S3 bucket or a local directory, the
// prefix under it, and the KMS key its objects are written with.
type Location struct {
	Bucket, Dir, Prefix, KMSKeyID string
}

// Read reads ARCHIVE_BUCKET (S3) or ARCHIVE_DIR (a local directory),
// ARCHIVE_PREFIX and ARCHIVE_KMS_KEY_ID with getenv, and returns every
// problem with them, each naming its variable.
func Read(getenv func(string) string) (Location, []error) {
	l := Location{
		Bucket: strings.TrimSpace(getenv("ARCHIVE_BUCKET")), Dir: getenv("ARCHIVE_DIR"),
		Prefix: getenv("ARCHIVE_PREFIX"), KMSKeyID: strings.TrimSpace(getenv("ARCHIVE_KMS_KEY_ID")),
	}
	var errs []error
	switch {
	case l.Bucket == "" && l.Dir == "":
		errs = append(errs, errors.New("set ARCHIVE_BUCKET (S3) or ARCHIVE_DIR (local directory)"))
	case l.Bucket != "" && l.Dir != "":
		errs = append(errs, errors.New("set only one of ARCHIVE_BUCKET and ARCHIVE_DIR"))
	}
	if l.Bucket != "" {
		if err := objstore.ValidBucket(l.Bucket); err != nil {
			errs = append(errs, fmt.Errorf("ARCHIVE_BUCKET: %w", err))
		}
	}
	if l.KMSKeyID != "" && l.Bucket == "" {
		errs = append(errs, errors.New("ARCHIVE_KMS_KEY_ID needs ARCHIVE_BUCKET: a local directory is not encrypted"))
	}
	if err := archive.ValidatePrefix(l.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("ARCHIVE_PREFIX: %w", err))
	}
	return l, errs
}
