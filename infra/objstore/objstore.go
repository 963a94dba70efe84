// Package objstore is the one object store the tools read and write: a
// local directory (Dir) or a prefix of an S3 bucket (S3), behind the same
// calls, keys and guarantees, so that every command works on either and an
// output written to one can be copied to the other.
//
// Keys are slash-separated and relative to the store's root. Every object is
// written all or nothing: a reader sees the whole object or none of it, even
// across a crash (a directory writes a temporary ".tmp-…" file, fsyncs and
// renames it; S3 stores an object only when its PutObject or its multipart
// upload completes). Small control objects (run markers, checkpoints) can be
// written conditionally: PutIfAbsent creates an object only if none exists
// (S3 If-None-Match: *, link(2) on a directory) and Swap replaces one only if
// it is still the version the caller read (S3 If-Match, a lock on the
// directory), so that two runs can never both believe they own an output.
//
// Names built from data (entity types, data file names) go through FitName,
// which keeps every path segment within NAME_MAX and every key within S3's
// 1,024 bytes, and writers refuse two names that would share one (Names). The conformance suite in objstoretest runs on
// both stores: on a directory, on gofakes3 in process, and on moto.
package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/objstore/internal/namehash"
)

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
	// Modified is when the object was last written: S3's LastModified, a
	// file's modification time.
	Modified time.Time
}

var (
	// ErrNotFound matches the error of reading a missing object.
	ErrNotFound = errors.New("objstore: object not found")
	// ErrPreconditionFailed matches the error of a conditional write whose
	// condition did not hold: PutIfAbsent of an existing object, Swap of an
	// object that is no longer the version given (or is missing).
	ErrPreconditionFailed = errors.New("objstore: precondition failed")
)

// Limits every key is held to, on both stores, so that an output written to
// one can be copied to the other.
const (
	// MaxKeyBytes is S3's limit on a key (the store's prefix included):
	// 1,024 bytes of UTF-8.
	MaxKeyBytes = 1024
	// MaxSegmentBytes is the longest path segment: NAME_MAX, the longest file
	// name on Linux and macOS file systems, 255 bytes.
	MaxSegmentBytes = 255
)

// Writer is an object being written by Create. Nothing is visible under its
// key until Commit returns nil; Abort, a failed Commit or a crash leaves no
// object (and Sweep removes what a crash left).
type Writer interface {
	io.Writer
	// Commit makes the object visible, entirely, under its key, replacing
	// any object of that name.
	Commit(ctx context.Context) error
	// Abort discards the object. It is safe after Commit (a no-op) and more
	// than once.
	Abort()
}

// Store is what both stores implement, and what the conformance suite
// checks. Callers declare the part they use. Implementations are safe for
// concurrent use; ctx bounds each call.
type Store interface {
	// Open returns an object's body; the caller closes it. A missing object
	// gives an error matching ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// List calls fn for every object whose key starts with prefix, in key
	// order, and stops at fn's first error, returning it. Temporary objects
	// of unfinished writes are never listed.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Put writes a whole object, replacing any of that name.
	Put(ctx context.Context, key string, body []byte) error
	// Create starts a streaming write of an object.
	Create(ctx context.Context, key string) (Writer, error)
	// Delete removes an object; a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// DeleteIf removes an object only if its version is still version (as
	// Get returned it); otherwise (another write came between, or the
	// object is gone) it fails with ErrPreconditionFailed. On S3 it is
	// DeleteObject with If-Match (general purpose buckets since
	// September 2025); a directory compares and removes under the lock
	// Swap takes.
	DeleteIf(ctx context.Context, key, version string) error
	// Get reads a small object whole, with its version: an opaque tag that
	// changes with every write (S3's ETag; a directory's MD5 of the content).
	Get(ctx context.Context, key string) (body []byte, version string, err error)
	// PutIfAbsent writes an object only if none exists under key, and
	// returns its version; otherwise it fails with ErrPreconditionFailed.
	PutIfAbsent(ctx context.Context, key string, body []byte) (version string, err error)
	// Swap replaces an object only if its version is still version, and
	// returns the new version; otherwise (another write came between, or
	// the object is gone) it fails with ErrPreconditionFailed.
	Swap(ctx context.Context, key string, body []byte, version string) (string, error)
	// Sweep removes what crashed writes left under prefix: a directory's
	// temporary files, S3's incomplete multipart uploads and this machine's
	// spool files of dead processes. It returns how many it removed. Only a
	// run that owns prefix (see Acquire) may sweep it: a write in progress
	// there would be lost.
	Sweep(ctx context.Context, prefix string) (int, error)
	// String names the store's root for people, as Parse reads it: a path
	// or s3://bucket/prefix.
	String() string
}

// Name renders a key under a store's root for messages.
func Name(root fmt.Stringer, key string) string {
	r := root.String()
	switch {
	case r == "":
		return key
	case key == "":
		return r
	}
	return strings.TrimSuffix(r, "/") + "/" + key
}

// ReadAll reads a whole (small) object.
func ReadAll(ctx context.Context, st interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	String() string
}, key string) (b []byte, err error) {
	r, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	b, err = io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("objstore: reading %s: %w", Name(st, key), err)
	}
	return b, nil
}

