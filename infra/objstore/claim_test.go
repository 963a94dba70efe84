package objstore_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
)

func TestClaim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		newStore func(t *testing.T) objstore.Store
	}{
		{"Dir", func(t *testing.T) objstore.Store { return objstore.NewDir(t.TempDir()) }},
		{"S3", func(t *testing.T) objstore.Store {
			c, _, bucket := gofakes3(t)
			return objstore.NewS3(c, bucket, "out", objstore.S3Options{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testClaim(t, tc.newStore) })
	}
}

func testClaim(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	ctx := context.Background()

	t.Run("SecondRunRefused", func(t *testing.T) {
		st := newStore(t)
		first := objstore.NewOwner("repartition A")
		c, err := objstore.Acquire(ctx, st, "_run.json", first, false)
		if err != nil || c.TookOver != nil {
			t.Fatalf("first Acquire: %v, %+v", err, c)
		}
		second := objstore.NewOwner("repartition B")
		_, err = objstore.Acquire(ctx, st, "_run.json", second, false)
		var held *objstore.HeldError
		if !errors.As(err, &held) || !errors.Is(err, objstore.ErrHeld) || held.Holder.ID != first.ID {
			t.Fatalf("second Acquire: %v, want a HeldError naming the first run", err)
		}
		for _, want := range []string{"_run.json", first.ID, "repartition A", "process"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if err := c.Check(ctx); err != nil {
			t.Errorf("Check of the holder: %v", err)
		}
		// Another step of the same run shares the claim, writing nothing.
		before, v1, _ := st.Get(ctx, "_run.json")
		if _, err := objstore.Acquire(ctx, st, "_run.json", first, false); err != nil {
			t.Errorf("Acquire by the same run: %v", err)
		}
		if after, v2, _ := st.Get(ctx, "_run.json"); string(after) != string(before) || v1 != v2 {
			t.Error("the same run's Acquire rewrote the claim")
		}
		// Released, it is the next run's, and the holder's Check says so.
		if err := c.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Check(ctx); err == nil || !strings.Contains(err.Error(), "released") {
			t.Errorf("Check after Release: %v", err)
		}
		c2, err := objstore.Acquire(ctx, st, "_run.json", second, false)
		if err != nil || c2.TookOver != nil {
			t.Fatalf("Acquire after Release: %v, %+v", err, c2)
		}
		if err := c.Release(ctx); err != nil {
			t.Errorf("a stale Release: %v", err)
		}
		if err := c2.Check(ctx); err != nil {
			t.Errorf("a stale Release freed the new holder's claim: %v", err)
		}
	})

	t.Run("DeadProcessTakenOver", func(t *testing.T) {
		st := newStore(t)
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Skip(err)
		}
		dead := objstore.NewOwner("killed run")
		dead.PID = cmd.Process.Pid
		if _, err := objstore.Acquire(ctx, st, "_run.json", dead, false); err != nil {
			t.Fatal(err)
		}
		next := objstore.NewOwner("rerun")
		c, err := objstore.Acquire(ctx, st, "_run.json", next, false)
		if err != nil || c.TookOver == nil || c.TookOver.ID != dead.ID {
			t.Fatalf("Acquire over a dead process's claim: %v, %+v", err, c)
		}
		// The same claim held elsewhere (another host) is not.
		other := objstore.NewOwner("elsewhere")
		other.Host = "another-host.example"
		st2 := newStore(t)
		if _, err := objstore.Acquire(ctx, st2, "_run.json", other, false); err != nil {
			t.Fatal(err)
		}
		if _, err := objstore.Acquire(ctx, st2, "_run.json", next, false); !errors.Is(err, objstore.ErrHeld) {
			t.Fatalf("Acquire over another host's claim: %v, want ErrHeld", err)
		}
		// Unless taken over by hand; the old holder's Check then fails.
		c3, err := objstore.Acquire(ctx, st2, "_run.json", next, true)
		if err != nil || c3.TookOver == nil || c3.TookOver.Host != "another-host.example" {
			t.Fatalf("takeover: %v, %+v", err, c3)
		}
	})

	t.Run("CheckAfterTakeover", func(t *testing.T) {
		st := newStore(t)
		a, _ := objstore.Acquire(ctx, st, "_run.json", objstore.NewOwner("a"), false)
		b := objstore.NewOwner("b")
		if _, err := objstore.Acquire(ctx, st, "_run.json", b, true); err != nil {
			t.Fatal(err)
		}
		var held *objstore.HeldError
		if err := a.Check(ctx); !errors.As(err, &held) || held.Holder.ID != b.ID {
			t.Errorf("Check of a claim taken over: %v, want a HeldError naming b", err)
		}
	})

	t.Run("RacingRunsOneWins", func(t *testing.T) {
		st := newStore(t)
		objstoretest.OneWins(t, 6, objstore.ErrHeld, func(int) error {
			_, err := objstore.Acquire(ctx, st, "_run.json", objstore.NewOwner("racer"), false)
			return err
		})
	})

	t.Run("NotAClaim", func(t *testing.T) {
		st := newStore(t)
		if err := st.Put(ctx, "_run.json", []byte("not json")); err != nil {
			t.Fatal(err)
		}
		if _, err := objstore.Acquire(ctx, st, "_run.json", objstore.NewOwner("x"), false); err == nil || !strings.Contains(err.Error(), "_run.json is not a claim") {
			t.Errorf("Acquire over a foreign object: %v", err)
		}
		if _, err := objstore.Acquire(ctx, st, "_run.json", objstore.NewOwner("x"), true); err != nil {
			t.Errorf("takeover of a foreign object: %v", err)
		}
	})
}
