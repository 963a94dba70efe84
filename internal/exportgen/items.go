package exportgen

import (
	"iter"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

func s(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }
func n(v string) *types.AttributeValueMemberN { return &types.AttributeValueMemberN{Value: v} }

// Specials returns items that exercise the edges: every attribute type, an
// item near DynamoDB's 400 KB limit, unicode and escapes, items without an
// entity type (and with an empty one), and entity types that are not safe
// as path segments.
func Specials() []pipeline.Item {
	big := make([]byte, 0, 399_000)
	r := rand.New(rand.NewPCG(400, 1))
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "café", "naïve", "日本語", "emoji😀", "tab\there", "quote\"d", "back\\slash"}
	for len(big) < 398_000 {
		big = append(big, words[r.IntN(len(words))]...)
		big = append(big, ' ')
	}
	return []pipeline.Item{
		{ // every attribute type
			"PK": s("WS#w1"), "SK": s("DOC#dall"), "EntityType": s("Document"), "version": n("3"),
			"docId": s("dall"), "title": s("All types"),
			"n_int": n("42"), "n_dec": n("120.50"), "n_neg": n("-17.25"), "n_exp": n("1E+2"), "n_small": n("0.000001"),
			"n_38":   n("12345678901234567890123456789012345678"),
			"bin":    &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xfe, 0xff}},
			"ss":     &types.AttributeValueMemberSS{Value: []string{"a", "b", "ünï"}},
			"ns":     &types.AttributeValueMemberNS{Value: []string{"1", "2.5", "1E+2"}},
			"bs":     &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
			"nul":    &types.AttributeValueMemberNULL{Value: true},
			"yes":    &types.AttributeValueMemberBOOL{Value: true},
			"no":     &types.AttributeValueMemberBOOL{Value: false},
			"empty":  s(""),
			"list0":  &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			"map0":   &types.AttributeValueMemberM{Value: pipeline.Item{}},
			"nested": &types.AttributeValueMemberM{Value: pipeline.Item{"inner": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), &types.AttributeValueMemberM{Value: pipeline.Item{"deep": s("x")}}}}}},
			"mixed": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("s"), n("1"), &types.AttributeValueMemberBOOL{Value: true},
				&types.AttributeValueMemberNULL{Value: true}, &types.AttributeValueMemberB{Value: []byte("b")}}},
			"unicode": s("Zoë Ó Briain — 東京 😀"),
			"escaped": s("She said \"hi\" \\ C:\\tmp\\x\nline 2\ttab \x01ctl"),
		},
		{ // near 400 KB
			"PK": s("WS#w1"), "SK": s("DOC#dbig"), "EntityType": s("Document"), "version": n("1"),
			"docId": s("dbig"), "title": s("Big"), "body": s(string(big)),
		},
		{"PK": s("USER#u900"), "SK": s("PROFILE"), "version": n("4"), "displayName": s("Zoë Ó Briain"), "marketingOptIn": &types.AttributeValueMemberBOOL{}},
		{"PK": s("USER#u901"), "SK": s("PROFILE"), "EntityType": s(""), "version": n("1")},
		{"PK": s("MISC#1"), "SK": s("A"), "EntityType": s("Order/Archived:2026?"), "version": n("1")},
		{"PK": s("MISC#2"), "SK": s("B"), "EntityType": s("Événement #1 100%"), "version": n("1")},
		{"PK": s("MISC#3"), "SK": s("C"), "EntityType": s("_unknown"), "version": n("1")},
	}
}

// FromHistory replays a simulated history: full holds the table's items
// after the first k records (a full export taken then), changes the net
// effect of the records after it on each item they touch (an incremental
// export from then to the end), and final the items at the end. The sim's
// items are sorted by PK then SK.
func FromHistory(h *sim.History, k int) (full []pipeline.Item, changes []Change, final []pipeline.Item) {
	state := map[string]pipeline.Item{}
	apply := func(r *sim.Record) {
		key := pipeline.ItemKey(r.Keys)
		if r.New == nil {
			delete(state, key)
		} else {
			state[key] = r.New
		}
	}
	k = min(k, len(h.Records))
	for i := range h.Records[:k] {
		apply(&h.Records[i])
	}
	snapshot := make(map[string]pipeline.Item, len(state))
	for key, it := range state {
		snapshot[key] = it
	}
	last := map[string]*sim.Record{}
	for i := k; i < len(h.Records); i++ {
		r := &h.Records[i]
		apply(r)
		last[pipeline.ItemKey(r.Keys)] = r
	}
	for key, r := range last {
		old, new := snapshot[key], state[key]
		if old == nil && new == nil {
			continue // created and deleted within the window
		}
		changes = append(changes, Change{Keys: r.Keys, Old: old, New: new, Time: r.Time})
	}
	sort.Slice(changes, func(i, j int) bool { return pipeline.ItemKey(changes[i].Keys) < pipeline.ItemKey(changes[j].Keys) })
	return sorted(snapshot), changes, sorted(state)
}

func sorted(m map[string]pipeline.Item) []pipeline.Item {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]pipeline.Item, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// Synthetic yields items until their export lines add up to at least
// targetBytes: copies of the templates (a simulated table's items) with
// rewritten keys and ids and reshuffled values, so the output has the seed
// domains' shapes and a realistic compression ratio. A template's copies are
// a whole pass over the templates apart, farther than any compressor's window.
func Synthetic(templates []pipeline.Item, targetBytes int64, seed uint64) iter.Seq[pipeline.Item] {
	return func(yield func(pipeline.Item) bool) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		var total int64
		var line []byte
		for pass := 0; ; pass++ {
			suffix := "~" + strconv.Itoa(pass)
			for _, t := range templates {
				it := make(pipeline.Item, len(t))
				for k, v := range t {
					it[k] = mutate(k, v, suffix, r)
				}
				line = pipeline.AppendItem(line[:0], it)
				total += int64(len(line) + len(`{"Item":}`) + 1)
				if !yield(it) || total >= targetBytes {
					return
				}
			}
		}
	}
}

// mutate rewrites one attribute of a copy: keys and ids get the copy's
// suffix, numbers and timestamps fresh random values.
func mutate(name string, v types.AttributeValue, suffix string, r *rand.Rand) types.AttributeValue {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		switch {
		case name == "PK" || strings.HasSuffix(name, "Id") || name == "opponent":
			return s(x.Value + suffix)
		case name == "SK" && x.Value != "PROFILE" && x.Value != "META":
			return s(x.Value + suffix)
		case strings.HasSuffix(name, "At"):
			t := time.Date(2026, 11, 1+r.IntN(29), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
			return s(t.Format(time.RFC3339))
		case name == "paymentRef":
			return s("pay_" + strconv.FormatUint(r.Uint64()%1e12, 36))
		}
	case *types.AttributeValueMemberN:
		if name == "version" || name == "ttl" {
			return v
		}
		return n(strconv.Itoa(r.IntN(100_000)))
	}
	return v
}
