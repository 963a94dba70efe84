// Package tickets is a worked example of Tributary on a table of its own: a
// support desk whose single table holds tickets,
//
//	Ticket  PK=QUEUE#<queue>  SK=TICKET#<id>  status S (OPEN, PENDING, SOLVED, CLOSED),
//	        minutes N (time spent), openedAt N (epoch seconds), subject S, version N
//
// and two projections written in Go against Tributary's public API:
//
//	queue-status  QUEUE#<queue>#STATUS#<status>  tickets=1, minutes=minutes
//	              STATUS#<status> (4 shards)     tickets=1, minutes=minutes
//	open-tickets  row QUEUE#<queue> / OPENED#<openedAt, 10 digits>#TICKET#<id>
//	              {ticket, subject}, for OPEN and PENDING tickets only
//
// Its Lambda mains (functions/), its own tributary binary (cmd/tickets) and
// its test live beside this file; the module builds against Tributary as
// any team's module would. projections.yaml declares the same two
// projections as a spec, without Go (Tributary's docs/projections-spec.md);
// spec_test.go checks that both agree.
package tickets

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// Environment is the desk table's environment, what its functions and its
// CLI run: its projections and transforms, and its attributes (EntityType,
// version, PK and SK, ttl: the defaults, named here so that every entry
// point checks what it is told against them).
func Environment() *projections.Environment {
	return &projections.Environment{
		Schema: pipeline.Schema{
			TypeAttribute: "EntityType", VersionAttribute: "version",
			KeyAttributes: []string{"PK", "SK"}, TTLAttribute: "ttl",
		},
		Projections: Set(),
		Transforms:  Transforms(),
	}
}

// Set is the desk's projection set.
func Set() *projections.Set { return projections.MustSet(QueueStatus{}, OpenTickets{}) }

// QueueStatus counts tickets and sums the minutes spent on them, per queue
// and status, and per status across queues.
type QueueStatus struct{}

var (
	_ projections.Projection = QueueStatus{}
	_ projections.Definer    = QueueStatus{}
)

// Name returns "queue-status".
func (QueueStatus) Name() string { return "queue-status" }

// EntityTypes returns Ticket.
func (QueueStatus) EntityTypes() []string { return []string{"Ticket"} }

// Definition describes the rule; change it when the rule changes.
func (QueueStatus) Definition() string {
	return "v1: QUEUE#<queue>#STATUS#<status> and STATUS#<status> (4 shards): tickets=1 minutes=minutes"
}

// Contribute returns the ticket's two counters.
func (QueueStatus) Contribute(item pipeline.Item) (projections.Contribution, error) {
	t, err := parse(item)
	if err != nil {
		return projections.Contribution{}, fmt.Errorf("queue-status: %w", err)
	}
	values := map[string]decimal.Decimal{"tickets": decimal.FromInt(1), "minutes": t.minutes}
	return projections.Contribution{Counters: []projections.Counter{
		{Key: "QUEUE#" + t.queue + "#STATUS#" + t.status, Values: values},
		{Key: "STATUS#" + t.status, Values: values, Shards: 4},
	}}, nil
}

// OpenTickets keeps a row per open or pending ticket, newest first within
// its queue.
type OpenTickets struct{}

var (
	_ projections.Projection = OpenTickets{}
	_ projections.Definer    = OpenTickets{}
)

// Name returns "open-tickets".
func (OpenTickets) Name() string { return "open-tickets" }

// EntityTypes returns Ticket.
func (OpenTickets) EntityTypes() []string { return []string{"Ticket"} }

// Definition describes the rule; change it when the rule changes.
func (OpenTickets) Definition() string {
	return "v1: OPEN|PENDING -> row QUEUE#<queue> / OPENED#<openedAt %010d>#TICKET#<id> {ticket, subject}"
}

// Contribute returns the ticket's row while it is open or pending.
func (OpenTickets) Contribute(item pipeline.Item) (projections.Contribution, error) {
	t, err := parse(item)
	if err != nil {
		return projections.Contribution{}, fmt.Errorf("open-tickets: %w", err)
	}
	if t.status != "OPEN" && t.status != "PENDING" {
		return projections.Contribution{}, nil
	}
	opened, ok := t.openedAt.Int64()
	if !ok || opened < 0 || opened > 9_999_999_999 {
		return projections.Contribution{}, fmt.Errorf("open-tickets: ticket %s: openedAt: want epoch seconds, got %s", t.id, t.openedAt)
	}
	return projections.Contribution{Rows: []projections.Row{{
		Partition: "QUEUE#" + t.queue,
		Sort:      fmt.Sprintf("OPENED#%010d#TICKET#%s", opened, t.id),
		Attrs: pipeline.Item{
			"ticket":  &types.AttributeValueMemberS{Value: t.id},
			"subject": &types.AttributeValueMemberS{Value: t.subject},
		},
	}}}, nil
}

type ticket struct {
	queue, id, status, subject string
	minutes, openedAt          decimal.Decimal
}

// parse reads a Ticket image; an image that does not fit is an error naming
// the item and the attribute, which the engine reports as that record's
// failure.
func parse(item pipeline.Item) (ticket, error) {
	var t ticket
	pk, err := str(item, "PK")
	if err != nil {
		return t, err
	}
	sk, err := str(item, "SK")
	if err != nil {
		return t, err
	}
	var ok bool
	if t.queue, ok = strings.CutPrefix(pk, "QUEUE#"); !ok || t.queue == "" || strings.Contains(t.queue, "#") {
		return t, fmt.Errorf("item %s/%s: PK: want QUEUE#<queue>", pk, sk)
	}
	if t.id, ok = strings.CutPrefix(sk, "TICKET#"); !ok || t.id == "" || strings.Contains(t.id, "#") {
		return t, fmt.Errorf("item %s/%s: SK: want TICKET#<id>", pk, sk)
	}
	at := func(err error) error { return fmt.Errorf("ticket %s/%s: %w", t.queue, t.id, err) }
	if t.status, err = str(item, "status"); err != nil {
		return t, at(err)
	}
	switch t.status {
	case "OPEN", "PENDING", "SOLVED", "CLOSED":
	default:
		return t, at(fmt.Errorf("status: want OPEN, PENDING, SOLVED or CLOSED, got %q", t.status))
	}
	if t.subject, err = str(item, "subject"); err != nil {
		return t, at(err)
	}
	if t.minutes, err = num(item, "minutes"); err != nil {
		return t, at(err)
	}
	if t.openedAt, err = num(item, "openedAt"); err != nil {
		return t, at(err)
	}
	return t, nil
}

func str(item pipeline.Item, name string) (string, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case nil:
		return "", fmt.Errorf("%s: missing", name)
	default:
		return "", fmt.Errorf("%s: want S, got %T", name, v)
	}
}

func num(item pipeline.Item, name string) (decimal.Decimal, error) {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberN:
		d, err := decimal.Parse(v.Value)
		if err != nil {
			return decimal.Decimal{}, fmt.Errorf("%s: %w", name, err)
		}
		return d, nil
	case nil:
		return decimal.Decimal{}, fmt.Errorf("%s: missing", name)
	default:
		return decimal.Decimal{}, fmt.Errorf("%s: want N, got %T", name, v)
	}
}
