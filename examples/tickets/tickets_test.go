package tickets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"example.com/tickets"

	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
	"github.com/tributary/tributary/scripts/cli"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// finalItems are the desk table's Ticket items after the history both
// fixtures carry: t1 solved after 42.5 minutes, t2 deleted, t3 open.
var finalItems = []pipeline.Item{
	{"PK": s("QUEUE#billing"), "SK": s("TICKET#t1"), "EntityType": s("Ticket"), "status": s("SOLVED"),
		"minutes": n("42.5"), "openedAt": n("1796030000"), "subject": s("Invoice shows the wrong VAT rate"), "version": n("2")},
	{"PK": s("QUEUE#access"), "SK": s("TICKET#t3"), "EntityType": s("Ticket"), "status": s("OPEN"),
		"minutes": n("5"), "openedAt": n("1796032000"), "subject": s("Locked out after SSO change"), "version": n("1")},
}

// checkView checks a store against the recomputation from the final items,
// and a few values by hand.
func checkView(t *testing.T, st driver.Reader) {
	t.Helper()
	ctx := context.Background()
	got, err := projections.ReadView(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want, err := projections.Recompute(finalItems, "", tickets.Set().Projections()...)
	if err != nil {
		t.Fatal(err)
	}
	if d := projections.Diff(got, want); len(d) > 0 {
		t.Errorf("the store differs from the recomputation:\n%s", strings.Join(d, "\n"))
	}
	solved := got.Aggregates[projections.AggregateKey{Projection: "queue-status", Key: "QUEUE#billing#STATUS#SOLVED"}]
	if solved["tickets"].Cmp(decimal.FromInt(1)) != 0 || solved["minutes"].Cmp(decimal.MustParse("42.5")) != 0 {
		t.Errorf("billing SOLVED: %v, want tickets=1 minutes=42.5", solved)
	}
	if pending := got.Aggregates[projections.AggregateKey{Projection: "queue-status", Key: "STATUS#PENDING"}]; pending != nil {
		t.Errorf("STATUS#PENDING: %v, want nothing (t2 was deleted)", pending)
	}
	rows, err := st.QueryRows(ctx, "open-tickets", "QUEUE#access", 0)
	if err != nil || len(rows) != 1 || rows[0].Ref.Sort != "OPENED#1796032000#TICKET#t3" {
		t.Errorf("open tickets of the access queue: %v, %v", rows, err)
	}
}

func invoke(t *testing.T, p interface {
	Invoke(context.Context, []byte) ([]byte, error)
}, file string) {
	t.Helper()
	event, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // delivered twice: the second changes nothing
		out, err := p.Invoke(context.Background(), event)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("%s: %s %v", file, out, err)
		}
	}
}

// TestStreamsProjector runs the captured Streams event through the desk's
// projector function, as its main builds it, into the embedded store.
func TestStreamsProjector(t *testing.T) {
	st := boltstoretest.Open(t)
	p, err := projector.New(context.Background(), projector.Config{Table: "desk-aggregates"}, tickets.Environment(), st, quiet(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	invoke(t, p, "streams-event.json")
	checkView(t, st)
}

// TestKinesisProjector runs the same history from the table's Kinesis
// stream, out of order and duplicated, through the Kinesis projector.
func TestKinesisProjector(t *testing.T) {
	st := boltstoretest.Open(t)
	p, err := kinesisprojector.New(context.Background(), projector.Config{Table: "desk-aggregates"}, tickets.Environment(), st, quiet(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	invoke(t, p, "kinesis-event.json")
	checkView(t, st)
}

// TestBadTicket: a ticket the projections cannot read is that record's
// failure, named by its sequence number, and the records before it apply.
func TestBadTicket(t *testing.T) {
	st := boltstoretest.Open(t)
	p, err := projector.New(context.Background(), projector.Config{Table: "desk-aggregates"}, tickets.Environment(), st, quiet(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile(filepath.Join("testdata", "streams-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	// t3's insert (record 4) gets a status the projections do not know.
	var ev map[string][]map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	img := ev["Records"][4]["dynamodb"].(map[string]any)["NewImage"].(map[string]any)
	img["status"] = map[string]any{"S": "LOST"}
	bad, _ := json.Marshal(ev)
	out, err := p.Invoke(context.Background(), bad)
	if err != nil || string(out) != `{"batchItemFailures":[{"itemIdentifier":"4421584500000000017450439105"}]}` {
		t.Errorf("%s %v", out, err)
	}
	v, _ := projections.ReadView(context.Background(), st)
	if v.Aggregates[projections.AggregateKey{Projection: "queue-status", Key: "QUEUE#billing#STATUS#SOLVED"}] == nil {
		t.Error("the records before the bad one were not applied")
	}
	if v.Aggregates[projections.AggregateKey{Projection: "queue-status", Key: "QUEUE#access#STATUS#OPEN"}] != nil {
		t.Error("the bad record was applied")
	}
}

// TestCLI runs the desk's own tributary in-process: process both events
// into a store, then print its aggregates and rows.
func TestCLI(t *testing.T) {
	dir := t.TempDir()
	opts := cli.Options{Name: "tickets", Environment: tickets.Environment()}
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Run(context.Background(), opts, args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	run("process", "--store", dir, "--events", "testdata/streams-event.json", "--events", "testdata/kinesis-event.json")
	aggs := run("aggregates", "--store", dir, "--json")
	for _, want := range []string{`"key":"QUEUE#billing#STATUS#SOLVED"`, `"key":"STATUS#OPEN"`, `"projection":"open-tickets"`} {
		if !strings.Contains(aggs, want) {
			t.Errorf("aggregates --json lacks %s:\n%s", want, aggs)
		}
	}
	rows := run("rows", "--store", dir, "--projection", "open-tickets", "--partition", "QUEUE#access")
	if !strings.HasPrefix(rows, "OPENED#1796032000#TICKET#t3") {
		t.Errorf("rows:\n%s", rows)
	}
	show := run("projections", "--store", dir)
	if !strings.Contains(show, "an engine of it may write to the store") {
		t.Errorf("projections show:\n%s", show)
	}
}

// TestTransform: tickets-by-id re-keys a ticket by its ID and keeps the
// old keys; a ticket whose keys do not fit is an error naming them.
func TestTransform(t *testing.T) {
	out, err := tickets.TicketsByID().ByType["Ticket"](finalItems[0])
	if err != nil || len(out) != 1 {
		t.Fatalf("%v, %v", out, err)
	}
	got := out[0]
	for name, want := range map[string]string{"PK": "TICKET#t1", "SK": "QUEUE#billing", "queuePK": "QUEUE#billing", "sourceSK": "TICKET#t1", "status": "SOLVED"} {
		if v, _ := got[name].(*types.AttributeValueMemberS); v == nil || v.Value != want {
			t.Errorf("%s = %v, want %s", name, got[name], want)
		}
	}
	if _, err := tickets.TicketsByID().ByType["Ticket"](pipeline.Item{"PK": s("WS#x"), "SK": s("TICKET#t1")}); err == nil || !strings.Contains(err.Error(), "WS#x/TICKET#t1") {
		t.Errorf("keys that do not fit: %v", err)
	}
}
