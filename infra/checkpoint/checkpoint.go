// Package checkpoint keeps how far a job has come, so that an interrupted
// one resumes: for a replay, per shard, the last sequence number applied and
// whether the shard is finished (shardread.Position); for a batch load
// (infra/batchwrite), per source, how many of its items are written.
//
// A checkpoint belongs to a job: one replay of one stream, window, set of
// projections and target store, or one load of one output into one table
// (JobID, JobIDFor). Saves are conditional on the revision the saver last
// saw, so two runs of the same job at once cannot both go on: the second
// save of the slower one fails with ErrConflict.
//
// Two stores implement Store and pass the same suite (checkpointtest):
// NewObjects, one JSON object per job in an object store (NewDir: a local
// directory, the default; or the S3 prefix of a load's output), and NewTable,
// one item per job in a DynamoDB table with string keys PK and SK (the
// aggregate table itself will do: the items, PK "C#<job>", are none of its
// own).
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/tributary/tributary/pipeline/shardread"
)

// Checkpoint is a job's progress.
type Checkpoint struct {
	// Job identifies the job (JobID).
	Job string `json:"job"`
	// Rev is the revision last saved: 0 for a checkpoint never saved. Save
	// is conditioned on it and increments it.
	Rev int64 `json:"rev"`
	// About describes the job for people: source, window, target.
	About map[string]string `json:"about,omitempty"`
	// Shards holds each shard's position (a replay).
	Shards map[string]shardread.Position `json:"shards,omitempty"`
	// Sources holds, per source (an output part, an archive object), the
	// number of its items written, in order from the first (a batch load).
	Sources map[string]int64 `json:"sources,omitempty"`
	// Updated is when the checkpoint was last saved.
	Updated time.Time `json:"updated"`
}

// Store keeps checkpoints. Implementations are safe for concurrent use.
type Store interface {
	// Load returns a job's checkpoint, or an error matching ErrNotFound.
	Load(ctx context.Context, job string) (*Checkpoint, error)
	// Save stores cp if the stored revision is cp.Rev (0: none is stored),
	// and then increments cp.Rev and sets cp.Updated. Otherwise it stores
	// nothing and returns an error matching ErrConflict.
	Save(ctx context.Context, cp *Checkpoint) error
	// Delete removes a job's checkpoint; deleting none is not an error.
	Delete(ctx context.Context, job string) error
}

var (
	// ErrNotFound is the error of a Load when the job has no checkpoint.
	ErrNotFound = errors.New("checkpoint: not found")
	// ErrConflict is the error of a Save when the stored checkpoint is not
	// the revision the saver read: another run of the job saved since.
	ErrConflict = errors.New("checkpoint: saved by another run of the job since it was read")
)

// JobID names a replay by what defines it (source, window, projections,
// target): "replay-" and 16 hex digits of their SHA-256. The same parts give
// the same ID, on any machine.
func JobID(parts ...string) string { return JobIDFor("replay", parts...) }

// JobIDFor names a job of a kind ("replay", "reimport", …) by what defines
// it: kind, "-" and 16 hex digits of the parts' SHA-256.
func JobIDFor(kind string, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return kind + "-" + hex.EncodeToString(sum[:8])
}

// validJob reports whether a job ID is safe as a file name and a key.
func validJob(job string) bool {
	if job == "" || len(job) > 128 {
		return false
	}
	for _, c := range job {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
