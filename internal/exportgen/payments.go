package exportgen

import (
	_ "embed"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

// PaymentsSpec is the projection spec of the payments-ledger mix
// (testdata/payments.yaml): a settled transfer adds to three aggregates and
// writes one statement row; a pending or failed one adds nothing; audit
// entries are of a type no projection reads. Its schema is the table's:
// type attribute kind, version rev, keys pk and sk.
//
//go:embed testdata/payments.yaml
var PaymentsSpec []byte

// PaymentsSchema is the payments table's schema, as PaymentsSpec declares it.
func PaymentsSchema() pipeline.Schema {
	return pipeline.Schema{TypeAttribute: "kind", VersionAttribute: "rev", KeyAttributes: []string{"pk", "sk"}}
}

// Payments yields n items of a payments ledger of the shape teams have:
// 2,000 accounts; 90 % transfers, 60 % of them SETTLED (each adds to three
// aggregates and writes a row of PaymentsSpec), the rest PENDING or FAILED
// (adding nothing); 10 % audit entries no projection reads. Transfers are
// booked over 30 days, so the table has about 2,000 × 2 × 30 account-days
// and a row per settled transfer. The same seed yields the same items.
func Payments(n int, seed uint64) iter.Seq[pipeline.Item] {
	const accounts = 2000
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	currencies := []string{"EUR", "USD", "GBP"}
	return func(yield func(pipeline.Item) bool) {
		r := rand.New(rand.NewPCG(seed, 0x1ed9e5))
		for i := range n {
			from := r.IntN(accounts)
			to := (from + 1 + r.IntN(accounts-1)) % accounts
			booked := start.Add(time.Duration(r.Int64N(int64(30 * 24 * time.Hour))))
			id := fmt.Sprintf("T%010d", i)
			pk := "ACCOUNT#" + strconv.Itoa(from)
			var it pipeline.Item
			if r.IntN(10) == 0 {
				it = pipeline.Item{
					"pk":      s(pk),
					"sk":      s("AUDIT#" + booked.Format(time.RFC3339) + "#" + id),
					"kind":    s("Audit"),
					"rev":     n1(1 + r.IntN(3)),
					"actor":   s("user-" + strconv.Itoa(r.IntN(200))),
					"action":  s([]string{"login", "limit-change", "export", "view"}[r.IntN(4)]),
					"at":      n1(int(booked.Unix())),
					"details": s(fmt.Sprintf("request %016x from 10.%d.%d.%d", r.Uint64(), r.IntN(256), r.IntN(256), r.IntN(256))),
				}
			} else {
				status := "SETTLED"
				switch x := r.IntN(10); {
				case x >= 8:
					status = "FAILED"
				case x >= 6:
					status = "PENDING"
				}
				it = pipeline.Item{
					"pk":        s(pk),
					"sk":        s("TRANSFER#" + id),
					"kind":      s("Transfer"),
					"rev":       n1(1 + r.IntN(4)),
					"id":        s(id),
					"from":      s(strconv.Itoa(from)),
					"to":        s(strconv.Itoa(to)),
					"currency":  s(currencies[r.IntN(len(currencies))]),
					"amount":    &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%02d", r.IntN(50_000), r.IntN(100))},
					"status":    s(status),
					"day":       s(booked.Format(time.DateOnly)),
					"bookedAt":  n1(int(booked.Unix())),
					"reference": s(fmt.Sprintf("pay_%012x", r.Uint64()&0xffffffffffff)),
				}
			}
			if !yield(it) {
				return
			}
		}
	}
}

func n1(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
