package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the part of the S3 client the S3 store uses: the calls of the
// multipart upload manager, ListObjectsV2 and GetObject. *s3.Client
// implements it.
type S3API interface {
	manager.UploadAPIClient
	s3.ListObjectsV2APIClient
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3Options configures an S3 store. The zero value works.
type S3Options struct {
	// KMSKeyID, when set, encrypts every object with SSE-KMS under this key
	// (ID, ARN or alias). Otherwise every object is encrypted with SSE-S3
	// (AES256).
	KMSKeyID string
	// MultipartThreshold is the size from which an object is uploaded by the
	// SDK's multipart upload manager rather than one PutObject. Default 5 MiB,
	// S3's smallest part: below it the manager would send one PutObject anyway.
	MultipartThreshold int64
	// PartSize is the multipart part size. Default and minimum 5 MiB.
	PartSize int64
	// Concurrency is the number of parts of one object uploaded at once.
	// Default 5.
	Concurrency int
}

// Defaults for S3Options.
const (
	DefaultMultipartThreshold = manager.MinUploadPartSize
	DefaultPartSize           = manager.MinUploadPartSize
)

// S3 is a Store in an S3 bucket. Every write carries server-side
// encryption: SSE-S3 by default, SSE-KMS with a configured key. Bodies are
// always seekable, so the SDK computes its default CRC32 checksum in a header
// and the store works over plain HTTP (local servers) as over HTTPS.
type S3 struct {
	client   S3API
	bucket   string
	opts     S3Options
	uploader *manager.Uploader
}

var _ Store = (*S3)(nil)

// NewS3 returns a Store writing to bucket through client.
func NewS3(client S3API, bucket string, opts S3Options) *S3 {
	if opts.MultipartThreshold <= 0 {
		opts.MultipartThreshold = DefaultMultipartThreshold
	}
	if opts.PartSize < manager.MinUploadPartSize {
		opts.PartSize = DefaultPartSize
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = manager.DefaultUploadConcurrency
	}
	up := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = opts.PartSize
		u.Concurrency = opts.Concurrency
		u.LeavePartsOnError = false // abort the upload on failure
	})
	return &S3{client: client, bucket: bucket, opts: opts, uploader: up}
}

// Bucket returns the bucket the store writes to.
func (s *S3) Bucket() string { return s.bucket }

// putInput returns the PutObject input for key, encryption included.
func (s *S3) putInput(key string, body []byte) *s3.PutObjectInput {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/gzip"),
	}
	if s.opts.KMSKeyID != "" {
		in.ServerSideEncryption = s3types.ServerSideEncryptionAwsKms
		in.SSEKMSKeyId = aws.String(s.opts.KMSKeyID)
	} else {
		in.ServerSideEncryption = s3types.ServerSideEncryptionAes256
	}
	return in
}

// Put implements Putter: one PutObject below the multipart threshold, the
// multipart upload manager from it (which aborts the upload on failure, so
// no object appears).
func (s *S3) Put(ctx context.Context, key string, body []byte) error {
	in := s.putInput(key, body)
	var err error
	if int64(len(body)) >= s.opts.MultipartThreshold {
		_, err = s.uploader.Upload(ctx, in)
	} else {
		_, err = s.client.PutObject(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("archive: put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// List implements Source.
func (s *S3) List(ctx context.Context, prefix string, fn func(Object) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("archive: list s3://%s/%s: %w", s.bucket, prefix, err)
		}
		for _, o := range page.Contents {
			if err := fn(Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Open implements Source.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) {
			return nil, fmt.Errorf("%w: s3://%s/%s", ErrNotFound, s.bucket, key)
		}
		return nil, fmt.Errorf("archive: get s3://%s/%s: %w", s.bucket, key, err)
	}
	return out.Body, nil
}
