package reimport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/retry"
)

// importAPI is the part of the DynamoDB client that ImportTable and
// StartBulkPutItems need. *dynamodb.Client implements it.
type importAPI interface {
	ImportTable(ctx context.Context, in *dynamodb.ImportTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ImportTableOutput, error)
	DescribeImport(ctx context.Context, in *dynamodb.DescribeImportInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeImportOutput, error)
	StartBulkPutItems(ctx context.Context, in *dynamodb.StartBulkPutItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.StartBulkPutItemsOutput, error)
	DescribeBulkOperation(ctx context.Context, in *dynamodb.DescribeBulkOperationInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeBulkOperationOutput, error)
}

// KeySchema is a new table's primary key.
type KeySchema struct {
	HashKey, RangeKey string
	// HashType and RangeType are S, N or B. Default S.
	HashType, RangeType types.ScalarAttributeType
}

// ImportOptions configures StartImport.
type ImportOptions struct {
	Table  string
	Entity string
	Key    KeySchema
}

// s3Prefix returns the bucket and key prefix of an entity's parts, checking
// that the output is in S3 and that the prefix holds exactly the parts the
// manifest lists, each of its size (ImportTable and StartBulkPutItems read
// every object under it, as it is).
func s3Prefix(ctx context.Context, out *Output, m *repartition.EntityManifest) (bucket, prefix string, err error) {
	s3s, ok := out.store.(*objstore.S3)
	if !ok {
		return "", "", fmt.Errorf("reimport: %s is not in S3: ImportTable and StartBulkPutItems read from S3 (use --table to load from a directory)", out.store)
	}
	want := map[string]int64{}
	for _, p := range m.Parts {
		want[p.Key] = p.Bytes
	}
	var extra []string
	err = out.store.List(ctx, m.ImportPrefix, func(o objstore.Object) error {
		size, ok := want[o.Key]
		switch {
		case !ok:
			extra = append(extra, o.Key)
		case o.Size != size:
			return export.Corrupt(objstore.Name(out.store, o.Key), 0, fmt.Errorf("%d bytes, the manifest says %d: another writer replaced it", o.Size, size))
		}
		delete(want, o.Key)
		return nil
	})
	if err != nil {
		return "", "", err
	}
	if len(extra) > 0 {
		return "", "", fmt.Errorf("reimport: %s holds %d objects the manifest does not list (e.g. %s); they would be imported too", objstore.Name(out.store, m.ImportPrefix), len(extra), extra[0])
	}
	if len(want) > 0 {
		var missing []string
		for k := range want {
			missing = append(missing, k)
		}
		sort.Strings(missing)
		return "", "", fmt.Errorf("reimport: %d parts of %s are missing, e.g. %s", len(missing), m.Segment, missing[0])
	}
	return s3s.Bucket(), s3s.Key(m.ImportPrefix), nil
}

