package ledger_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"example.com/ledger"

	"github.com/tributary/tributary/functions/archiver"
	"github.com/tributary/tributary/functions/kinesisprojector"
	"github.com/tributary/tributary/functions/projector"
	"github.com/tributary/tributary/functions/repartitioner"
	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
	"github.com/tributary/tributary/projections/driver"
)

// The fixtures (testdata/README.md).
const (
	streamsEvent = "testdata/streams-event.json"
	kinesisEvent = "testdata/kinesis-event.json"
	exportDir    = "testdata/export/AWSDynamoDB/01796140800000-6fc88388"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// dataFiles returns the export's data files.
func dataFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(exportDir, "data", "*.json.gz"))
	if err != nil || len(files) != 4 {
		t.Fatalf("data files of %s: %v, %v", exportDir, files, err)
	}
	return files
}

// exportItems reads the export's items from its data files, with the
// decoder every export reader uses, under the ledger's schema.
func exportItems(t *testing.T) []pipeline.Item {
	t.Helper()
	dec := pipeline.NewExportDecoder(pipeline.Options{Schema: ledger.Schema()})
	var items []pipeline.Item
	for _, f := range dataFiles(t) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) == 0 { // an empty partition's data file
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sc := bufio.NewScanner(zr)
		for line := 1; sc.Scan(); line++ {
			c, err := dec.DecodeItem(sc.Bytes(), f, line)
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, c.New)
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return items
}

// replay applies an event's changes in order and returns the items they
// leave, by key.
func replay(t *testing.T, file string, decode func([]byte, pipeline.Options) ([]pipeline.Change, error)) map[string]pipeline.Item {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := decode(data, pipeline.Options{Schema: ledger.Schema()})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	items := map[string]pipeline.Item{}
	for _, c := range changes {
		if c.New == nil {
			delete(items, pipeline.ItemKey(c.Keys))
		} else {
			items[pipeline.ItemKey(c.Keys)] = c.New
		}
	}
	return items
}

// TestFixturesAgree: the export holds exactly the items the Streams event's
// history leaves, attribute for attribute; so a store the event builds
// must agree with the export, and verify's AGREE is earned. (The Kinesis
// event, out of order, is held to the export by TestProjectors.)
func TestFixturesAgree(t *testing.T) {
	want := map[string]string{}
	for k, item := range replay(t, streamsEvent, pipeline.DecodeStreamsEvent) {
		want[k] = string(pipeline.AppendItem(nil, item))
	}
	got := map[string]string{}
	for _, item := range exportItems(t) {
		k := pipeline.ItemKey(pipeline.Item{ledger.PartitionKey: item[ledger.PartitionKey], ledger.SortKey: item[ledger.SortKey]})
		if _, dup := got[k]; dup {
			t.Errorf("the export holds %s twice", k)
		}
		got[k] = string(pipeline.AppendItem(nil, item))
	}
	if len(got) != 11 {
		t.Errorf("%d items in the export, want 11", len(got))
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s:\n  export %s\n  events %s", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: in the export, not left by the events", k)
		}
	}
}

