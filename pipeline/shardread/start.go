package shardread

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// StartSpec is where a read starts, as an operator writes it (ParseStart):
// one Start for every shard, or hand-given positions in some shards.
type StartSpec struct {
	// Start applies to every shard that has no position of its own.
	Start Start
	// At gives shards their own starting sequence number (inclusive). Their
	// descendants are read from their start; their ancestors, and every shard
	// that is neither, are not read at all.
	At map[string]string
}

// ParseStart reads a --start value:
//
//	TRIM_HORIZON                        the oldest record the stream keeps
//	2026-11-30T10:00:00Z                records from that time on (RFC 3339)
//	SHARD:SEQ[,SHARD:SEQ...]            from those sequence numbers in those shards (inclusive),
//	                                    and on into their children; no other shard is read
//	                                    (e.g. a failed batch's shardId and startSequenceNumber)
func ParseStart(s string) (StartSpec, error) {
	s = strings.TrimSpace(s)
	switch strings.ToUpper(s) {
	case "", "TRIM_HORIZON":
		return StartSpec{Start: Start{Type: TrimHorizon}}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return StartSpec{Start: Start{Type: AtTimestamp, Time: t.UTC()}}, nil
	}
	if !strings.Contains(s, ":") || strings.HasPrefix(s, "20") && strings.Contains(s, "T") {
		return StartSpec{}, fmt.Errorf("start %q: want TRIM_HORIZON, an RFC 3339 time or SHARD:SEQ[,SHARD:SEQ...]", s)
	}
	spec := StartSpec{Start: Start{Type: TrimHorizon}, At: map[string]string{}}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		i := strings.LastIndexByte(part, ':')
		if i <= 0 || i == len(part)-1 {
			return StartSpec{}, fmt.Errorf("start %q: %q is not SHARD:SEQ", s, part)
		}
		shard, seq := part[:i], part[i+1:]
		for _, c := range seq {
			if c < '0' || c > '9' {
				return StartSpec{}, fmt.Errorf("start %q: sequence number %q is not a decimal number", s, seq)
			}
		}
		if _, dup := spec.At[shard]; dup {
			return StartSpec{}, fmt.Errorf("start %q: shard %s given twice", s, shard)
		}
		spec.At[shard] = seq
	}
	return spec, nil
}

// String renders the spec in ParseStart's syntax, shards sorted: a stable
// name for a checkpoint's job.
func (s StartSpec) String() string {
	if len(s.At) > 0 {
		shards := make([]string, 0, len(s.At))
		for sh := range s.At {
			shards = append(shards, sh)
		}
		sort.Strings(shards)
		parts := make([]string, len(shards))
		for i, sh := range shards {
			parts[i] = sh + ":" + s.At[sh]
		}
		return strings.Join(parts, ",")
	}
	if s.Start.Type == AtTimestamp {
		return s.Start.Time.UTC().Format(time.RFC3339Nano)
	}
	return s.Start.Type.String()
}

// ancestors returns every shard that id descends from, among shards.
func ancestors(shards []Shard, id string) []string {
	byID := make(map[string]Shard, len(shards))
	for _, s := range shards {
		byID[s.ID] = s
	}
	seen := map[string]bool{}
	var out []string
	var walk func(string)
	walk = func(id string) {
		for _, p := range byID[id].Parents {
			if seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
			walk(p)
		}
	}
	walk(id)
	sort.Strings(out)
	return out
}
