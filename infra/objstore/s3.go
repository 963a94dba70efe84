package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3API is the part of the S3 client the S3 store uses: the transfer
// manager's calls, DeleteObject, and ListMultipartUploads and
// AbortMultipartUpload for Sweep. *s3.Client implements it.
type S3API interface {
	transfermanager.S3APIClient
	s3.ListMultipartUploadsAPIClient
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// S3Options configures an S3 store. The zero value works.
type S3Options struct {
	// KMSKeyID, when set, encrypts every object written with SSE-KMS under
	// this key (ID, ARN or alias); otherwise objects are written with
	// SSE-S3 (AES256).
	KMSKeyID string
	// TempDir is where streamed objects (Create) are spooled before upload
	// (default os.TempDir(); on Lambda, /tmp). Spooling keeps memory flat
	// however many objects are open; the disk holds at most the open ones.
	TempDir string
	// MultipartThreshold is the size from which an object is uploaded in
	// parts rather than by one PutObject. Default PartSize.
	MultipartThreshold int64
	// PartSize is the multipart part size. Default 8 MiB; at least 5 MiB,
	// S3's smallest part.
	PartSize int64
	// Concurrency is the number of parts of one object uploaded at once.
	// Default 4.
	Concurrency int
	// MaxUploads bounds the multipart uploads in flight at once. The
	// transfer manager holds Concurrency+1 parts of each in memory, so
	// memory stays under MaxUploads × (Concurrency+1) × PartSize however
	// many objects are written at once. Default 4.
	MaxUploads int
	// ReadRetries is how many times a broken download is resumed from where
	// it stopped (a ranged GET). Default 3.
	ReadRetries int
}

// MinPartSize is S3's smallest multipart part, 5 MiB.
const MinPartSize = 5 << 20

func (o S3Options) withDefaults() S3Options {
	if o.PartSize == 0 {
		o.PartSize = 8 << 20
	}
	o.PartSize = max(o.PartSize, MinPartSize)
	if o.MultipartThreshold <= 0 {
		o.MultipartThreshold = o.PartSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.MaxUploads <= 0 {
		o.MaxUploads = 4
	}
	if o.ReadRetries <= 0 {
		o.ReadRetries = 3
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	return o
}

// S3 is a Store under a prefix of an S3 bucket. Objects are uploaded by the
// SDK's transfer manager (feature/s3/transfermanager): one PutObject below
// MultipartThreshold, a multipart upload from it, aborted on failure so that
// no partial object ever appears. Every write carries server-side
// encryption (SSE-S3, or SSE-KMS with a key) and a CRC32 checksum; bodies
// are seekable, so the checksum goes in a header and the store works over
// plain HTTP (local servers) as over HTTPS. Conditional writes are single
// PutObject calls with If-None-Match: * (PutIfAbsent) or If-Match: <ETag>
// (Swap), which S3 evaluates atomically.
type S3 struct {
	client  S3API
	tm      *transfermanager.Client
	bucket  string
	prefix  string // "" or ending in "/"
	opts    S3Options
	uploads chan struct{}
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store for s3://bucket/prefix through client.
func NewS3(client S3API, bucket, prefix string, opts S3Options) *S3 {
	opts = opts.withDefaults()
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes = opts.PartSize
		o.MultipartUploadThreshold = opts.MultipartThreshold
		o.Concurrency = opts.Concurrency
		o.ChecksumAlgorithm = tmtypes.ChecksumAlgorithmCrc32
	})
	return &S3{client: client, tm: tm, bucket: bucket, prefix: prefix, opts: opts, uploads: make(chan struct{}, opts.MaxUploads)}
}

// Bucket returns the store's bucket.
func (s *S3) Bucket() string { return s.bucket }

// Key returns the bucket key of a store key.
func (s *S3) Key(key string) string { return s.prefix + key }

// KMSKeyID returns the SSE-KMS key objects are written with ("" for SSE-S3).
func (s *S3) KMSKeyID() string { return s.opts.KMSKeyID }

// String implements Store.
func (s *S3) String() string {
	return Location{Bucket: s.bucket, Prefix: strings.TrimSuffix(s.prefix, "/")}.String()
}

func (s *S3) url(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// Open implements Store. The body resumes a broken download with a ranged
// GET (If-Match the first response's ETag), up to ReadRetries times.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r := &s3Reader{ctx: ctx, s: s, key: key}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

// OpenVersion is Open of the object only while its version (its ETag,
// as Get returns it) is version: the body is that object's bytes, reads
// resumed after a broken download included. With version "" it opens
// whatever object is there. It returns the version it read. An object of
// another version fails with ErrPreconditionFailed (S3 If-Match); a
// missing one with ErrNotFound.
func (s *S3) OpenVersion(ctx context.Context, key, version string) (io.ReadCloser, string, error) {
	r := &s3Reader{ctx: ctx, s: s, key: key, etag: version}
	if err := r.open(); err != nil {
		return nil, "", err
	}
	return r, r.etag, nil
}

type s3Reader struct {
	ctx     context.Context
	s       *S3
	key     string
	body    io.ReadCloser
	off     int64
	retries int
	etag    string
}

func (r *s3Reader) open() error {
	in := &s3.GetObjectInput{Bucket: aws.String(r.s.bucket), Key: aws.String(r.s.prefix + r.key)}
	if r.etag != "" {
		in.IfMatch = aws.String(r.etag)
	}
	if r.off > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", r.off))
	}
	out, err := r.s.client.GetObject(r.ctx, in)
	if err != nil {
		if notFound(err) {
			return fmt.Errorf("%w: %s", ErrNotFound, r.s.url(r.key))
		}
		if code, status := apiError(err); r.etag != "" && (status == 412 || code == "PreconditionFailed") {
			return fmt.Errorf("%w: %s is no longer (or is not) the object of ETag %s", ErrPreconditionFailed, r.s.url(r.key), r.etag)
		}
		return fmt.Errorf("objstore: get %s: %w", r.s.url(r.key), err)
	}
	r.body = out.Body
	if r.etag == "" {
		r.etag = aws.ToString(out.ETag)
	}
	return nil
}

func (r *s3Reader) Read(p []byte) (int, error) {
	for {
		n, err := r.body.Read(p)
		r.off += int64(n)
		if err == nil || err == io.EOF || n > 0 {
			return n, err
		}
		if r.ctx.Err() != nil || r.retries >= r.s.opts.ReadRetries {
			return 0, fmt.Errorf("objstore: reading %s at byte %d: %w", r.s.url(r.key), r.off, err)
		}
		r.retries++
		_ = r.body.Close() // the broken body is dropped; its read error is the one that counts
		if oerr := r.open(); oerr != nil {
			return 0, fmt.Errorf("objstore: reading %s at byte %d: %w (resuming: %v)", r.s.url(r.key), r.off, err, oerr)
		}
	}
}

func (r *s3Reader) Close() error {
	if err := r.body.Close(); err != nil {
		return fmt.Errorf("objstore: closing %s: %w", r.s.url(r.key), err)
	}
	return nil
}

// Get implements Store; the version is the object's ETag.
func (s *S3) Get(ctx context.Context, key string) (_ []byte, _ string, err error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil {
		if notFound(err) {
			return nil, "", fmt.Errorf("%w: %s", ErrNotFound, s.url(key))
		}
		return nil, "", fmt.Errorf("objstore: get %s: %w", s.url(key), err)
	}
	defer func() {
		if cerr := out.Body.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("objstore: closing %s: %w", s.url(key), cerr))
		}
	}()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", fmt.Errorf("objstore: reading %s: %w", s.url(key), err)
	}
	return b, aws.ToString(out.ETag), nil
}