// checkView checks a store against the recomputation from the export's
// items, and a few values by hand.
func checkView(t *testing.T, st driver.Reader) {
	t.Helper()
	ctx := context.Background()
	got, err := projections.ReadView(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	want, err := projections.Recompute(exportItems(t), ledger.TypeAttribute, ledger.Set().Projections()...)
	if err != nil {
		t.Fatal(err)
	}
	if d := projections.Diff(got, want); len(d) > 0 {
		t.Errorf("the store differs from the recomputation:\n%s", strings.Join(d, "\n"))
	}
	for key, w := range map[string]struct{ transfers, amount string }{
		"ACCOUNT#anna#DEBIT#EUR#2026-11-30":  {"1", "125.50"}, // t1, settled after it was pending
		"ACCOUNT#anna#CREDIT#EUR#2026-11-30": {"1", "40.25"},
		"CCY#EUR#DAY#2026-11-30":             {"2", "165.75"},
		"ACCOUNT#bram#DEBIT#EUR#2026-12-01":  {"2", "0.3"}, // 0.10 + 0.20, exactly
		"CCY#EUR#DAY#2026-12-01":             {"2", "0.30"},
	} {
		v := got.Aggregates[projections.AggregateKey{Projection: "daily-volume", Key: key}]
		if v["transfers"].Cmp(decimal.MustParse(w.transfers)) != 0 || v["amount"].Cmp(decimal.MustParse(w.amount)) != 0 {
			t.Errorf("daily-volume %s: %v, want transfers=%s amount=%s", key, v, w.transfers, w.amount)
		}
	}
	for _, key := range []string{"ACCOUNT#anna#DEBIT#EUR#2026-12-01", "CCY#GBP#DAY#2026-11-30"} { // t4 failed, t7 deleted; t3 pending
		if v := got.Aggregates[projections.AggregateKey{Projection: "daily-volume", Key: key}]; v != nil {
			t.Errorf("daily-volume %s: %v, want nothing", key, v)
		}
	}
	rows, err := st.QueryRows(ctx, "large-pending", "CCY#GBP", 0)
	if err != nil {
		t.Fatal(err)
	}
	var sorts []string
	for _, r := range rows {
		sorts = append(sorts, r.Ref.Sort)
	}
	if strings.Join(sorts, " ") != "BOOKED#1796119200#TRANSFER#t6 BOOKED#1796036400#TRANSFER#t3" {
		t.Errorf("large pending GBP transfers: %v", sorts)
	}
	if rows, err := st.QueryRows(ctx, "large-pending", "CCY#EUR", 0); err != nil || len(rows) != 0 {
		t.Errorf("large pending EUR transfers (t4 failed, t7 deleted): %v, %v", rows, err)
	}
}

func invoke(t *testing.T, p interface {
	Invoke(context.Context, []byte) ([]byte, error)
}, file string) {
	t.Helper()
	event, err := os.ReadFile(file)
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

// TestProjectors runs both captured events through the ledger's projector
// functions, as its mains build them, into the embedded store.
func TestProjectors(t *testing.T) {
	for _, tc := range []struct {
		file string
		new  func(context.Context, projector.Config, *projections.Environment, driver.Table, *slog.Logger, io.Writer, ...projector.Option) (*projector.Handler, error)
	}{
		{streamsEvent, projector.New},
		{kinesisEvent, kinesisprojector.New},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			st := boltstoretest.Open(t)
			p, err := tc.new(context.Background(), projector.Config{Table: "ledger-aggregates"}, ledger.Environment(), st, quiet(), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			invoke(t, p, tc.file)
			checkView(t, st)
		})
	}
}

// TestProjectorRefusesOtherAttributes: a variable that names another
// attribute than the ledger's stops the projector at init.
func TestProjectorRefusesOtherAttributes(t *testing.T) {
	for _, tc := range []struct {
		schema pipeline.Schema
		want   string
	}{
		{pipeline.Schema{TypeAttribute: "EntityType"}, `TYPE_ATTRIBUTE "EntityType", but this table's environment reads the entity type from "kind"`},
		{pipeline.Schema{VersionAttribute: "version"}, `VERSION_ATTRIBUTE "version", but this table's environment reads the version from "rev"`},
	} {
		_, err := projector.New(context.Background(), projector.Config{Table: "ledger-aggregates", Schema: tc.schema}, ledger.Environment(), boltstoretest.Open(t), quiet(), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.schema, err, tc.want)
		}
	}
}

