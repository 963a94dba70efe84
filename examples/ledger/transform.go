package ledger

import (
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// Transforms are the ledger's transforms, for its repartitioner and its
// tributary.
func Transforms() []*projections.Transform {
	return []*projections.Transform{TransfersByAccount()}
}

// TransfersByAccount is the transform "transfers-by-account": it turns
// every Transfer into its two postings, for a statement table keyed by
// account: the debit, pk=ACCOUNT#<from>, and the credit, pk=ACCOUNT#<to>,
// each sk=BOOKED#<bookedAt, 10 digits>#TRANSFER#<id>, with side DEBIT or
// CREDIT and the transfer's own keys kept as transferPK and transferSK;
// every other attribute is copied. Other kinds pass unchanged.
func TransfersByAccount() *projections.Transform {
	return &projections.Transform{
		Name:   "transfers-by-account",
		Doc:    "split each Transfer into its debit and credit postings, pk=ACCOUNT#<account>, sk=BOOKED#<bookedAt>#TRANSFER#<id>, for a statement table",
		ByType: map[string]projections.TransformFunc{"Transfer": postings},
	}
}

func postings(item pipeline.Item) ([]pipeline.Item, error) {
	t, err := parse("transfers-by-account", item)
	if err != nil {
		return nil, err
	}
	sort := fmt.Sprintf("BOOKED#%010d#TRANSFER#%s", t.bookedAt, t.id)
	out := make([]pipeline.Item, 0, 2)
	for _, p := range []struct{ side, account string }{{"DEBIT", t.from}, {"CREDIT", t.to}} {
		posting := maps.Clone(item)
		posting["transferPK"], posting["transferSK"] = item[PartitionKey], item[SortKey]
		posting[PartitionKey] = &types.AttributeValueMemberS{Value: "ACCOUNT#" + p.account}
		posting[SortKey] = &types.AttributeValueMemberS{Value: sort}
		posting["side"] = &types.AttributeValueMemberS{Value: p.side}
		out = append(out, posting)
	}
	return out, nil
}
