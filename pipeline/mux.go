package pipeline

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/tributary/tributary/internal/quote"
)

// UnknownPolicy says what to do with a change whose image has no entity type,
// or a type nothing is registered for.
type UnknownPolicy uint8

const (
	// SkipUnknown skips such images, counts them and logs the item's key.
	SkipUnknown UnknownPolicy = iota
	// FailUnknown fails the change with a permanent *UnknownTypeError.
	FailUnknown
	// IgnoreUnknown skips such images and counts them, without a log
	// line: for a handler that reads a few of a table's types and expects
	// the others (a remodel of some entity types).
	IgnoreUnknown
)

// Mux routes changes to the values registered for their entity types (the
// engine's projections). Register everything before use; routing is then
// safe for concurrent use.
type Mux[H any] struct {
	// Policy applies to images whose type is missing or unregistered.
	Policy UnknownPolicy
	// Logger receives the skip lines; nil means slog.Default().
	Logger *slog.Logger

	routes  map[string][]H
	others  []H
	ignored map[string]bool

	mu      sync.Mutex
	skipped map[string]int64
}

// NewMux returns an empty Mux with the SkipUnknown policy.
func NewMux[H any]() *Mux[H] {
	return &Mux[H]{routes: map[string][]H{}, ignored: map[string]bool{}, skipped: map[string]int64{}}
}

// Register routes images of entityType to h, after those registered before.
// It panics on an empty type: that is a wiring mistake.
func (m *Mux[H]) Register(entityType string, h H) {
	if entityType == "" {
		panic("pipeline: Register with an empty entity type")
	}
	m.routes[entityType] = append(m.routes[entityType], h)
}

// RegisterOthers routes the images of every entity type nothing is
// registered for, and those without one, to h, after those registered
// before: for a handler that takes a table's items whatever their type (a
// remodel that copies the types its transform does not name).
func (m *Mux[H]) RegisterOthers(h H) { m.others = append(m.others, h) }

// Ignore declares entityType as known but not routed anywhere: its images are
// skipped without a log line under either policy.
func (m *Mux[H]) Ignore(entityType string) { m.ignored[entityType] = true }

// Has reports whether anything is registered for entityType (or for
// every other type, RegisterOthers).
func (m *Mux[H]) Has(entityType string) bool {
	_, ok := m.routes[entityType]
	return ok || len(m.others) > 0
}

// Types returns the registered entity types, sorted.
func (m *Mux[H]) Types() []string {
	out := make([]string, 0, len(m.routes))
	for t := range m.routes {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Lookup returns what is registered for an image's entity type. An image with
// a missing or unregistered type gets nothing under SkipUnknown (counted and
// logged), and an *UnknownTypeError under FailUnknown. A nil image has no
// routes and no error.
func (m *Mux[H]) Lookup(ctx context.Context, c *Change, img Item, entityType string) ([]H, error) {
	if img == nil {
		return nil, nil
	}
	if hs, ok := m.routes[entityType]; ok {
		return hs, nil
	}
	if len(m.others) > 0 {
		return m.others, nil
	}
	if (entityType != "" && m.ignored[entityType]) || m.Policy == IgnoreUnknown {
		m.count(entityType)
		return nil, nil
	}
	if m.Policy == FailUnknown {
		return nil, &UnknownTypeError{Type: entityType, Key: KeyString(c.Keys)}
	}
	m.count(entityType)
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	msg := "skipping change: no handler for entity type"
	if entityType == "" {
		msg = "skipping change: item has no entity type"
	}
	log.LogAttrs(ctx, slog.LevelWarn, msg, slog.String("entityType", quote.Short(entityType)),
		slog.String("key", KeyString(c.Keys)), slog.String("seq", c.Position.SequenceNumber))
	return nil, nil
}

func (m *Mux[H]) count(entityType string) {
	if entityType == "" {
		entityType = "(none)"
	}
	m.mu.Lock()
	m.skipped[entityType]++
	m.mu.Unlock()
}

// Skipped returns how many images were skipped per entity type ("(none)" for
// a missing type) since the Mux was made.
func (m *Mux[H]) Skipped() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.skipped))
	for k, v := range m.skipped {
		out[k] = v
	}
	return out
}

// Touches reports whether a change can matter to a handler that reads the
// entity types read says it reads: its new or old image has such a type,
// or it is a removal without an old image (only a ledger knows what the
// item was). A change that touches nothing is skipped.
func Touches(c *Change, read func(entityType string) bool) bool {
	return (c.New != nil && read(c.NewType)) || (c.Old != nil && read(c.OldType)) ||
		(c.Kind == Remove && c.Old == nil)
}

// KeyString renders an item's keys for logs and errors: name=value pairs in
// name order, e.g. "PK=USER#u42 SK=ORDER#2026-11-30#o1".
func KeyString(keys Item) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(KeyValue(keys[k]))
	}
	return b.String()
}
