package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/engine"
	"github.com/tributary/tributary/pipeline"
)

// TestJudgeTick: a state in the export's own second is taken as changed
// since only for a higher version than the export item's, or a removal
// of an item the export lacks; every other case is named, never agreed.
func TestJudgeTick(t *testing.T) {
	asOf := time.Date(2026, 12, 1, 12, 0, 0, 700_000_000, time.UTC)
	streams := func(v int64, has, removed bool) engine.Token {
		return engine.Token{Stream: "s", Seq: "100", Micros: asOf.Truncate(time.Second).UnixMicro(), Precision: pipeline.Second, Version: v, HasVersion: has, Removed: removed}
	}
	if !engine.InTick(streams(1, true, false), asOf) {
		t.Error("a Streams state in the export's second is not in its tick")
	}
	before := streams(1, true, false)
	before.Micros = asOf.Add(-time.Second).UnixMicro()
	export := engine.AsOfToken(asOf)
	if engine.InTick(before, asOf) || engine.InTick(export, asOf) {
		t.Error("a state of the second before, or an export's, is in the export's tick")
	}
	x := func(v int64) engine.ExportState {
		return engine.ExportState{Present: true, Version: v, HasVersion: true}
	}
	for _, tt := range []struct {
		name  string
		tok   engine.Token
		x     engine.ExportState
		since bool
		inWhy string
	}{
		{"higher version", streams(4, true, false), x(3), true, ""},
		{"lower version", streams(2, true, false), x(3), false, "is older than the export's (version 3)"},
		{"equal version, other contributions", streams(3, true, false), x(3), false, "another incarnation"},
		{"no version in the table", streams(0, false, false), x(3), false, "has no version attribute"},
		{"no version in the export", streams(3, true, false), engine.ExportState{Present: true}, false, "which has no version attribute"},
		{"no version at all", streams(0, false, false), engine.ExportState{Present: true}, false, "neither has a version attribute"},
		{"removed, the export holds it", streams(3, true, true), x(3), false, "is a removal"},
		{"the export lacks it", streams(1, true, false), engine.ExportState{}, false, "the export lacks the item"},
		{"removed, the export lacks it", streams(1, true, true), engine.ExportState{}, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			since, why := engine.JudgeTick(tt.tok, tt.tok.Removed, tt.x)
			if since != tt.since || !strings.Contains(why, tt.inWhy) || (why == "") != tt.since {
				t.Errorf("since %v, why %q; want %v, %q", since, why, tt.since, tt.inWhy)
			}
		})
	}
}
