package projector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/boltstore/boltstoretest"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/internal/sim"
)

// TestShadowLagRule: the lag is the live set's newest change less the
// shadow's newest applied one (none below zero); while the shadow has
// applied none, from the live set's newest when it first failed (a lower
// bound); before either is known, none.
func TestShadowLagRule(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var zero time.Time
	tests := []struct {
		name                  string
		applied, behind, live time.Time
		want                  time.Duration
		ok                    bool
	}{
		{"nothing applied or failed yet", zero, zero, t0, 0, false},
		{"the live set applied nothing", t0, zero, zero, 0, false},
		{"level", t0, zero, t0, 0, true},
		{"behind", t0, zero, t0.Add(5 * time.Minute), 5 * time.Minute, true},
		{"ahead of this batch's newest", t0.Add(time.Minute), zero, t0, 0, true},
		{"failing from the start", zero, t0, t0.Add(time.Hour), time.Hour, true},
		{"applied after failing: its own newest counts", t0.Add(30 * time.Minute), t0, t0.Add(time.Hour), 30 * time.Minute, true},
	}
	for _, tc := range tests {
		s := &shadow{applied: tc.applied, behind: tc.behind}
		got, ok := s.lag(tc.live)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: lag %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestShadowLagMetric: the ShadowLag a projector writes, batch by batch,
// for a shadow that keeps up, one that fails from the start, and one that
// applies the first batch and fails the next (its store's commits fail
// from then on), the second batch's changes ten minutes after the first's.
func TestShadowLagMetric(t *testing.T) {
	ctx := context.Background()
	first, err := os.ReadFile("testdata/event.json")
	if err != nil {
		t.Fatal(err)
	}
	// The same changes written again ten minutes later: later records of
	// the stream (sequence numbers after the first batch's).
	later := regexp.MustCompile(`"ApproximateCreationDateTime": (\d+)`).ReplaceAllFunc(first, func(b []byte) []byte {
		n, _ := strconv.ParseInt(string(regexp.MustCompile(`\d+`).Find(b)), 10, 64)
		return []byte(`"ApproximateCreationDateTime": ` + strconv.FormatInt(n+600, 10))
	})
	later = regexp.MustCompile(`"SequenceNumber": "44215`).ReplaceAll(later, []byte(`"SequenceNumber": "54215`))
	if bytes.Equal(later, first) {
		t.Fatal("the event's times were not moved")
	}
	tests := []struct {
		name string
		// fail says whether the shadow's commits fail for each batch.
		fail     [2]bool
		failures [2]float64
		lag      [2]float64 // ms; -1: none written
	}{
		{"keeps up", [2]bool{false, false}, [2]float64{0, 0}, [2]float64{0, 0}},
		{"fails from the start", [2]bool{true, true}, [2]float64{1, 1}, [2]float64{0, 600000}},
		{"applies, then fails", [2]bool{false, true}, [2]float64{0, 1}, [2]float64{0, 600000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := boltstoretest.Open(t)
			faulty := &sim.FaultyStore{Store: st, Seed: 1}
			keep := t.TempDir()
			var metrics bytes.Buffer
			h, err := New(ctx, Config{Table: "live", ShadowTable: "shadow", ShadowFailures: keep}, seed.Environment(), boltstoretest.Open(t),
				slog.New(slog.NewTextHandler(io.Discard, nil)), &metrics, WithShadow(faulty.Table(st), objstore.NewDir(keep)))
			if err != nil {
				t.Fatal(err)
			}
			for i, event := range [][]byte{first, later} {
				faulty.CommitFailBefore = 0
				if tc.fail[i] {
					faulty.CommitFailBefore = 1
				}
				metrics.Reset()
				if out, err := h.Invoke(ctx, event); err != nil || string(out) != `{"batchItemFailures":[]}` {
					t.Fatalf("batch %d: live response %s %v", i+1, out, err)
				}
				line := shadowLine(t, metrics.Bytes())
				lag, hasLag := line["ShadowLag"].(float64)
				if !hasLag {
					lag = -1
				}
				if line["ShadowFailures"] != tc.failures[i] || lag != tc.lag[i] || line["Component"] != "shadow" {
					t.Errorf("batch %d: ShadowFailures %v, ShadowLag %v; want %v and %v", i+1, line["ShadowFailures"], line["ShadowLag"], tc.failures[i], tc.lag[i])
				}
			}
		})
	}
}

// shadowLine returns the one EMF line of the shadow family among lines.
func shadowLine(t *testing.T, lines []byte) map[string]any {
	t.Helper()
	var found map[string]any
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		if _, ok := m["ShadowFailures"]; ok {
			if found != nil {
				t.Fatalf("two shadow lines:\n%s", lines)
			}
			found = m
		}
	}
	if found == nil {
		t.Fatalf("no shadow line among:\n%s", lines)
	}
	return found
}