// ValidKey accepts slash-separated keys of non-empty segments other than
// "." and "..", without backslashes or NUL.
func ValidKey(key string) bool {
	if key == "" || strings.ContainsAny(key, "\\\x00") {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// checkKey is the test every write applies: a valid key, no segment longer
// than MaxSegmentBytes, and the whole key (prefix included) within
// MaxKeyBytes.
func checkKey(prefix, key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("objstore: invalid key %q: want slash-separated segments, none empty, \".\" or \"..\", no backslash or NUL", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if len(seg) > MaxSegmentBytes {
			return fmt.Errorf("objstore: key %q: segment of %d bytes, longer than a file name may be (%d)", key, len(seg), MaxSegmentBytes)
		}
	}
	if n := len(prefix) + len(key); n > MaxKeyBytes {
		return fmt.Errorf("objstore: key %q: %d bytes with the prefix, more than S3 allows (%d)", key, n, MaxKeyBytes)
	}
	return nil
}

// HashMark starts the part of a name that FitName replaced by a hash. The
// escapers of entity types (the archive's and the export's) always escape a
// leading '_', so a name that begins with it was never spelled by an item.
const HashMark = "_sha256-"

// hashedLen is what FitName's hash takes in place of a name: HashMark and
// the 64 hex digits of a SHA-256.
const hashedLen = len(HashMark) + 2*sha256.Size

// FitName returns prefix+name+suffix when it is at most max bytes long.
// Otherwise it replaces name by HashMark and the 64 hex digits of name's
// SHA-256 (hashedLen bytes), keeping prefix and suffix, so that the result
// fits when max leaves room for them. It is the one function every writer
// uses to build a path segment or key from data: an entity type (archive and
// export partitions), a data file's name (part names), an archive object
// (restored files). max is MaxSegmentBytes for a segment, or what a key's
// other parts leave.
//
// The whole hash is kept: no one can find two names with one SHA-256. Up to
// this version only its first 16 hex digits were (LegacyFitName), and two
// entity types with one such name can be found in minutes
// (testdata/fitname-collision-64.json). Every writer still refuses two names
// that one result stands for (Names), which a test can then arrange with
// objstoretest.SetNameHash.
func FitName(prefix, name, suffix string, max int) string {
	if len(prefix)+len(name)+len(suffix) <= max {
		return prefix + name + suffix
	}
	sum := namehash.Sum(name)
	return prefix + HashMark + hex.EncodeToString(sum[:]) + suffix
}

// LegacyFitName is FitName as versions before the whole hash spelled it:
// HashMark and the first 16 hex digits of name's SHA-256 (64 bits). Readers
// use it to find what those versions wrote, which may hold another name's
// data under the same name; no writer may use it.
func LegacyFitName(prefix, name, suffix string, max int) string {
	if len(prefix)+len(name)+len(suffix) <= max {
		return prefix + name + suffix
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + HashMark + hex.EncodeToString(sum[:8]) + suffix
}

// IsLegacyHashed reports whether a name (prefix and suffix removed) is a
// hash as LegacyFitName writes it: HashMark and 16 hex digits.
func IsLegacyHashed(name string) bool {
	h, ok := strings.CutPrefix(name, HashMark)
	return ok && len(h) == 16 && isHex(h)
}

// IsHashed reports whether a name (prefix and suffix removed) is a hash as
// FitName or LegacyFitName writes it.
func IsHashed(name string) bool {
	h, ok := strings.CutPrefix(name, HashMark)
	return ok && (len(h) == 16 || len(h) == 2*sha256.Size) && isHex(h)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ErrNameCollision matches the error of two names that a writer would store
// under one name built by FitName.
var ErrNameCollision = errors.New("two names shorten to one")

// nameCollisionError is the error of Names.Add: two names, one fitted name.
type nameCollisionError struct {
	// What the names are ("entity types", "data files").
	What string
	// Fitted is the one name; First the name it was given for first, Second
	// the other.
	Fitted, First, Second string
}

func (e *nameCollisionError) Error() string {
	return fmt.Sprintf("objstore: %s %s and %s both shorten to %q, which can stand for one of them only: refused, rather than mix their data",
		e.What, describeName(e.First), describeName(e.Second), e.Fitted)
}

// Is makes a nameCollisionError match ErrNameCollision.
func (e *nameCollisionError) Is(target error) bool { return target == ErrNameCollision }

// describeName quotes a name, cut if it is long; its SHA-256 tells apart
// two long names that begin alike.
func describeName(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s… (%d bytes, SHA-256 %s)", strconv.Quote(s[:48]), len(s), hex.EncodeToString(sum[:8]))
}

// Names records the names a writer built with FitName (or from it), each
// with the name it stands for, and refuses a second name for one of them:
// no writer stores two things under one name. The zero value is not ready:
// make one with NewNames. It is not safe for concurrent use.
type Names struct {
	what string
	m    map[string]string
}

// NewNames returns an empty record of names; what names them in errors
// ("entity types").
func NewNames(what string) *Names { return &Names{what: what, m: map[string]string{}} }

// Add records that fitted stands for name. It returns an error matching
// ErrNameCollision when fitted already stands for another name.
func (n *Names) Add(fitted, name string) error {
	if had, ok := n.m[fitted]; ok {
		if had == name {
			return nil
		}
		return &nameCollisionError{What: n.what, Fitted: fitted, First: had, Second: name}
	}
	n.m[fitted] = name
	return nil
}
