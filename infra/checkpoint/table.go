package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// tableAPI is the part of *dynamodb.Client that tableStore uses.
type tableAPI interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var (
	_ tableAPI = (*dynamodb.Client)(nil)
	_ Store    = (*tableStore)(nil)
)

// tableStore keeps checkpoints in a DynamoDB table whose keys are the strings PK
// and SK: one item per job, PK "C#<job>", SK "C", with the revision (rev),
// the checkpoint's JSON (checkpoint) and the time of the save (updated).
// Reads are strongly consistent; saves are conditional puts.
type tableStore struct {
	client tableAPI
	table  string
	now    func() time.Time
}

// NewTable returns a store in table.
func NewTable(client tableAPI, table string) Store {
	return &tableStore{client: client, table: table, now: time.Now}
}

func (t *tableStore) key(job string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "C#" + job},
		"SK": &types.AttributeValueMemberS{Value: "C"},
	}
}

// Load reads a job's item.
func (t *tableStore) Load(ctx context.Context, job string) (*Checkpoint, error) {
	if !validJob(job) {
		return nil, fmt.Errorf("checkpoint: invalid job ID %q", job)
	}
	res, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: t.key(job), ConsistentRead: aws.Bool(true)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("checkpoint: table %s does not exist: %w", t.table, err)
		}
		return nil, fmt.Errorf("checkpoint: reading job %s from table %s: %w", job, t.table, err)
	}
	if len(res.Item) == 0 {
		return nil, fmt.Errorf("%w: job %s in table %s", ErrNotFound, job, t.table)
	}
	body, ok := res.Item["checkpoint"].(*types.AttributeValueMemberS)
	rev, ok2 := res.Item["rev"].(*types.AttributeValueMemberN)
	if !ok || !ok2 {
		return nil, fmt.Errorf("checkpoint: item C#%s in table %s lacks checkpoint (S) or rev (N)", job, t.table)
	}
	var cp Checkpoint
	if err := json.Unmarshal([]byte(body.Value), &cp); err != nil {
		return nil, fmt.Errorf("checkpoint: item C#%s in table %s: %w", job, t.table, err)
	}
	if cp.Rev, err = strconv.ParseInt(rev.Value, 10, 64); err != nil {
		return nil, fmt.Errorf("checkpoint: item C#%s in table %s: rev %q: %w", job, t.table, rev.Value, err)
	}
	return &cp, nil
}

// Save puts the job's item on condition that its revision is cp.Rev.
func (t *tableStore) Save(ctx context.Context, cp *Checkpoint) error {
	if !validJob(cp.Job) {
		return fmt.Errorf("checkpoint: invalid job ID %q", cp.Job)
	}
	next := *cp
	next.Rev++
	next.Updated = t.now().UTC()
	body, err := json.Marshal(&next)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	item := t.key(cp.Job)
	item["rev"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Rev, 10)}
	item["checkpoint"] = &types.AttributeValueMemberS{Value: string(body)}
	item["updated"] = &types.AttributeValueMemberS{Value: next.Updated.Format(time.RFC3339Nano)}
	in := &dynamodb.PutItemInput{TableName: aws.String(t.table), Item: item}
	if cp.Rev == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(PK)")
	} else {
		in.ConditionExpression = aws.String("rev = :rev")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":rev": &types.AttributeValueMemberN{Value: strconv.FormatInt(cp.Rev, 10)}}
	}
	// On a failed condition DynamoDB returns the item there. If it is this
	// very write, the SDK retried a call whose first attempt had already
	// succeeded (a 5xx or a lost response after the write): a success, not a
	// conflict with another run.
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	if _, err := t.client.PutItem(ctx, in); err != nil {
		var ccf *types.ConditionalCheckFailedException
		switch {
		case !errors.As(err, &ccf):
			return fmt.Errorf("checkpoint: saving job %s in table %s: %w", cp.Job, t.table, err)
		case !sameWrite(ccf.Item, item):
			return fmt.Errorf("%w (job %s in table %s, expected revision %d)", ErrConflict, cp.Job, t.table, cp.Rev)
		}
	}
	cp.Rev, cp.Updated = next.Rev, next.Updated
	return nil
}

// sameWrite reports whether the item found on a failed condition is the one
// this save wrote: same revision, same body (which holds its update time).
func sameWrite(found, wrote map[string]types.AttributeValue) bool {
	for _, name := range []string{"rev", "checkpoint"} {
		if !equalScalar(found[name], wrote[name]) {
			return false
		}
	}
	return true
}

func equalScalar(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	}
	return false
}

// Delete deletes the job's item.
func (t *tableStore) Delete(ctx context.Context, job string) error {
	if !validJob(job) {
		return fmt.Errorf("checkpoint: invalid job ID %q", job)
	}
	if _, err := t.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(t.table), Key: t.key(job)}); err != nil {
		return fmt.Errorf("checkpoint: deleting job %s from table %s: %w", job, t.table, err)
	}
	return nil
}
