package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/internal/retry"
)

// tableAPI is the part of *dynamodb.Client that CreateTable uses.
type tableAPI interface {
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTable creates the table Store uses (on-demand capacity, string keys PK
// and SK), waits until it is ACTIVE and enables time to live on the attribute
// ttl. A table that already exists is waited for and left as it is: it
// needs only DescribeTable then, so a role that may not create tables can
// use one made beforehand (docs/backfill.md says how to make one fit for
// production: point-in-time recovery, deletion protection, TTL). The
// tables this creates are for local runs, tests and trials.
func CreateTable(ctx context.Context, client tableAPI, table string) error {
	if _, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err == nil {
		return waitActive(ctx, client, table)
	} else if !errors.As(err, new(*types.ResourceNotFoundException)) {
		return fmt.Errorf("dynamostore: describe table %q: %w", table, err)
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
	})
	existed := false
	if err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("dynamostore: create table %q: %w", table, err)
		}
		existed = true
	}
	if err := waitActive(ctx, client, table); err != nil {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		// On a table that existed, DynamoDB refuses to enable TTL that is
		// already enabled (or was changed in the last hour) with a
		// ValidationException; that table is as configured as it can be now.
		if existed && isValidation(err) {
			return nil
		}
		return fmt.Errorf("dynamostore: enable TTL on table %q, attribute %q: %w", table, attrTTL, err)
	}
	return nil
}

func isValidation(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	return ok && apiErr.ErrorCode() == "ValidationException"
}

func waitActive(ctx context.Context, client tableAPI, table string) error {
	delay := 100 * time.Millisecond
	for {
		res, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var notFound *types.ResourceNotFoundException
		switch {
		case errors.As(err, &notFound):
			// Just created; not visible yet.
		case err != nil:
			return fmt.Errorf("dynamostore: describe table %q: %w", table, err)
		case res.Table != nil && res.Table.TableStatus == types.TableStatusActive:
			return nil
		case res.Table != nil && res.Table.TableStatus != types.TableStatusCreating && res.Table.TableStatus != types.TableStatusUpdating:
			return fmt.Errorf("dynamostore: table %q is %s, not ACTIVE", table, res.Table.TableStatus)
		}
		if err := retry.SleepCause(ctx, delay); err != nil {
			return fmt.Errorf("dynamostore: wait for table %q to be ACTIVE: %w", table, err)
		}
		delay = min(delay*2, 2*time.Second)
	}
}
