// Package ledger is a worked example of Tributary on a table whose
// attributes are all its own: a payments ledger typed by kind, versioned by
// rev, keyed pk/sk, whose items expire by expiresAt. Its single table holds
//
//	Account         pk=ACCOUNT#<id>       sk=ACCOUNT      holder S, currency S, openedAt N, rev N
//	Transfer        pk=TRANSFER#<id>      sk=TRANSFER     from S, to S (account IDs), amount N,
//	                                                      currency S (ISO 4217), status S (PENDING,
//	                                                      SETTLED, FAILED), bookedAt N (epoch seconds), rev N
//	IdempotencyKey  pk=IDEMPOTENCY#<key>  sk=IDEMPOTENCY  transfer S, createdAt N, expiresAt N, rev N
//
// and two projections written in Go against Tributary's public API:
//
//	daily-volume   settled transfers, per account, side, currency and day (UTC):
//	               ACCOUNT#<from>#DEBIT#<currency>#<yyyy-mm-dd>   transfers=1, amount=amount
//	               ACCOUNT#<to>#CREDIT#<currency>#<yyyy-mm-dd>    transfers=1, amount=amount
//	               CCY#<currency>#DAY#<yyyy-mm-dd> (4 shards)     transfers=1, amount=amount
//	large-pending  row CCY#<currency> / BOOKED#<bookedAt, 10 digits>#TRANSFER#<id>
//	               {transfer, from, to, amount}, for PENDING transfers of 10,000 or more
//
// Amounts are exact decimals (projections/decimal): the sums never go
// through a float. Its Lambda mains (functions/), its own tributary binary
// (cmd/ledger) and its tests live beside this file; the module builds
// against Tributary as any team's module would.
package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// The ledger table's attributes: none of them Tributary's defaults.
const (
	TypeAttribute    = "kind"
	VersionAttribute = "rev"
	PartitionKey     = "pk"
	SortKey          = "sk"
	TTLAttribute     = "expiresAt"
)

// Schema names the ledger table's attributes.
func Schema() pipeline.Schema {
	return pipeline.Schema{
		TypeAttribute: TypeAttribute, VersionAttribute: VersionAttribute,
		KeyAttributes: []string{PartitionKey, SortKey}, TTLAttribute: TTLAttribute,
	}
}

// Environment is the ledger table's environment, what its functions and
// its CLI run: its attributes (kind, rev, pk and sk, expiresAt), its
// projections and its transforms. Every entry point reads the attributes
// from here and refuses a variable or a flag that names others.
func Environment() *projections.Environment {
	return &projections.Environment{
		Schema:      Schema(),
		Projections: Set(),
		Transforms:  Transforms(),
	}
}

// Set is the ledger's projection set.
func Set() *projections.Set { return projections.MustSet(DailyVolume{}, LargePending{}) }

// LargeAmount is the amount from which a pending transfer is large, in any
// currency's units.
var LargeAmount = decimal.FromInt(10_000)

// DailyVolume counts settled transfers and sums their amounts exactly,
// per account and side (debit, credit), currency and day, and per currency
// and day across accounts.
type DailyVolume struct{}

var (
	_ projections.Projection = DailyVolume{}
	_ projections.Definer    = DailyVolume{}
)

// Name returns "daily-volume".
func (DailyVolume) Name() string { return "daily-volume" }

// EntityTypes returns Transfer.
func (DailyVolume) EntityTypes() []string { return []string{"Transfer"} }

// Definition describes the rule; change it when the rule changes.
func (DailyVolume) Definition() string {
	return "v1: SETTLED -> ACCOUNT#<from>#DEBIT#<ccy>#<day>, ACCOUNT#<to>#CREDIT#<ccy>#<day>, CCY#<ccy>#DAY#<day> (4 shards): transfers=1 amount=amount; day of bookedAt, UTC"
}

// Contribute returns a settled transfer's three counters; a transfer in
// any other status contributes nothing.
func (p DailyVolume) Contribute(item pipeline.Item) (projections.Contribution, error) {
	t, err := parse(p.Name(), item)
	if err != nil || t.status != "SETTLED" {
		return projections.Contribution{}, err
	}
	day := time.Unix(t.bookedAt, 0).UTC().Format(time.DateOnly)
	values := map[string]decimal.Decimal{"transfers": decimal.FromInt(1), "amount": t.amount}
	return projections.Contribution{Counters: []projections.Counter{
		{Key: "ACCOUNT#" + t.from + "#DEBIT#" + t.currency + "#" + day, Values: values},
		{Key: "ACCOUNT#" + t.to + "#CREDIT#" + t.currency + "#" + day, Values: values},
		{Key: "CCY#" + t.currency + "#DAY#" + day, Values: values, Shards: 4},
	}}, nil
}

// LargePending keeps a row per pending transfer of LargeAmount or more,
// per currency, in the order they were booked: the queue a payments
// officer reviews.
type LargePending struct{}

var (
	_ projections.Projection = LargePending{}
	_ projections.Definer    = LargePending{}
)

// Name returns "large-pending".
func (LargePending) Name() string { return "large-pending" }

