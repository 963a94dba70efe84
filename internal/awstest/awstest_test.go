package awstest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// validName: lowercase letters, digits and single hyphens, starting and
// ending with a letter or digit, 3–63 characters.
var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9]|-[a-z0-9])+$`)

func TestUniqueName(t *testing.T) {
	seen := map[string]bool{}
	for _, prefix := range []string{
		"", "orders", "Orders_Table", "--x--", "xn--bucket", "sthree-x", "9lives",
		strings.Repeat("VeryLongPrefix.", 10), "ünïcødé prefix", "a..b__c",
	} {
		for range 50 {
			n := UniqueName(t, prefix)
			if len(n) < 3 || len(n) > 63 || !validName.MatchString(n) {
				t.Errorf("UniqueName(%q) = %q (len %d): not a valid table/stream/bucket name", prefix, n, len(n))
			}
			if strings.HasPrefix(n, "xn-") || strings.HasPrefix(n, "sthree-") || (n[0] >= '0' && n[0] <= '9') {
				t.Errorf("UniqueName(%q) = %q: reserved or non-letter start", prefix, n)
			}
			if seen[n] {
				t.Errorf("UniqueName(%q) = %q: duplicate", prefix, n)
			}
			seen[n] = true
		}
	}
	if n := UniqueName(t, "orders"); !strings.HasPrefix(n, "orders-testuniquename-") {
		t.Errorf("UniqueName(orders) = %q; want prefix and test name in it", n)
	}
}

// fakeTB records how MotoURL ended the test. Skip and Fatal end the calling
// goroutine, as the real ones do.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped, f.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.failed, f.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func callMotoURL() (f *fakeTB, url string) {
	f = &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url = MotoURL(f)
	}()
	<-done
	return f, url
}

func TestMotoURLEnvironment(t *testing.T) {
	t.Run("set", func(t *testing.T) {
		t.Setenv(EnvMotoURL, "http://127.0.0.1:1234/")
		t.Setenv(EnvRequireIntegration, "1")
		f, url := callMotoURL()
		if f.skipped || f.failed || url != "http://127.0.0.1:1234" {
			t.Errorf("MotoURL = %q (skipped %v, failed %v); want http://127.0.0.1:1234", url, f.skipped, f.failed)
		}
	})
	t.Run("unset skips", func(t *testing.T) {
		t.Setenv(EnvMotoURL, "")
		t.Setenv(EnvRequireIntegration, "")
		f, _ := callMotoURL()
		if !f.skipped || f.failed || !strings.Contains(f.msg, "make test-integration") {
			t.Errorf("skipped %v, failed %v, msg %q; want a skip pointing at make test-integration", f.skipped, f.failed, f.msg)
		}
	})
	t.Run("unset but required fails", func(t *testing.T) {
		t.Setenv(EnvMotoURL, "")
		t.Setenv(EnvRequireIntegration, "1")
		f, _ := callMotoURL()
		if !f.failed || f.skipped {
			t.Errorf("skipped %v, failed %v; want a failure", f.skipped, f.failed)
		}
	})
}

func TestIntegrationMoto(t *testing.T) {
	t.Parallel()
	url := MotoURL(t)
	t.Logf("server: %s", url)

	cfg := Config(t)
	if cfg.Region != "us-east-1" || aws.ToString(cfg.BaseEndpoint) != url {
		t.Fatalf("Config: region %q, endpoint %q", cfg.Region, aws.ToString(cfg.BaseEndpoint))
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || creds.AccessKeyID != "test" || creds.SecretAccessKey != "test" {
		t.Fatalf("Config credentials = %+v, %v; want static test/test", creds, err)
	}

	t.Run("DynamoDBAndStreams", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		db := DynamoDB(t)
		table := UniqueName(t, "tbl")
		CreateTable(ctx, t, db, table, true)

		desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("DescribeTable: %v", err)
		}
		if desc.Table.TableStatus != ddbtypes.TableStatusActive {
			t.Errorf("table status = %s; want ACTIVE", desc.Table.TableStatus)
		}
		if bm := desc.Table.BillingModeSummary; bm == nil || bm.BillingMode != ddbtypes.BillingModePayPerRequest {
			t.Errorf("billing mode = %+v; want PAY_PER_REQUEST", bm)
		}
		if ss := desc.Table.StreamSpecification; ss == nil || !aws.ToBool(ss.StreamEnabled) || ss.StreamViewType != ddbtypes.StreamViewTypeNewAndOldImages {
			t.Errorf("stream specification = %+v; want enabled NEW_AND_OLD_IMAGES", ss)
		}
		streamARN := aws.ToString(desc.Table.LatestStreamArn)
		if streamARN == "" {
			t.Fatal("table has no LatestStreamArn")
		}

		item := map[string]ddbtypes.AttributeValue{
			"PK":    &ddbtypes.AttributeValueMemberS{Value: "order#1"},
			"SK":    &ddbtypes.AttributeValueMemberS{Value: "v1"},
			"Total": &ddbtypes.AttributeValueMemberN{Value: "42"},
		}
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
		got, err := db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			Key:            map[string]ddbtypes.AttributeValue{"PK": item["PK"], "SK": item["SK"]},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatalf("GetItem: %v", err)
		}
		if n, ok := got.Item["Total"].(*ddbtypes.AttributeValueMemberN); !ok || n.Value != "42" {
			t.Fatalf("GetItem Total = %#v; want N 42", got.Item["Total"])
		}

		st := Streams(t)
		list, err := st.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("ListStreams: %v", err)
		}
		if len(list.Streams) != 1 || aws.ToString(list.Streams[0].StreamArn) != streamARN || aws.ToString(list.Streams[0].TableName) != table {
			t.Fatalf("ListStreams = %+v; want exactly %s for table %s", list.Streams, streamARN, table)
		}
		sd, err := st.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
		if err != nil {
			t.Fatalf("DescribeStream: %v", err)
		}
		if sd.StreamDescription.StreamViewType != streamtypes.StreamViewTypeNewAndOldImages || len(sd.StreamDescription.Shards) == 0 {
			t.Fatalf("DescribeStream = view %s, %d shards; want NEW_AND_OLD_IMAGES and a shard",
				sd.StreamDescription.StreamViewType, len(sd.StreamDescription.Shards))
		}
		it, err := st.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn:         aws.String(streamARN),
			ShardId:           sd.StreamDescription.Shards[0].ShardId,
			ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatalf("GetShardIterator (streams): %v", err)
		}
		recs, err := st.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatalf("GetRecords (streams): %v", err)
		}
		if len(recs.Records) != 1 || recs.Records[0].EventName != streamtypes.OperationTypeInsert {
			t.Fatalf("stream records = %+v; want one INSERT", recs.Records)
		}
		img := recs.Records[0].Dynamodb.NewImage
		if pk, ok := img["PK"].(*streamtypes.AttributeValueMemberS); !ok || pk.Value != "order#1" {
			t.Errorf("stream NewImage PK = %#v; want order#1", img["PK"])
		}
	})

	t.Run("Kinesis", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		k := Kinesis(t)
		stream := CreateStream(ctx, t, k, "stream", 1)

		data := []byte(`{"order":"1","total":42}`)
		put, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(stream), PartitionKey: aws.String("order#1"), Data: data})
		if err != nil {
			t.Fatalf("PutRecord: %v", err)
		}
		it, err := k.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
			StreamName:        aws.String(stream),
			ShardId:           put.ShardId,
			ShardIteratorType: kinesistypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatalf("GetShardIterator: %v", err)
		}
		recs, err := k.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatalf("GetRecords: %v", err)
		}
		if len(recs.Records) != 1 {
			t.Fatalf("GetRecords returned %d records; want 1", len(recs.Records))
		}
		r := recs.Records[0]
		if !bytes.Equal(r.Data, data) || aws.ToString(r.PartitionKey) != "order#1" || aws.ToString(r.SequenceNumber) != aws.ToString(put.SequenceNumber) {
			t.Fatalf("record = data %q key %q seq %q; want %q order#1 %q",
				r.Data, aws.ToString(r.PartitionKey), aws.ToString(r.SequenceNumber), data, aws.ToString(put.SequenceNumber))
		}
	})

	t.Run("S3", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c := S3(t)
		const key = "projections/orders/part-0001.json"
		var bucket string
		t.Run("CreateBucket", func(t *testing.T) {
			bucket = CreateBucket(ctx, t, c, "bucket")
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
				t.Fatalf("PutObject: %v", err)
			}
		})
		// The subtest's cleanup emptied and deleted its bucket.
		if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
			t.Errorf("bucket %s still there after its test ended", bucket)
		}
		bucket = CreateBucket(ctx, t, c, "bucket")

		body := []byte("hello from tributary\n")
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(body), ContentType: aws.String("application/json"),
		}); err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		defer func() { _ = got.Body.Close() }() // read to the end: nothing to report
		b, err := io.ReadAll(got.Body)
		if err != nil {
			t.Fatalf("reading object: %v", err)
		}
		if !bytes.Equal(b, body) || aws.ToString(got.ContentType) != "application/json" {
			t.Fatalf("GetObject = %q (%s); want %q (application/json)", b, aws.ToString(got.ContentType), body)
		}
	})
}
