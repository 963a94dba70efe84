package redrive

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Dir is a local copy of a destination (e.g. `aws s3 sync
// s3://bucket/prefix DIR`): every regular file under it, hidden ones
// excepted, is an object keyed by its slash-separated path below the
// directory.
type Dir string

var _ Objects = Dir("")

// List walks the directory in key order.
func (d Dir) List(ctx context.Context, fn func(key string) error) error {
	var keys []string
	err := filepath.WalkDir(string(d), func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), ".") && path != string(d) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.Type().IsRegular() {
			rel, err := filepath.Rel(string(d), path)
			if err != nil {
				return err
			}
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redrive: listing %s: %w", d, err)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// Get reads one file.
func (d Dir) Get(_ context.Context, key string) ([]byte, error) {
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(key)))
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxRecordBytes+1))
}

// S3API is the part of *s3.Client that S3 uses.
type S3API interface {
	ListObjectsV2(ctx context.Context, params *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, params *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var (
	_ S3API   = (*s3.Client)(nil)
	_ Objects = (*S3)(nil)
)

// S3 is a destination bucket, under a prefix.
type S3 struct {
	client         S3API
	bucket, prefix string
}

// NewS3 returns the objects of bucket under prefix ("" for all).
func NewS3(client S3API, bucket, prefix string) *S3 {
	return &S3{client: client, bucket: bucket, prefix: prefix}
}

// ParseURL splits s3://bucket/prefix.
func ParseURL(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URL", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%q has no bucket", u)
	}
	return bucket, prefix, nil
}

// List lists the keys under the prefix, in key order (S3 lists so),
// directory markers excepted. Keys are full S3 keys.
func (s *S3) List(ctx context.Context, fn func(key string) error) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)}
	if s.prefix != "" {
		in.Prefix = aws.String(s.prefix)
	}
	for {
		res, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return fmt.Errorf("redrive: listing s3://%s/%s: %w", s.bucket, s.prefix, err)
		}
		for _, o := range res.Contents {
			if k := aws.ToString(o.Key); !strings.HasSuffix(k, "/") {
				if err := fn(k); err != nil {
					return err
				}
			}
		}
		if !aws.ToBool(res.IsTruncated) || res.NextContinuationToken == nil {
			return nil
		}
		in.ContinuationToken = res.NextContinuationToken
	}
}

// Get reads one object.
func (s *S3) Get(ctx context.Context, key string) ([]byte, error) {
	res, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("redrive: reading s3://%s/%s: %w", s.bucket, key, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("redrive: reading s3://%s/%s: %w", s.bucket, key, err)
	}
	return b, nil
}