// EntityTypes returns Transfer.
func (LargePending) EntityTypes() []string { return []string{"Transfer"} }

// Definition describes the rule; change it when the rule changes.
func (LargePending) Definition() string {
	return "v1: PENDING and amount >= 10000 -> row CCY#<ccy> / BOOKED#<bookedAt %010d>#TRANSFER#<id> {transfer, from, to, amount}"
}

// Contribute returns the transfer's row while it is pending and large.
func (p LargePending) Contribute(item pipeline.Item) (projections.Contribution, error) {
	t, err := parse(p.Name(), item)
	if err != nil || t.status != "PENDING" || t.amount.Cmp(LargeAmount) < 0 {
		return projections.Contribution{}, err
	}
	return projections.Contribution{Rows: []projections.Row{{
		Partition: "CCY#" + t.currency,
		Sort:      fmt.Sprintf("BOOKED#%010d#TRANSFER#%s", t.bookedAt, t.id),
		Attrs: pipeline.Item{
			"transfer": &types.AttributeValueMemberS{Value: t.id},
			"from":     &types.AttributeValueMemberS{Value: t.from},
			"to":       &types.AttributeValueMemberS{Value: t.to},
			"amount":   &types.AttributeValueMemberN{Value: t.amount.String()},
		},
	}}}, nil
}

type transfer struct {
	id, from, to, currency, status string
	amount                         decimal.Decimal
	bookedAt                       int64
}

// ErrInvalid is the cause of an *ItemError for an attribute of a transfer
// that is there but does not fit; projections.ErrMissing is the cause for
// one that is not there.
var ErrInvalid = errors.New("invalid")

// parse reads a Transfer image; an image that does not fit is a
// *projections.ItemError naming the projection, the item's keys and the
// attribute, which the engine reports as that record's failure.
func parse(projection string, item pipeline.Item) (transfer, error) {
	var t transfer
	fail := func(attr string, err error) (transfer, error) {
		e := &projections.ItemError{Projection: projection, Attr: attr, Err: err}
		return t, e.SetKeys(item, PartitionKey, SortKey)
	}
	pk, err := str(item, PartitionKey)
	if err != nil {
		return fail(PartitionKey, err)
	}
	var ok bool
	if t.id, ok = strings.CutPrefix(pk, "TRANSFER#"); !ok || !plainID(t.id) {
		return fail(PartitionKey, fmt.Errorf("%w: want TRANSFER#<id>", ErrInvalid))
	}
	if sk, err := str(item, SortKey); err != nil {
		return fail(SortKey, err)
	} else if sk != "TRANSFER" {
		return fail(SortKey, fmt.Errorf("%w: want TRANSFER", ErrInvalid))
	}
	for _, a := range []struct {
		name string
		to   *string
	}{{"from", &t.from}, {"to", &t.to}, {"currency", &t.currency}, {"status", &t.status}} {
		if *a.to, err = str(item, a.name); err != nil {
			return fail(a.name, err)
		}
	}
	switch {
	case !plainID(t.from):
		return fail("from", fmt.Errorf("%w: want an account ID", ErrInvalid))
	case !plainID(t.to):
		return fail("to", fmt.Errorf("%w: want an account ID", ErrInvalid))
	case t.from == t.to:
		return fail("to", fmt.Errorf("%w: the same account as from", ErrInvalid))
	case !isCurrency(t.currency):
		return fail("currency", fmt.Errorf("%w: want an ISO 4217 code, got %q", ErrInvalid, t.currency))
	}
	switch t.status {
	case "PENDING", "SETTLED", "FAILED":
	default:
		return fail("status", fmt.Errorf("%w: want PENDING, SETTLED or FAILED, got %q", ErrInvalid, t.status))
	}
	if t.amount, err = num(item, "amount"); err != nil {
		return fail("amount", err)
	}
	if t.amount.Sign() <= 0 {
		return fail("amount", fmt.Errorf("%w: want more than 0, got %s", ErrInvalid, t.amount))
	}
	booked, err := num(item, "bookedAt")
	if err != nil {
		return fail("bookedAt", err)
	}
	if t.bookedAt, ok = booked.Int64(); !ok || t.bookedAt < 0 || t.bookedAt > 9_999_999_999 {
		return fail("bookedAt", fmt.Errorf("%w: want epoch seconds, got %s", ErrInvalid, booked))
	}
	return t, nil
}

// plainID reports whether s can stand in a key between # separators.
func plainID(s string) bool { return s != "" && !strings.Contains(s, "#") }

func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, c := range []byte(s) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func str(item pipeline.Item, name string) (string, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case nil:
		return "", projections.ErrMissing
	default:
		return "", fmt.Errorf("%w: want S, got %T", ErrInvalid, v)
	}
}

func num(item pipeline.Item, name string) (decimal.Decimal, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberN:
		d, err := decimal.Parse(v.Value)
		if err != nil {
			return decimal.Decimal{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return d, nil
	case nil:
		return decimal.Decimal{}, projections.ErrMissing
	default:
		return decimal.Decimal{}, fmt.Errorf("%w: want N, got %T", ErrInvalid, v)
	}
}
