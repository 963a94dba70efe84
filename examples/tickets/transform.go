package tickets

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Transforms are the desk's transforms, for its repartitioner and its
// tributary.
func Transforms() []*projections.Transform { return []*projections.Transform{TicketsByID()} }

// TicketsByID is the transform "tickets-by-id": it re-keys every Ticket for
// a table keyed by ticket, PK=TICKET#<id>, SK=QUEUE#<queue>, keeping the
// old keys as queuePK and sourceSK; every other attribute is copied.
func TicketsByID() *projections.Transform {
	return &projections.Transform{
		Name:   "tickets-by-id",
		Doc:    "re-key Ticket items to PK=TICKET#<id>, SK=QUEUE#<queue>, for a table keyed by ticket",
		ByType: map[string]projections.TransformFunc{"Ticket": byID},
	}
}

func byID(item pipeline.Item) ([]pipeline.Item, error) {
	pk, _ := item["PK"].(*types.AttributeValueMemberS)
	sk, _ := item["SK"].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return nil, fmt.Errorf("tickets-by-id: a Ticket without string PK and SK")
	}
	queue, ok1 := strings.CutPrefix(pk.Value, "QUEUE#")
	id, ok2 := strings.CutPrefix(sk.Value, "TICKET#")
	if !ok1 || !ok2 || queue == "" || id == "" {
		return nil, fmt.Errorf("tickets-by-id: keys %s/%s: want QUEUE#<queue>/TICKET#<id>", pk.Value, sk.Value)
	}
	out := make(pipeline.Item, len(item)+2)
	for k, v := range item {
		out[k] = v
	}
	out["queuePK"], out["sourceSK"] = pk, sk
	out["PK"] = &types.AttributeValueMemberS{Value: "TICKET#" + id}
	out["SK"] = &types.AttributeValueMemberS{Value: "QUEUE#" + queue}
	return []pipeline.Item{out}, nil
}
