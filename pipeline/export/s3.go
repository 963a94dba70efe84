package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the part of the S3 client the S3 store uses: the multipart
// upload manager's calls, GetObject, ListObjectsV2 and DeleteObject.
// *s3.Client implements it.
type S3API interface {
	manager.UploadAPIClient
	s3.ListObjectsV2APIClient
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// S3Options configures an S3 store. The zero value works.
type S3Options struct {
	// KMSKeyID, when set, encrypts every object written with SSE-KMS under
	// this key; otherwise objects are written with SSE-S3 (AES256).
	KMSKeyID string
	// TempDir is where streamed objects are spooled before upload (default
	// os.TempDir(); on Lambda, /tmp). Spooling keeps memory flat however many
	// objects are open; the disk holds at most the open objects.
	TempDir string
	// PartSize is the multipart part size, and the size from which an object
	// is uploaded in parts. Default and minimum 8 MiB.
	PartSize int64
	// Concurrency is the number of parts of one object uploaded at once.
	// Default 4.
	Concurrency int
	// ReadRetries is how many times a broken download is resumed from where
	// it stopped (a ranged GET). Default 3.
	ReadRetries int
}

// S3 is a Store under a prefix of an S3 bucket. Every write carries
// server-side encryption (SSE-S3, or SSE-KMS with a key). Bodies are always
// seekable (bytes or a spooled file), so the SDK computes its checksum in a
// header and the store works over plain HTTP (local servers) as over HTTPS.
type S3 struct {
	client   S3API
	bucket   string
	prefix   string // "" or ending in "/"
	opts     S3Options
	uploader *manager.Uploader
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store for s3://bucket/prefix through client.
func NewS3(client S3API, bucket, prefix string, opts S3Options) *S3 {
	if opts.PartSize < 8<<20 {
		opts.PartSize = 8 << 20
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.ReadRetries <= 0 {
		opts.ReadRetries = 3
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	up := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = opts.PartSize
		u.Concurrency = opts.Concurrency
		u.LeavePartsOnError = false
	})
	return &S3{client: client, bucket: bucket, prefix: prefix, opts: opts, uploader: up}
}

// Bucket returns the store's bucket.
func (s *S3) Bucket() string { return s.bucket }

// Key returns the bucket key of a store key.
func (s *S3) Key(key string) string { return s.prefix + key }

// String implements Store.
func (s *S3) String() string { return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/") }

func (s *S3) url(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// Open implements Store. The body resumes a broken download with a ranged
// GET, up to ReadRetries times.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	r := &s3Reader{ctx: ctx, s: s, key: key}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
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
	if r.off > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", r.off))
		if r.etag != "" {
			in.IfMatch = aws.String(r.etag)
		}
	}
	out, err := r.s.client.GetObject(r.ctx, in)
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) {
			return fmt.Errorf("%w: %s", ErrNotFound, r.s.url(r.key))
		}
		return fmt.Errorf("export: get %s: %w", r.s.url(r.key), err)
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
			return 0, fmt.Errorf("export: reading %s at byte %d: %w", r.s.url(r.key), r.off, err)
		}
		r.retries++
		r.body.Close()
		if oerr := r.open(); oerr != nil {
			return 0, fmt.Errorf("export: reading %s at byte %d: %w (resuming: %v)", r.s.url(r.key), r.off, err, oerr)
		}
	}
}

func (r *s3Reader) Close() error { return r.body.Close() }

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string, fn func(Object) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(s.prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("export: list %s: %w", s.url(prefix), err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if err := fn(Object{Key: key, Size: aws.ToInt64(o.Size)}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *S3) sse(in *s3.PutObjectInput) {
	if s.opts.KMSKeyID != "" {
		in.ServerSideEncryption = s3types.ServerSideEncryptionAwsKms
		in.SSEKMSKeyId = aws.String(s.opts.KMSKeyID)
	} else {
		in.ServerSideEncryption = s3types.ServerSideEncryptionAes256
	}
}

// Put implements Store: one PutObject.
func (s *S3) Put(ctx context.Context, key string, body []byte) error {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(contentType(key)),
	}
	s.sse(in)
	if _, err := s.client.PutObject(ctx, in); err != nil {
		return fmt.Errorf("export: put %s: %w", s.url(key), err)
	}
	return nil
}

// Create implements Store: the object is spooled to a temporary file and
// uploaded by Commit, in parts from PartSize (the multipart upload is
// aborted on failure, so no partial object ever appears).
func (s *S3) Create(ctx context.Context, key string) (ObjectWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.opts.TempDir, "tributary-spool-*")
	if err != nil {
		return nil, fmt.Errorf("export: spooling %s: %w", s.url(key), err)
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
		err = fmt.Errorf("export: spooling %s: %w", w.s.url(w.key), err)
	}
	return n, err
}

func (w *s3Writer) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("export: %s: already committed or aborted", w.s.url(w.key))
	}
	defer w.Abort()
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: spooling %s: %w", w.s.url(w.key), err)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(w.s.bucket),
		Key:           aws.String(w.s.prefix + w.key),
		Body:          w.f,
		ContentLength: aws.Int64(w.n),
		ContentType:   aws.String(contentType(w.key)),
	}
	w.s.sse(in)
	var err error
	if w.n >= w.s.opts.PartSize {
		in.ContentLength = nil // the manager sizes each part
		_, err = w.s.uploader.Upload(ctx, in)
	} else {
		_, err = w.s.client.PutObject(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("export: put %s: %w", w.s.url(w.key), err)
	}
	return nil
}

func (w *s3Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) {
			return nil
		}
		return fmt.Errorf("export: delete %s: %w", s.url(key), err)
	}
	return nil
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
