// Package checkpointtest is the conformance suite every checkpoint.Store
// passes.
package checkpointtest

import (
	"context"
	"errors"
	"testing"

	"github.com/tributary/tributary/infra/checkpoint"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/pipeline/shardread"
)

// Run runs the suite on stores made by newStore (each call a fresh, empty
// store).
func Run(t *testing.T, newStore func(t *testing.T) checkpoint.Store) {
	ctx := context.Background()
	t.Run("MissingIsNotFound", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Load(ctx, "replay-none"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("Load of a missing job: %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "replay-none"); err != nil {
			t.Fatalf("Delete of a missing job: %v", err)
		}
	})
	t.Run("SaveLoadRevisions", func(t *testing.T) {
		s := newStore(t)
		cp := &checkpoint.Checkpoint{
			Job:     checkpoint.JobID("kinesis://s", "TRIM_HORIZON"),
			About:   map[string]string{"source": "kinesis://s"},
			Shards:  map[string]shardread.Position{"shardId-000000000000": {Seq: "49590338271490256608559692538361571095921575989136588898"}, "shardId-000000000001": {Done: true}},
			Sources: map[string]int64{"entity=Order/part-x-0000.json.gz": 25},
		}
		if err := s.Save(ctx, cp); err != nil {
			t.Fatal(err)
		}
		if cp.Rev != 1 || cp.Updated.IsZero() {
			t.Fatalf("after the first save: rev %d, updated %v", cp.Rev, cp.Updated)
		}
		got, err := s.Load(ctx, cp.Job)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rev != 1 || got.Job != cp.Job || got.About["source"] != "kinesis://s" || len(got.Shards) != 2 ||
			got.Shards["shardId-000000000000"] != cp.Shards["shardId-000000000000"] || !got.Shards["shardId-000000000001"].Done ||
			!got.Updated.Equal(cp.Updated) || got.Sources["entity=Order/part-x-0000.json.gz"] != 25 {
			t.Fatalf("loaded %+v, saved %+v", got, cp)
		}
		// A save from a stale copy fails and changes nothing.
		stale := *got
		stale.Rev = 0
		stale.Shards = map[string]shardread.Position{}
		if err := s.Save(ctx, &stale); !errors.Is(err, checkpoint.ErrConflict) {
			t.Fatalf("stale save: %v, want ErrConflict", err)
		}
		got.Shards["shardId-000000000000"] = shardread.Position{Seq: "49590338271490256608559692538361571095921575989136588999"}
		if err := s.Save(ctx, got); err != nil || got.Rev != 2 {
			t.Fatalf("second save: rev %d, %v", got.Rev, err)
		}
		again, err := s.Load(ctx, cp.Job)
		if err != nil || again.Rev != 2 || again.Shards["shardId-000000000000"].Seq != "49590338271490256608559692538361571095921575989136588999" {
			t.Fatalf("after the second save: %+v, %v", again, err)
		}
		if err := s.Delete(ctx, cp.Job); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(ctx, cp.Job); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("after Delete: %v", err)
		}
	})
	t.Run("ConcurrentRunsOneWins", func(t *testing.T) {
		s := newStore(t)
		job := checkpoint.JobID("race")
		objstoretest.OneWins(t, 8, checkpoint.ErrConflict, func(int) error {
			return s.Save(ctx, &checkpoint.Checkpoint{Job: job, Shards: map[string]shardread.Position{}})
		})
	})
	t.Run("InvalidJob", func(t *testing.T) {
		s := newStore(t)
		if err := s.Save(ctx, &checkpoint.Checkpoint{Job: "../etc/passwd"}); err == nil {
			t.Error("a job ID with a path in it was saved")
		}
	})
}
