// Package awstest connects integration tests to the AWS-protocol server
// (moto) that the test harness starts, and provides small helpers for
// creating uniquely named, self-cleaning resources on it.
//
// The harness (.ci/servers.sh run, used by `make test-integration`) exports
// TRIBUTARY_MOTO_URL and TRIBUTARY_REQUIRE_INTEGRATION=1. Without a server,
// tests that call [MotoURL] (directly or through [Config] and the client
// constructors) skip themselves, unless TRIBUTARY_REQUIRE_INTEGRATION=1, in
// which case they fail: the harness promised a server.
//
// Integration test names must contain "Integration" so that the Makefile's
// `-run Integration` filter selects them.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const (
	// EnvMotoURL holds the base URL of the AWS-protocol server.
	EnvMotoURL = "TRIBUTARY_MOTO_URL"
	// EnvRequireIntegration is the variable that, when "1", turns a missing
	// server into a failure.
	EnvRequireIntegration = "TRIBUTARY_REQUIRE_INTEGRATION"

	// Region is the region every test client uses.
	Region = "us-east-1"

	skipMessage = "integration test: no AWS-protocol server; run `make test-integration` (or set TRIBUTARY_MOTO_URL)"
)

// MotoURL returns the AWS-protocol server's base URL from TRIBUTARY_MOTO_URL.
// If it is unset, the test fails when TRIBUTARY_REQUIRE_INTEGRATION=1 and is
// skipped otherwise.
func MotoURL(t testing.TB) string {
	t.Helper()
	if u := strings.TrimRight(os.Getenv(EnvMotoURL), "/"); u != "" {
		return u
	}
	if os.Getenv(EnvRequireIntegration) == "1" {
		t.Fatal(EnvRequireIntegration + "=1 but " + EnvMotoURL + " is unset: the harness did not provide an AWS-protocol server")
	}
	t.Skip(skipMessage)
	return ""
}

// Config returns an AWS config aimed at the test server: static dummy
// credentials, region us-east-1, BaseEndpoint set to [MotoURL]. It loads no
// shared config or environment (it never reads ~/.aws).
func Config(t testing.TB) aws.Config {
	t.Helper()
	url := MotoURL(t)
	return aws.Config{
		Region:       Region,
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("test", "test", "")),
		BaseEndpoint: aws.String(url),
	}
}

// DynamoDB returns a DynamoDB client for the test server.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(Config(t))
}

// Streams returns a DynamoDB Streams client for the test server.
func Streams(t testing.TB) *dynamodbstreams.Client {
	t.Helper()
	return dynamodbstreams.NewFromConfig(Config(t))
}

// Kinesis returns a Kinesis client for the test server.
func Kinesis(t testing.TB) *kinesis.Client {
	t.Helper()
	return kinesis.NewFromConfig(Config(t))
}

// S3 returns a path-style S3 client for the test server; opts adjust it.
func S3(t testing.TB, opts ...func(*s3.Options)) *s3.Client {
	t.Helper()
	return s3.NewFromConfig(Config(t), append([]func(*s3.Options){func(o *s3.Options) {
		o.UsePathStyle = true
		// Test servers send no response checksums; do not log each one.
		o.DisableLogOutputChecksumValidationSkipped = true
	}}, opts...)...)
}

const (
	maxNameLen   = 63
	randomHexLen = 12 // 6 random bytes
)

// UniqueName returns a name made of prefix and the test's name plus a random
// suffix, valid as a DynamoDB table, Kinesis stream and S3 bucket name:
// 3–63 characters of lowercase letters, digits and single hyphens, starting
// and ending with a letter or digit. A 48-bit random suffix makes names
// unique per call, test and run (the server is shared by every package
// testing in parallel).
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b [randomHexLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("awstest.UniqueName: %v", err)
	}
	suffix := hex.EncodeToString(b[:])

	base := sanitize(prefix + "-" + t.Name())
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "t-" + base
	}
	// S3 reserves these prefixes.
	if strings.HasPrefix(base, "xn-") || strings.HasPrefix(base, "sthree-") || strings.HasPrefix(base, "amzn-s3-demo-") {
		base = "t-" + base
	}
	if limit := maxNameLen - 1 - len(suffix); len(base) > limit {
		base = base[:limit]
	}
	base = strings.TrimRight(base, "-")
	return base + "-" + suffix
}

// sanitize lowercases s, maps every run of other characters to a single
// hyphen and trims hyphens from both ends.
func sanitize(s string) string {
	var sb strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
			hyphen = false
		} else if !hyphen {
			sb.WriteByte('-')
			hyphen = true
		}
	}
	return strings.Trim(sb.String(), "-")
}

// CreateTable creates a PAY_PER_REQUEST table with a string hash key "PK"
// and a string range key "SK", with a NEW_AND_OLD_IMAGES stream when
// streams is true, waits until it is ACTIVE and registers a cleanup that
// deletes it.
func CreateTable(ctx context.Context, t testing.TB, c *dynamodb.Client, name string, streams bool) {
	t.Helper()
	view := types.StreamViewType("")
	if streams {
		view = types.StreamViewTypeNewAndOldImages
	}
	CreateTableView(ctx, t, c, name, view)
}

// CreateTableView is CreateTable with a stream of the given view type ("":
// no stream).
func CreateTableView(ctx context.Context, t testing.TB, c *dynamodb.Client, name string, view types.StreamViewType) {
	t.Helper()
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
		},
	}
	if view != "" {
		in.StreamSpecification = &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: view,
		}
	}
	// The SDK retries a request whose response it did not get (a loaded
	// test server can be slow to answer): the retry of a CreateTable the
	// server carried out finds the table. Names are unique to the test
	// (UniqueName's random suffix), so a table "in use" under this one is
	// this call's own.
	_, err := c.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		t.Fatalf("awstest.CreateTable %s: %v", name, err)
	}
	DeleteTableAtEnd(t, c, name)

	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		t.Fatalf("awstest.CreateTable %s: waiting for ACTIVE: %v", name, err)
	}
}

// DeleteTableAtEnd registers a cleanup that deletes table name, for a table
// that the code under test creates (or may create): a table that is not
// there is no error, any other failure to delete it fails t.
func DeleteTableAtEnd(t testing.TB, c *dynamodb.Client, name string) {
	t.Cleanup(func() {
		// The test's context may already be canceled here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var notFound *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &notFound) {
			t.Errorf("awstest: deleting table %s: %v", name, err)
		}
	})
}

// CreateStream creates a Kinesis data stream of shards shards, named from
// prefix and the test (UniqueName), waits until it is ACTIVE, registers a
// cleanup that deletes it, and returns its name.
func CreateStream(ctx context.Context, t testing.TB, c *kinesis.Client, prefix string, shards int) string {
	t.Helper()
	name := UniqueName(t, prefix)
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(int32(shards))}); err != nil {
		t.Fatalf("awstest.CreateStream %s: %v", name, err)
	}
	t.Cleanup(func() {
		// The test's context may already be canceled here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(name), EnforceConsumerDeletion: aws.Bool(true)}); err != nil {
			t.Errorf("awstest: deleting stream %s: %v", name, err)
		}
	})
	w := kinesis.NewStreamExistsWaiter(c, func(o *kinesis.StreamExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatalf("awstest.CreateStream %s: waiting for ACTIVE: %v", name, err)
	}
	return name
}