// List implements Store. Keys ending in "/" (the "folders" of the console)
// are not objects and are not listed.
func (s *S3) List(ctx context.Context, prefix string, fn func(Object) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("objstore: list %s: %w", s.url(prefix), err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if key == "" || strings.HasSuffix(key, "/") {
				continue
			}
			if err := fn(Object{Key: key, Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *S3) input(key string, body io.Reader) *transfermanager.UploadObjectInput {
	in := &transfermanager.UploadObjectInput{
		Bucket:      aws.String(s.bucket),
		Key:         aws.String(s.prefix + key),
		Body:        body,
		ContentType: aws.String(contentType(key)),
	}
	if s.opts.KMSKeyID != "" {
		in.ServerSideEncryption = tmtypes.ServerSideEncryptionAwsKms
		in.SSEKMSKeyID = aws.String(s.opts.KMSKeyID)
	} else {
		in.ServerSideEncryption = tmtypes.ServerSideEncryptionAes256
	}
	return in
}

// upload sends one object of size bytes through the transfer manager,
// holding a slot of MaxUploads when it goes multipart.
func (s *S3) upload(ctx context.Context, in *transfermanager.UploadObjectInput, size int64, optFns ...func(*transfermanager.Options)) (string, error) {
	if size >= s.opts.MultipartThreshold && len(optFns) == 0 {
		select {
		case s.uploads <- struct{}{}:
			defer func() { <-s.uploads }()
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
	out, err := s.tm.UploadObject(ctx, in, optFns...)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, body []byte) error {
	if err := checkKey(s.prefix, key); err != nil {
		return err
	}
	if _, err := s.upload(ctx, s.input(key, bytes.NewReader(body)), int64(len(body))); err != nil {
		return fmt.Errorf("objstore: put %s: %w", s.url(key), err)
	}
	return nil
}

// single makes an upload one PutObject whatever its size: the conditions of
// a conditional write are then evaluated by S3 on that one request.
func single(o *transfermanager.Options) { o.MultipartUploadThreshold = math.MaxInt64 }

// PutIfAbsent implements Store: PutObject with If-None-Match: *.
func (s *S3) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	if err := checkKey(s.prefix, key); err != nil {
		return "", err
	}
	in := s.input(key, bytes.NewReader(body))
	in.IfNoneMatch = aws.String("*")
	v, err := s.upload(ctx, in, int64(len(body)), single)
	if err != nil {
		return "", s.conditionErr("create", key, err)
	}
	return v, nil
}

// Swap implements Store: PutObject with If-Match: version.
func (s *S3) Swap(ctx context.Context, key string, body []byte, version string) (string, error) {
	if err := checkKey(s.prefix, key); err != nil {
		return "", err
	}
	in := s.input(key, bytes.NewReader(body))
	in.IfMatch = aws.String(version)
	v, err := s.upload(ctx, in, int64(len(body)), single)
	if err != nil {
		return "", s.conditionErr("replace", key, err)
	}
	return v, nil
}

// conditionErr maps a failed conditional write: 412 Precondition Failed
// (the condition does not hold), 409 ConditionalRequestConflict (another
// conditional write of the key was in progress) and 404 (If-Match of a
// missing object) to ErrPreconditionFailed.
func (s *S3) conditionErr(what, key string, err error) error {
	code, status := apiError(err)
	switch {
	case status == 412 || code == "PreconditionFailed":
		return fmt.Errorf("%w: %s: %s: S3 refused the conditional write", ErrPreconditionFailed, what, s.url(key))
	case status == 409 || code == "ConditionalRequestConflict":
		return fmt.Errorf("%w: %s: %s: another conditional write of it was in progress", ErrPreconditionFailed, what, s.url(key))
	case notFound(err):
		return fmt.Errorf("%w: %s: %s is gone", ErrPreconditionFailed, what, s.url(key))
	}
	return fmt.Errorf("objstore: %s %s: %w", what, s.url(key), err)
}

func apiError(err error) (code string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

func notFound(err error) bool {
	var nk *s3types.NoSuchKey
	var nf *s3types.NotFound
	if errors.As(err, &nk) || errors.As(err, &nf) {
		return true
	}
	code, status := apiError(err)
	return code == "NoSuchKey" || status == 404 && code != "NoSuchBucket"
}

// Create implements Store: the object is spooled to a temporary file and
// uploaded by Commit.
func (s *S3) Create(ctx context.Context, key string) (Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkKey(s.prefix, key); err != nil {
		return nil, err
	}
	f, err := spools.create(s.opts.TempDir)
	if err != nil {
		return nil, fmt.Errorf("objstore: spooling %s: %w", s.url(key), err)
	}
	return &s3Writer{s: s, key: key, f: f}, nil
}

type s3Writer struct {
	s    *S3
	key  string
	f    *os.File
	n    int64
	done bool
}

func (w *s3Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.n += int64(n)
	if err != nil {
		err = fmt.Errorf("objstore: spooling %s: %w", w.s.url(w.key), err)
	}
	return n, err
}

func (w *s3Writer) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("objstore: %s: already committed or aborted", w.s.url(w.key))
	}
	defer w.Abort()
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("objstore: spooling %s: %w", w.s.url(w.key), err)
	}
	if _, err := w.s.upload(ctx, w.s.input(w.key, w.f), w.n); err != nil {
		return fmt.Errorf("objstore: put %s: %w", w.s.url(w.key), err)
	}
	return nil
}

func (w *s3Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	spools.remove(w.f)
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil && !notFound(err) {
		return fmt.Errorf("objstore: delete %s: %w", s.url(key), err)
	}
	return nil
}

// DeleteIf implements Store with DeleteObject If-Match: S3 answers 412 for
// another ETag and 404 for a missing object, both ErrPreconditionFailed.
func (s *S3) DeleteIf(ctx context.Context, key, version string) error {
	if err := checkKey(s.prefix, key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key), IfMatch: aws.String(version)})
	if err != nil {
		return s.conditionErr("delete", key, err)
	}
	return nil
}