// clientToken derives an idempotency token from an entity's content and
// the request's target, so that rerunning the same command never starts a
// second operation (within DynamoDB's 8-hour idempotency window).
func clientToken(kind, table string, m *repartition.EntityManifest, extra ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%s\n", kind, table, m.Segment, m.PartsSHA256, strings.Join(extra, "\n"))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// StartImport starts ImportTable of one entity's parts into a new table.
func StartImport(ctx context.Context, client importAPI, out *Output, opts ImportOptions) (*types.ImportTableDescription, error) {
	m, err := out.Entity(opts.Entity)
	if err != nil {
		return nil, err
	}
	if opts.Table == "" || opts.Key.HashKey == "" {
		return nil, errors.New("reimport: ImportTable needs a table name and a hash key")
	}
	bucket, prefix, err := s3Prefix(ctx, out, m)
	if err != nil {
		return nil, err
	}
	k := opts.Key
	if k.HashType == "" {
		k.HashType = types.ScalarAttributeTypeS
	}
	if k.RangeType == "" {
		k.RangeType = types.ScalarAttributeTypeS
	}
	attrs := []types.AttributeDefinition{{AttributeName: aws.String(k.HashKey), AttributeType: k.HashType}}
	schema := []types.KeySchemaElement{{AttributeName: aws.String(k.HashKey), KeyType: types.KeyTypeHash}}
	if k.RangeKey != "" {
		attrs = append(attrs, types.AttributeDefinition{AttributeName: aws.String(k.RangeKey), AttributeType: k.RangeType})
		schema = append(schema, types.KeySchemaElement{AttributeName: aws.String(k.RangeKey), KeyType: types.KeyTypeRange})
	}
	in := &dynamodb.ImportTableInput{
		ClientToken:          aws.String(clientToken("ImportTable", opts.Table, m, k.HashKey, string(k.HashType), k.RangeKey, string(k.RangeType))),
		InputFormat:          types.InputFormatDynamodbJson,
		InputCompressionType: m.Compression.InputCompressionType(),
		S3BucketSource:       &types.S3BucketSource{S3Bucket: aws.String(bucket), S3KeyPrefix: aws.String(prefix)},
		TableCreationParameters: &types.TableCreationParameters{
			TableName:            aws.String(opts.Table),
			AttributeDefinitions: attrs,
			KeySchema:            schema,
			BillingMode:          types.BillingModePayPerRequest,
		},
	}
	res, err := client.ImportTable(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("reimport: ImportTable of s3://%s/%s into %s: %w", bucket, prefix, opts.Table, err)
	}
	return res.ImportTableDescription, nil
}

// WaitImport polls an import until it ends, calling progress after each
// poll. It returns an error when the import fails or is cancelled, or
// imports a different number of items than want (≥ 0).
func WaitImport(ctx context.Context, client importAPI, arn string, want int64, poll time.Duration, progress func(*types.ImportTableDescription)) (*types.ImportTableDescription, error) {
	if poll <= 0 {
		poll = 10 * time.Second
	}
	for {
		res, err := client.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(arn)})
		if err != nil {
			return nil, fmt.Errorf("reimport: DescribeImport %s: %w", arn, err)
		}
		d := res.ImportTableDescription
		if progress != nil {
			progress(d)
		}
		switch d.ImportStatus {
		case types.ImportStatusCompleted:
			if d.ErrorCount > 0 || (want >= 0 && d.ImportedItemCount != want) {
				return d, fmt.Errorf("reimport: import %s completed with %d items imported of %d, %d errors (duplicate keys count once; see the import's CloudWatch log group %s)",
					arn, d.ImportedItemCount, want, d.ErrorCount, aws.ToString(d.CloudWatchLogGroupArn))
			}
			return d, nil
		case types.ImportStatusFailed, types.ImportStatusCancelled, types.ImportStatusCancelling:
			return d, fmt.Errorf("reimport: import %s %s: %s %s", arn, d.ImportStatus, aws.ToString(d.FailureCode), aws.ToString(d.FailureMessage))
		}
		if err := retry.SleepCause(ctx, poll); err != nil {
			return d, err
		}
	}
}

// BulkPutOptions configures StartBulkPut.
type BulkPutOptions struct {
	Table  string
	Entity string
	// MaxWriteUnits caps the operation's write rate (at least 1,024; 0:
	// DynamoDB's default).
	MaxWriteUnits int64
	// ReportPrefix is where, below the output location, DynamoDB writes its
	// report of failed and condition-failed items. Default _bulkput/<table>/.
	ReportPrefix string
}

