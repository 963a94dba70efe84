package replay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/streamsread"
	"github.com/tributary/tributary/internal/awstest"
	"github.com/tributary/tributary/internal/capabilities/replay"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/shardread"
)

// A replay of a stream whose view type cannot give the projections new
// images stops at its first record and applies nothing, saying which view
// type is needed.
func TestIntegrationReplayRefusesViewTypes(t *testing.T) {
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	for _, view := range []types.StreamViewType{types.StreamViewTypeKeysOnly, types.StreamViewTypeOldImage} {
		t.Run(string(view), func(t *testing.T) {
			table := awstest.UniqueName(t, "app")
			awstest.CreateTableView(ctx, t, ddb, table, view)
			for i, sk := range []string{"ORDER#2026-11-30#o1", "ORDER#2026-11-30#o2"} {
				_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: "USER#u42"}, "SK": &types.AttributeValueMemberS{Value: sk},
					"EntityType": &types.AttributeValueMemberS{Value: "Order"}, "version": &types.AttributeValueMemberN{Value: "1"},
					"status": &types.AttributeValueMemberS{Value: "PAID"}, "total": &types.AttributeValueMemberN{Value: "1" + string(rune('0'+i))},
					"orderDate": &types.AttributeValueMemberS{Value: "2026-11-30"}, "userId": &types.AttributeValueMemberS{Value: "u42"}, "orderId": &types.AttributeValueMemberS{Value: "o1"},
				}})
				if err != nil {
					t.Fatal(err)
				}
			}
			arn, err := streamsread.StreamARN(ctx, awstest.Streams(t), table)
			if err != nil {
				t.Fatal(err)
			}
			st := boltstoretest.Open(t)
			_, err = replay.New(replay.Config{Source: streamsread.New(awstest.Streams(t), arn, pipeline.Options{}), Handler: newEngine(st), Logger: quiet(),
				Reader: shardread.Config{BatchSize: 100, EmptyReads: 2, Logger: quiet()}}).Run(ctx)
			var ve *pipeline.ViewError
			if !errors.As(err, &ve) || ve.View.String() != string(view) {
				t.Fatalf("replay: %v; want a *ViewError for %s", err, view)
			}
			if v := mustView(t, st); len(v.Aggregates) != 0 || len(v.Rows) != 0 {
				t.Errorf("the refused stream wrote %d aggregates and %d rows", len(v.Aggregates), len(v.Rows))
			}
		})
	}
}
