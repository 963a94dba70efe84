package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tributary/tributary/infra/objstore"
)

// Conditional is the part of an object store (objstore's stores) that
// objectStore uses.
type Conditional interface {
	objstore.Conditional
	Delete(ctx context.Context, key string) error
}

// objectStore keeps checkpoints as JSON objects, <prefix><job>.json, in an
// object store: a local directory (NewDir) or an S3 prefix. Every save is
// conditional on the object being the revision the saver read (objstore's
// PutIfAbsent and Swap: S3's If-None-Match and If-Match, link(2) and
// flock(2) in a directory), so that two runs of a job, on one machine or
// several, cannot both save.
type objectStore struct {
	st     Conditional
	prefix string
	now    func() time.Time
}

var _ Store = (*objectStore)(nil)

// NewObjects returns a store of checkpoints under prefix ("" or ending in
// "/") in st.
func NewObjects(st Conditional, prefix string) Store {
	return &objectStore{st: st, prefix: prefix, now: time.Now}
}

// NewDir returns a store of checkpoints as files <dir>/<job>.json, the
// directory created when the first checkpoint is saved.
func NewDir(dir string) Store { return NewObjects(objstore.NewDir(dir), "") }

func (o *objectStore) key(job string) string { return o.prefix + job + ".json" }

// Load implements Store.
func (o *objectStore) Load(ctx context.Context, job string) (*Checkpoint, error) {
	if !validJob(job) {
		return nil, fmt.Errorf("checkpoint: invalid job ID %q", job)
	}
	cp, _, err := o.load(ctx, job)
	return cp, err
}

func (o *objectStore) load(ctx context.Context, job string) (*Checkpoint, string, error) {
	b, ver, err := o.st.Get(ctx, o.key(job))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, "", fmt.Errorf("%w: %s", ErrNotFound, objstore.Name(o.st, o.key(job)))
	}
	if err != nil {
		return nil, "", fmt.Errorf("checkpoint: %w", err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, "", fmt.Errorf("checkpoint: %s is not a checkpoint: %w", objstore.Name(o.st, o.key(job)), err)
	}
	if cp.Job != job {
		return nil, "", fmt.Errorf("checkpoint: %s holds job %q, not %q", objstore.Name(o.st, o.key(job)), cp.Job, job)
	}
	if cp.Rev < 1 {
		return nil, "", fmt.Errorf("checkpoint: %s holds revision %d, which no save writes (the first is 1): not a checkpoint this tool saved", objstore.Name(o.st, o.key(job)), cp.Rev)
	}
	return &cp, ver, nil
}

// Save implements Store: a conditional create for revision 0, otherwise a
// swap from the version that holds revision cp.Rev. A save whose request
// was retried after its first attempt had written (a lost response) finds
// its own bytes behind the failed condition, and succeeds.
func (o *objectStore) Save(ctx context.Context, cp *Checkpoint) error {
	if !validJob(cp.Job) {
		return fmt.Errorf("checkpoint: invalid job ID %q", cp.Job)
	}
	next := *cp
	next.Rev++
	next.Updated = o.now().UTC()
	body, err := json.MarshalIndent(&next, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	body = append(body, '\n')
	key := o.key(cp.Job)
	if cp.Rev == 0 {
		_, err = o.st.PutIfAbsent(ctx, key, body)
	} else {
		var cur *Checkpoint
		var ver string
		cur, ver, err = o.load(ctx, cp.Job)
		switch {
		case errors.Is(err, ErrNotFound):
			return fmt.Errorf("%w (%s: none stored, revision %d expected)", ErrConflict, objstore.Name(o.st, key), cp.Rev)
		case err != nil:
			return err
		case cur.Rev != cp.Rev:
			return fmt.Errorf("%w (%s: revision %d stored, %d expected)", ErrConflict, objstore.Name(o.st, key), cur.Rev, cp.Rev)
		}
		_, err = o.st.Swap(ctx, key, body, ver)
	}
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		if now, _, gerr := o.st.Get(ctx, key); gerr != nil || !bytes.Equal(now, body) {
			return fmt.Errorf("%w (%s, expected revision %d)", ErrConflict, objstore.Name(o.st, key), cp.Rev)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: saving %s: %w", objstore.Name(o.st, key), err)
	}
	cp.Rev, cp.Updated = next.Rev, next.Updated
	return nil
}

// Delete implements Store.
func (o *objectStore) Delete(ctx context.Context, job string) error {
	if !validJob(job) {
		return fmt.Errorf("checkpoint: invalid job ID %q", job)
	}
	if err := o.st.Delete(ctx, o.key(job)); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