// Sweep implements Store: it aborts the incomplete multipart uploads under
// prefix (a process killed during an upload leaves its parts, billed, until
// someone aborts them) and removes the spool files of dead processes from
// TempDir.
func (s *S3) Sweep(ctx context.Context, prefix string) (int, error) {
	n := spools.sweep(s.opts.TempDir)
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if code, _ := apiError(err); code == "NoSuchUpload" {
			return n, nil // gofakes3's answer for a bucket that never had an upload
		}
		if err != nil {
			return n, fmt.Errorf("objstore: listing the multipart uploads under %s: %w", s.url(prefix), err)
		}
		for _, u := range page.Uploads {
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.bucket), Key: u.Key, UploadId: u.UploadId})
			if err != nil && !notFound(err) {
				return n, fmt.Errorf("objstore: aborting the upload of s3://%s/%s: %w", s.bucket, aws.ToString(u.Key), err)
			}
			n++
		}
	}
	return n, nil
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".gz"):
		return "application/gzip"
	case strings.HasSuffix(key, ".zst"):
		return "application/zstd"
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

// spools tracks this process's spool files, so that the spool files of
// processes that died (a killed CLI, a timed-out Lambda invocation, whose
// /tmp the next invocation inherits) can be told from live ones and
// removed: a spool file is named after its process, and one of this process
// that no writer holds open was left by an earlier process of the same PID.
var spools = spoolSet{open: map[string]bool{}, swept: map[string]bool{}}

type spoolSet struct {
	mu    sync.Mutex
	open  map[string]bool // paths of this process's open spool files
	swept map[string]bool // directories swept once already
}

const spoolPrefix = "tributary-spool-"

func (s *spoolSet) create(dir string) (*os.File, error) {
	s.mu.Lock()
	first := !s.swept[dir]
	s.swept[dir] = true
	s.mu.Unlock()
	if first {
		s.sweep(dir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-*", spoolPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	s.open[f.Name()] = true
	return f, nil
}

func (s *spoolSet) remove(f *os.File) {
	// The upload is done or abandoned; a spool file left behind is no
	// writer's once it leaves open, and the next sweep removes it.
	_ = f.Close()
	_ = os.Remove(f.Name())
	s.mu.Lock()
	delete(s.open, f.Name())
	s.mu.Unlock()
}

// sweep removes dir's spool files of dead processes, and this process's
// that no writer holds; it returns how many it removed.
func (s *spoolSet) sweep(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), spoolPrefix)
		if !ok || e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if pid == os.Getpid() && s.open[path] || pid != os.Getpid() && alive(pid) {
			continue
		}
		if os.Remove(path) == nil {
			n++
		}
	}
	return n
}