// TestBadTransfer: a transfer the projections cannot read is that record's
// failure, named by its sequence number, and the records before it apply.
func TestBadTransfer(t *testing.T) {
	st := boltstoretest.Open(t)
	p, err := projector.New(context.Background(), projector.Config{Table: "ledger-aggregates"}, ledger.Environment(), st, quiet(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	event, err := os.ReadFile(streamsEvent)
	if err != nil {
		t.Fatal(err)
	}
	// t3's insert (record 6) gets a currency no ISO code spells.
	var ev map[string][]map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	img := ev["Records"][6]["dynamodb"].(map[string]any)["NewImage"].(map[string]any)
	img["currency"] = map[string]any{"S": "pounds"}
	bad, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Invoke(context.Background(), bad)
	if err != nil || string(out) != `{"batchItemFailures":[{"itemIdentifier":"5120036700000000031877000007"}]}` {
		t.Errorf("%s %v", out, err)
	}
	v, err := projections.ReadView(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if v.Aggregates[projections.AggregateKey{Projection: "daily-volume", Key: "CCY#EUR#DAY#2026-11-30"}] == nil {
		t.Error("the records before the bad one were not applied")
	}
	if len(v.Rows) != 0 {
		t.Errorf("rows %v: the bad record (and those after it) applied", v.Rows)
	}
}

// transferItem is t1 as it was settled, for the projections' tests.
func transferItem() pipeline.Item {
	return pipeline.Item{
		"pk": s("TRANSFER#t1"), "sk": s("TRANSFER"), "kind": s("Transfer"), "from": s("anna"), "to": s("bram"),
		"amount": n("125.50"), "currency": s("EUR"), "status": s("SETTLED"), "bookedAt": n("1796030100"), "rev": n("2"),
	}
}

// TestContribute: what each projection contributes for a transfer, and the
// error, naming the item and the attribute, for one that does not fit.
func TestContribute(t *testing.T) {
	with := func(attr string, v types.AttributeValue) pipeline.Item {
		item := transferItem()
		if v == nil {
			delete(item, attr)
		} else {
			item[attr] = v
		}
		return item
	}
	pending := func(amount string) pipeline.Item {
		item := with("status", s("PENDING"))
		item["amount"] = n(amount)
		return item
	}
	for _, tc := range []struct {
		name     string
		item     pipeline.Item
		counters []string // daily-volume's keys
		rows     []string // large-pending's partition/sort
		err      string   // both projections' error, after the projection's name
	}{
		{"settled", transferItem(), []string{"ACCOUNT#anna#DEBIT#EUR#2026-11-30", "ACCOUNT#bram#CREDIT#EUR#2026-11-30", "CCY#EUR#DAY#2026-11-30"}, nil, ""},
		{"settled, large", with("amount", n("99999.99")), []string{"ACCOUNT#anna#DEBIT#EUR#2026-11-30", "ACCOUNT#bram#CREDIT#EUR#2026-11-30", "CCY#EUR#DAY#2026-11-30"}, nil, ""},
		{"pending, small", pending("9999.99"), nil, nil, ""},
		{"pending, 10000 exactly", pending("10000.00"), nil, []string{"CCY#EUR/BOOKED#1796030100#TRANSFER#t1"}, ""},
		{"pending, large", pending("1E+5"), nil, []string{"CCY#EUR/BOOKED#1796030100#TRANSFER#t1"}, ""},
		{"failed", with("status", s("FAILED")), nil, nil, ""},
		{"booked at midnight UTC", with("bookedAt", n("1796083200")), []string{"ACCOUNT#anna#DEBIT#EUR#2026-12-01", "ACCOUNT#bram#CREDIT#EUR#2026-12-01", "CCY#EUR#DAY#2026-12-01"}, nil, ""},
		{"unknown status", with("status", s("LOST")), nil, nil, `item TRANSFER#t1/TRANSFER: status: invalid: want PENDING, SETTLED or FAILED, got "LOST"`},
		{"no amount", with("amount", nil), nil, nil, "item TRANSFER#t1/TRANSFER: amount: missing"},
		{"zero amount", with("amount", n("0.00")), nil, nil, "amount: invalid: want more than 0, got 0.00"},
		{"amount as a string", with("amount", s("12")), nil, nil, "amount: invalid: want N"},
		{"currency", with("currency", s("eur")), nil, nil, `currency: invalid: want an ISO 4217 code, got "eur"`},
		{"to itself", with("to", s("anna")), nil, nil, "to: invalid: the same account as from"},
		{"account with #", with("from", s("a#b")), nil, nil, "from: invalid: want an account ID"},
		{"bookedAt not whole", with("bookedAt", n("1796030100.5")), nil, nil, "bookedAt: invalid: want epoch seconds, got 1796030100.5"},
		{"bookedAt in milliseconds", with("bookedAt", n("1796030100000")), nil, nil, "bookedAt: invalid: want epoch seconds"},
		{"pk", with("pk", s("ACCOUNT#anna")), nil, nil, "item ACCOUNT#anna/TRANSFER: pk: invalid: want TRANSFER#<id>"},
		{"sk", with("sk", nil), nil, nil, "item TRANSFER#t1/?: sk: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range ledger.Set().Projections() {
				c, err := p.Contribute(tc.item)
				if tc.err != "" {
					var ie *projections.ItemError
					if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), p.Name()+": ") || !strings.Contains(err.Error(), tc.err) {
						t.Errorf("%s: %v, want a *projections.ItemError %q", p.Name(), err, p.Name()+": "+tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", p.Name(), err)
				}
				var counters, rows []string
				for _, k := range c.Counters {
					counters = append(counters, k.Key)
					if k.Values["transfers"].Cmp(decimal.FromInt(1)) != 0 || k.Values["amount"].Cmp(decimal.MustParse(tc.item["amount"].(*types.AttributeValueMemberN).Value)) != 0 {
						t.Errorf("%s %s: %v", p.Name(), k.Key, k.Values)
					}
				}
				for _, r := range c.Rows {
					rows = append(rows, r.Partition+"/"+r.Sort)
				}
				want := map[string][]string{"daily-volume": tc.counters, "large-pending": tc.rows}[p.Name()]
				if got := append(counters, rows...); !slices.Equal(got, want) {
					t.Errorf("%s: %q, want %q", p.Name(), got, want)
				}
			}
		})
	}
}

// TestTransform: transfers-by-account splits a transfer into its two
// postings, keyed by account, and keeps the transfer's keys; a transfer
// that does not fit is an error naming it.
func TestTransform(t *testing.T) {
	tr := ledger.TransfersByAccount()
	if got := tr.Types(); !slices.Equal(got, []string{"Transfer"}) {
		t.Fatalf("rewrites %v, want Transfer only", got)
	}
	out, err := tr.ByType["Transfer"](transferItem())
	if err != nil || len(out) != 2 {
		t.Fatalf("%v, %v", out, err)
	}
	for i, want := range []map[string]string{
		{"pk": "ACCOUNT#anna", "sk": "BOOKED#1796030100#TRANSFER#t1", "side": "DEBIT", "transferPK": "TRANSFER#t1", "transferSK": "TRANSFER", "status": "SETTLED", "kind": "Transfer"},
		{"pk": "ACCOUNT#bram", "sk": "BOOKED#1796030100#TRANSFER#t1", "side": "CREDIT", "transferPK": "TRANSFER#t1", "transferSK": "TRANSFER", "status": "SETTLED", "kind": "Transfer"},
	} {
		for name, v := range want {
			if got, _ := out[i][name].(*types.AttributeValueMemberS); got == nil || got.Value != v {
				t.Errorf("posting %d: %s = %v, want %s", i, name, out[i][name], v)
			}
		}
	}
	if a, _ := out[0]["amount"].(*types.AttributeValueMemberN); a == nil || a.Value != "125.50" {
		t.Errorf("amount %v, want 125.50 as it was", out[0]["amount"])
	}
	bad := transferItem()
	bad["pk"] = s("ACCOUNT#anna")
	if _, err := tr.ByType["Transfer"](bad); err == nil || !strings.Contains(err.Error(), "transfers-by-account: item ACCOUNT#anna/TRANSFER: pk") {
		t.Errorf("keys that do not fit: %v", err)
	}
}

// TestArchiver runs the Streams event through the ledger's archiver
// function: its one TTL removal is archived under its kind and the date of
// its expiresAt (30 November), not of its removal (1 December); a
// TTL_ATTRIBUTE that names another attribute stops it at init.
func TestArchiver(t *testing.T) {
	dir := t.TempDir()
	cfg, err := archiver.LoadConfig(lookup(map[string]string{"ARCHIVE_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := archiver.New(cfg, ledger.Environment(), objstore.NewDir(dir), quiet(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	invoke(t, p, streamsEvent)
	var keys []string
	if err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := "entity=IdempotencyKey/date=2026-11-30/5120036700000000031877000018.jsonl.gz"; !slices.Equal(keys, []string{want}) {
		t.Errorf("archive objects %v, want %s", keys, want)
	}

	cfg, err = archiver.LoadConfig(lookup(map[string]string{"ARCHIVE_DIR": dir, "TTL_ATTRIBUTE": "ttl"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archiver.New(cfg, ledger.Environment(), objstore.NewDir(dir), quiet(), io.Discard); err == nil ||
		!strings.Contains(err.Error(), `TTL_ATTRIBUTE "ttl", but this table's environment reads the expiry from "expiresAt"`) {
		t.Errorf("TTL_ATTRIBUTE ttl: %v", err)
	}
}

// lookup looks variables up in vars, as os.LookupEnv does in a main.
func lookup(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// TestRepartitioner runs the ledger's repartitioner function through a
// whole Step Functions execution (plan, a file step per data file, finish)
// on the export, with the transform: the output is split by kind, each
// transfer into its two postings.
func TestRepartitioner(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	vars := map[string]string{"EXPORT_LOCATION": exportDir, "OUTPUT_LOCATION": out, "TRANSFORM": "transfers-by-account"}
	cfg, err := repartitioner.LoadConfig(lookup(vars))
	if err != nil {
		t.Fatal(err)
	}
	h, err := repartitioner.New(cfg, ledger.Environment(), nil, quiet())
	if err != nil {
		t.Fatal(err)
	}
	step := func(ev repartitioner.Event) repartitioner.Response {
		t.Helper()
		ev.ExecutionID = "arn:aws:states:eu-west-1:111122223333:execution:ledger-repartition:run-1"
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatalf("%s: %v", ev.Action, err)
		}
		return resp
	}
	plan := step(repartitioner.Event{Action: "plan"})
	if len(plan.Files) != 4 {
		t.Fatalf("plan: %d files, want 4", len(plan.Files))
	}
	for _, f := range plan.Files {
		step(repartitioner.Event{Action: "file", DataFileS3Key: f.DataFileS3Key})
	}
	if fin := step(repartitioner.Event{Action: "finish"}); fin.Entities != 3 || fin.OutputItems != 18 {
		t.Errorf("finish: %d entities, %d items; want 3 and 18 (4 items, 7 transfers as 14 postings)", fin.Entities, fin.OutputItems)
	}
	step(repartitioner.Event{Action: "release"})
	for entity, want := range map[string]int64{"Account": 3, "IdempotencyKey": 1, "Transfer": 14} {
		var m struct {
			Entity    string `json:"entity"`
			ItemCount int64  `json:"itemCount"`
		}
		b, err := os.ReadFile(filepath.Join(out, "entity="+entity, "_manifest.json"))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil || m.Entity != entity || m.ItemCount != want {
			t.Errorf("entity=%s: %+v, %v; want %d items", entity, m, err, want)
		}
	}

	vars["KEY_ATTRIBUTES"] = "PK,SK"
	if cfg, err = repartitioner.LoadConfig(lookup(vars)); err != nil {
		t.Fatal(err)
	}
	if _, err := repartitioner.New(cfg, ledger.Environment(), nil, quiet()); err == nil ||
		!strings.Contains(err.Error(), "KEY_ATTRIBUTES PK,SK, but this table's environment has the key attributes pk,sk") {
		t.Errorf("KEY_ATTRIBUTES PK,SK: %v", err)
	}
}
