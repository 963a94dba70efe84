package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Owner identifies the run that holds a claim.
type Owner struct {
	// ID names the run: random for a process (NewOwner), or an ID its steps
	// share (a Step Functions execution's), so that every step of one run
	// holds the claim and no step of another does.
	ID string `json:"id"`
	// Host and PID locate a process of one machine; a claim whose process
	// is gone from this machine is taken over without asking.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Started is when the run took the claim; What describes it for people.
	Started time.Time `json:"started"`
	What    string    `json:"what,omitempty"`
}

// NewOwner returns the owner of a run of this process: a random ID, this
// host and PID, now.
func NewOwner(what string) Owner {
	var b [8]byte
	rand.Read(b[:])
	host, _ := os.Hostname()
	return Owner{ID: hex.EncodeToString(b[:]), Host: host, PID: os.Getpid(), Started: time.Now().UTC(), What: what}
}

// String describes the owner for messages.
func (o Owner) String() string {
	s := "run " + o.ID
	if o.Host != "" {
		s += fmt.Sprintf(" (process %d on %s)", o.PID, o.Host)
	}
	if !o.Started.IsZero() {
		s += ", started " + o.Started.Format(time.RFC3339)
	}
	if o.What != "" {
		s += ": " + o.What
	}
	return s
}

// deadHere reports whether the owner is a process of this machine that is
// no longer running.
func (o Owner) deadHere() bool {
	host, _ := os.Hostname()
	return o.Host != "" && o.Host == host && o.PID > 0 && !alive(o.PID)
}

// marker is a claim's object.
type marker struct {
	Owner    Owner      `json:"owner"`
	Released *time.Time `json:"released,omitempty"`
}

// Conditional is the part of a Store that claims use.
type Conditional interface {
	Get(ctx context.Context, key string) (body []byte, version string, err error)
	PutIfAbsent(ctx context.Context, key string, body []byte) (string, error)
	Swap(ctx context.Context, key string, body []byte, version string) (string, error)
	String() string
}

// ErrHeld matches the error of acquiring a claim another run holds.
var ErrHeld = errors.New("held by another run")

// HeldError is the error of acquiring, or checking, a claim another run
// holds.
type HeldError struct {
	// Name is the claim's object, for people; Holder the run holding it.
	Name   string
	Holder Owner
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is held by %s", e.Name, e.Holder)
}

// Is makes a HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Claim is a run's hold on a place (an output, a load): one small object,
// created only if absent and replaced only if unchanged, that names its
// owner. One run at a time holds it; another run's Acquire fails with a
// HeldError naming the holder. A released claim leaves its object, marked
// released, as a record of the last run.
type Claim struct {
	st    Conditional
	key   string
	owner Owner
	ver   string
	// TookOver is the owner this claim was taken from (released, dead or
	// forced), if any.
	TookOver *Owner
}

// Acquire takes the claim at key for owner. It succeeds when no claim is
// there, when the one there is released, when it is owner's own (another
// step of the same run: nothing is written), when its owner is a process of
// this machine that is no longer running, or, with takeover, whatever holds
// it (the caller asserts that the holder is gone). Otherwise it fails with a
// HeldError. Every write is conditional, so of two runs racing for one
// claim exactly one gets it.
func Acquire(ctx context.Context, st Conditional, key string, owner Owner, takeover bool) (*Claim, error) {
	body, err := json.Marshal(marker{Owner: owner})
	if err != nil {
		return nil, err
	}
	name := Name(st, key)
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			return nil, fmt.Errorf("objstore: claim %s changed hands five times while being taken; try again", name)
		}
		ver, err := st.PutIfAbsent(ctx, key, body)
		if err == nil {
			return &Claim{st: st, key: key, owner: owner, ver: ver}, nil
		}
		if !errors.Is(err, ErrPreconditionFailed) {
			return nil, err
		}
		cur, ver, err := st.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			continue // removed by hand in between
		}
		if err != nil {
			return nil, err
		}
		var m marker
		if err := json.Unmarshal(cur, &m); err != nil || m.Owner.ID == "" {
			if !takeover {
				return nil, fmt.Errorf("objstore: %s is not a claim this version wrote (%v); remove it, or take it over, if no run is using the place", name, err)
			}
		}
		if m.Owner.ID == owner.ID && m.Released == nil {
			return &Claim{st: st, key: key, owner: owner, ver: ver}, nil
		}
		if m.Released == nil && !m.Owner.deadHere() && !takeover {
			return nil, &HeldError{Name: name, Holder: m.Owner}
		}
		nv, err := st.Swap(ctx, key, body, ver)
		if errors.Is(err, ErrPreconditionFailed) {
			continue // another run moved first: look again
		}
		if err != nil {
			return nil, err
		}
		c := &Claim{st: st, key: key, owner: owner, ver: nv}
		if m.Released == nil {
			prev := m.Owner
			c.TookOver = &prev
		}
		return c, nil
	}
}

// Check reports whether the claim is still the owner's: nil, or a HeldError
// naming the run that took it over (or an error saying it was released or
// removed). A run checks before each commit that others rely on, so that a
// run whose claim was taken from it stops instead of writing on.
func (c *Claim) Check(ctx context.Context) error {
	cur, _, err := c.st.Get(ctx, c.key)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("objstore: the claim %s of %s was removed", Name(c.st, c.key), c.owner)
	}
	if err != nil {
		return err
	}
	var m marker
	if err := json.Unmarshal(cur, &m); err != nil {
		return fmt.Errorf("objstore: the claim %s was overwritten: %v", Name(c.st, c.key), err)
	}
	switch {
	case m.Owner.ID != c.owner.ID:
		return &HeldError{Name: Name(c.st, c.key), Holder: m.Owner}
	case m.Released != nil:
		return fmt.Errorf("objstore: the claim %s of %s was released at %s", Name(c.st, c.key), c.owner, m.Released.Format(time.RFC3339))
	}
	return nil
}

// Release marks the claim released, if it is still the owner's (a claim
// taken over is left to its new owner). A released claim is free for the
// next run.
func (c *Claim) Release(ctx context.Context) error {
	cur, ver, err := c.st.Get(ctx, c.key)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var m marker
	if json.Unmarshal(cur, &m) != nil || m.Owner.ID != c.owner.ID || m.Released != nil {
		return nil
	}
	now := time.Now().UTC()
	m.Released = &now
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := c.st.Swap(ctx, c.key, body, ver); err != nil && !errors.Is(err, ErrPreconditionFailed) {
		return err
	}
	return nil
}