// StartBulkPut starts StartBulkPutItems of one entity's parts into an
// existing table: a server-side load that consumes no client capacity.
func StartBulkPut(ctx context.Context, client importAPI, out *Output, opts BulkPutOptions) (*types.BulkOperationDescription, error) {
	m, err := out.Entity(opts.Entity)
	if err != nil {
		return nil, err
	}
	if opts.Table == "" {
		return nil, errors.New("reimport: StartBulkPutItems needs a table")
	}
	if opts.MaxWriteUnits != 0 && opts.MaxWriteUnits < 1024 {
		return nil, fmt.Errorf("reimport: StartBulkPutItems takes at least 1,024 write units per second, not %d", opts.MaxWriteUnits)
	}
	bucket, prefix, err := s3Prefix(ctx, out, m)
	if err != nil {
		return nil, err
	}
	s3s := out.store.(*objstore.S3)
	if opts.ReportPrefix == "" {
		opts.ReportPrefix = "_bulkput/" + opts.Table + "/"
	}
	outCfg := &types.OutputS3Configuration{
		S3Bucket:       aws.String(bucket),
		S3KeyPrefix:    aws.String(s3s.Key(opts.ReportPrefix)),
		OutputType:     []types.OutputTypeEnum{types.OutputTypeEnumError, types.OutputTypeEnumConditionCheckFailure},
		S3SseAlgorithm: types.S3SseAlgorithmAes256,
	}
	if s3s.KMSKeyID() != "" {
		outCfg.S3SseAlgorithm = types.S3SseAlgorithmKms
		outCfg.S3SseKmsKeyId = aws.String(s3s.KMSKeyID())
	}
	in := &dynamodb.StartBulkPutItemsInput{
		TableName:   aws.String(opts.Table),
		ClientToken: aws.String(clientToken("StartBulkPutItems", opts.Table, m, fmt.Sprint(opts.MaxWriteUnits))),
		InputS3Configuration: &types.InputS3Configuration{
			S3Bucket:             aws.String(bucket),
			S3KeyPrefix:          aws.String(prefix),
			InputFormat:          types.BulkOperationInputFormatDynamodbJson,
			InputCompressionType: m.Compression.InputCompressionType(),
		},
		OutputS3Configuration: outCfg,
	}
	if opts.MaxWriteUnits > 0 {
		in.MaxWriteRequestUnits = aws.Int64(opts.MaxWriteUnits)
	}
	res, err := client.StartBulkPutItems(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("reimport: StartBulkPutItems of s3://%s/%s into %s: %w", bucket, prefix, opts.Table, err)
	}
	return res.BulkOperationDescription, nil
}

// WaitBulkPut polls a bulk operation until it ends, calling progress after
// each poll. COMPLETED_WITH_ERRORS, FAILED and CANCELLED are errors.
func WaitBulkPut(ctx context.Context, client importAPI, arn string, poll time.Duration, progress func(*types.BulkOperationDescription)) (*types.BulkOperationDescription, error) {
	if poll <= 0 {
		poll = 10 * time.Second
	}
	for {
		res, err := client.DescribeBulkOperation(ctx, &dynamodb.DescribeBulkOperationInput{BulkOperationArn: aws.String(arn)})
		if err != nil {
			return nil, fmt.Errorf("reimport: DescribeBulkOperation %s: %w", arn, err)
		}
		d := res.BulkOperationDescription
		if progress != nil {
			progress(d)
		}
		switch d.BulkOperationStatus {
		case types.BulkOperationStatusCompleted:
			return d, nil
		case types.BulkOperationStatusCompletedWithErrors:
			return d, fmt.Errorf("reimport: bulk put %s completed with %d failed items (the report is in s3://%s/%s)", arn, d.FailedItemCount,
				aws.ToString(d.OutputS3Configuration.S3Bucket), aws.ToString(d.OutputS3Configuration.S3KeyPrefix))
		case types.BulkOperationStatusFailed, types.BulkOperationStatusCancelled:
			return d, fmt.Errorf("reimport: bulk put %s %s: %s %s", arn, d.BulkOperationStatus, aws.ToString(d.FailureCode), aws.ToString(d.FailureMessage))
		}
		if err := retry.SleepCause(ctx, poll); err != nil {
			return d, err
		}
	}
}
