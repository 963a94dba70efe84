package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Dir keeps checkpoints as JSON files, <dir>/<job>.json, each replaced
// atomically (written to a temporary file, synced, renamed) on every save.
type Dir struct {
	dir string
	now func() time.Time
	mu  sync.Mutex // serialises read-check-write in this process
}

var _ Store = (*Dir)(nil)

// NewDir returns a store in dir, which is created when the first checkpoint
// is saved.
func NewDir(dir string) *Dir { return &Dir{dir: dir, now: time.Now} }

// Path returns the file of a job's checkpoint.
func (d *Dir) Path(job string) string { return filepath.Join(d.dir, job+".json") }

// Load reads a job's checkpoint.
func (d *Dir) Load(_ context.Context, job string) (*Checkpoint, error) {
	if !validJob(job) {
		return nil, fmt.Errorf("checkpoint: invalid job ID %q", job)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.load(job)
}

func (d *Dir) load(job string) (*Checkpoint, error) {
	b, err := os.ReadFile(d.Path(job))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, d.Path(job))
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %s is not a checkpoint: %w", d.Path(job), err)
	}
	if cp.Job != job {
		return nil, fmt.Errorf("checkpoint: %s holds job %q, not %q", d.Path(job), cp.Job, job)
	}
	return &cp, nil
}

// Save writes cp if the file holds revision cp.Rev (none for 0).
func (d *Dir) Save(_ context.Context, cp *Checkpoint) error {
	if !validJob(cp.Job) {
		return fmt.Errorf("checkpoint: invalid job ID %q", cp.Job)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var stored int64
	cur, err := d.load(cp.Job)
	switch {
	case err == nil:
		stored = cur.Rev
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if stored != cp.Rev {
		return fmt.Errorf("%w (%s: revision %d stored, %d expected)", ErrConflict, d.Path(cp.Job), stored, cp.Rev)
	}
	next := *cp
	next.Rev++
	next.Updated = d.now().UTC()
	b, err := json.MarshalIndent(&next, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.MkdirAll(d.dir, 0o750); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	tmp, err := os.CreateTemp(d.dir, cp.Job+".*.tmp")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("checkpoint: writing %s: %w", tmp.Name(), errors.Join(err, os.Remove(tmp.Name())))
	}
	if err := os.Rename(tmp.Name(), d.Path(cp.Job)); err != nil {
		return fmt.Errorf("checkpoint: %w", errors.Join(err, os.Remove(tmp.Name())))
	}
	cp.Rev, cp.Updated = next.Rev, next.Updated
	return nil
}

// Delete removes a job's file.
func (d *Dir) Delete(_ context.Context, job string) error {
	if !validJob(job) {
		return fmt.Errorf("checkpoint: invalid job ID %q", job)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.Remove(d.Path(job)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
