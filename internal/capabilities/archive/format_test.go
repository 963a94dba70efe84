package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/infra/objstore/objstoretest"
	"github.com/tributary/tributary/pipeline"
)

func TestEntitySegment(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Comment", "Comment"},
		{"", UnknownEntity},
		{"_unknown", "%5Funknown"}, // a real type never lands among the untyped
		{"_private", "%5Fprivate"},
		{"a_b", "a_b"},
		{".", "%2E"},
		{"..", "%2E."},
		{".hidden", "%2Ehidden"},
		{"Legacy/Type v2", "Legacy%2FType%20v2"},
		{"100%", "100%25"},
		{"a=b", "a%3Db"},
		{"Café", "Caf%C3%A9"},
		{"x~y-z.1", "x~y-z.1"},
	} {
		if got := EntitySegment(tc.in); got != tc.want {
			t.Errorf("EntitySegment(%q) = %q, want %q", tc.in, got, tc.want)
		}
		back, ok := entityFromSegment(tc.want)
		if !ok || back != tc.in {
			t.Errorf("EntityFromSegment(%q) = %q, %t, want %q", tc.want, back, ok, tc.in)
		}
	}
	long := EntitySegment(strings.Repeat("/", 100))
	if !strings.HasPrefix(long, "_sha256-") || len(long) != len("_sha256-")+64 {
		t.Errorf("long type: %q, want _sha256- and 64 hex digits", long)
	}
	// What versions before the whole hash named it: the first 16 digits.
	if legacy, ok := legacyEntitySegment(strings.Repeat("/", 100)); !ok || legacy != long[:len("_sha256-")+16] {
		t.Errorf("LegacyEntitySegment = %q, %t, want %q", legacy, ok, long[:len("_sha256-")+16])
	}
	if legacy, ok := legacyEntitySegment("Comment"); ok {
		t.Errorf("LegacyEntitySegment(Comment) = %q, true: a type that fits was never hashed", legacy)
	}
	if _, ok := entityFromSegment(long); ok {
		t.Errorf("a hashed segment cannot be reversed")
	}
	for _, bad := range []string{"", "_x", "a/b", "%zz", "%4", "a b"} {
		if _, ok := entityFromSegment(bad); ok {
			t.Errorf("EntityFromSegment(%q) accepted", bad)
		}
	}
}

// FuzzEntitySegment: every type maps to one safe segment, and back.
func FuzzEntitySegment(f *testing.F) {
	for _, s := range []string{"Comment", "", "_unknown", "..", "a/b c%", "Café"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg := EntitySegment(s)
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "/=\\ ") || len(seg) > 200 {
			t.Fatalf("EntitySegment(%q) = %q is not a safe path segment", s, seg)
		}
		if s != "" && seg == UnknownEntity {
			t.Fatalf("type %q maps to the untyped segment", s)
		}
		if strings.HasPrefix(seg, "_sha256-") {
			return
		}
		back, ok := entityFromSegment(seg)
		if !ok || back != s {
			t.Fatalf("round trip of %q: %q -> %q, %t", s, seg, back, ok)
		}
	})
}

func TestDateOf(t *testing.T) {
	removed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := func(v string) pipeline.Item { return pipeline.Item{"ttl": &types.AttributeValueMemberN{Value: v}} }
	for _, tc := range []struct {
		name    string
		item    pipeline.Item
		removed time.Time
		want    string
	}{
		{"ttl", n("1767225000"), removed, "2025-12-31"},
		{"ttl midnight", n("1767225600"), removed, "2026-01-01"},
		{"fractional ttl", n("1767225599.999"), removed, "2025-12-31"},
		{"no ttl", pipeline.Item{}, removed, "2026-01-02"},
		{"string ttl", pipeline.Item{"ttl": &types.AttributeValueMemberS{Value: "1767225000"}}, removed, "2026-01-02"},
		{"negative ttl", n("-5"), removed, "2026-01-02"},
		{"milliseconds by mistake", n("1767225000000"), removed, "2026-01-02"},
		{"38 digits", n("99999999999999999999999999999999999999"), removed, "2026-01-02"},
		{"epoch", n("0"), removed, "1970-01-01"},
		{"nothing", pipeline.Item{}, time.Time{}, unknownDate},
	} {
		if got := dateOf(tc.item, "ttl", tc.removed); got != tc.want {
			t.Errorf("%s: DateOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseKey(t *testing.T) {
	good := "entity=Legacy%2FType/date=2026-01-01/4421584500000000017450439091.jsonl.gz"
	if got, ok := ParseKey(good); !ok || got != (KeyInfo{EntitySegment: "Legacy%2FType", Date: "2026-01-01", FirstSeq: "4421584500000000017450439091"}) {
		t.Errorf("ParseKey(%q) = %+v, %t", good, got, ok)
	}
	if k := ObjectKey("", "Legacy%2FType", "2026-01-01", "4421584500000000017450439091"); k != good {
		t.Errorf("ObjectKey = %q", k)
	}
	for _, bad := range []string{
		"entity=A/date=2026-01-01/12.json.gz",
		"entity=A/date=2026-13-01/12.jsonl.gz",
		"entity=A/date=2026-01-01/x12.jsonl.gz",
		"entity=/date=2026-01-01/12.jsonl.gz",
		"x/entity=A/date=2026-01-01/12.jsonl.gz",
		"entity=A/2026-01-01/12.jsonl.gz",
		"manifest.json",
	} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestLineRoundTrip(t *testing.T) {
	item := pipeline.Item{
		"PK": &types.AttributeValueMemberS{Value: "A#1"},
		"n":  &types.AttributeValueMemberN{Value: "1.50"},
		"s":  &types.AttributeValueMemberS{Value: "tab\there <&> \u2028"},
	}
	m := Meta{EventID: "e1", RemovedAt: "2026-01-01T00:00:00Z", Table: "T", StreamARN: "arn:x", SequenceNumber: "123"}
	line := AppendLine(nil, item, m)
	if line[len(line)-1] != '\n' || bytes.Count(line, []byte{'\n'}) != 1 {
		t.Fatalf("one line with a final newline, got %q", line)
	}
	l, err := ParseLine(line[:len(line)-1])
	if err != nil {
		t.Fatal(err)
	}
	if l.Archive != m {
		t.Errorf("meta %+v", l.Archive)
	}
	if want := pipeline.AppendItem(nil, item); !bytes.Equal(l.Item, want) {
		t.Errorf("item %s, want %s", l.Item, want)
	}
	for _, bad := range []string{`{}`, `{"Item":null}`, `{"Item":1}`, `[]`, `{"Item":{}`} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("ParseLine(%s) accepted", bad)
		}
	}
}

func TestGzipDeterministic(t *testing.T) {
	a, b := Gzip([]byte("hello\n")), Gzip([]byte("hello\n"))
	if !bytes.Equal(a, b) {
		t.Fatal("equal input, different gzip bytes")
	}
	if out, err := gunzip(a); err != nil || string(out) != "hello\n" {
		t.Fatalf("%q %v", out, err)
	}
}

// TestReadLines: lines longer than the read buffer, and objects that are
// not whole.
func TestReadLines(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	long := bytes.Repeat([]byte("x"), 300_000)
	store.set(t, "ok", Gzip(append(append(append([]byte("a\n"), long...), '\n'), "b\n"...)))
	store.set(t, "truncated", Gzip([]byte("a\nb")))
	store.set(t, "blank", Gzip([]byte("a\n\nb\n")))
	store.set(t, "plain", []byte("a\n"))
	a := Open(store, "")
	var got []int
	if err := a.ReadLines(ctx, "ok", func(n int, line []byte) error { got = append(got, len(line)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != len(long) || got[2] != 1 {
		t.Errorf("line lengths %v", got)
	}
	for key, want := range map[string]string{
		"truncated": "line 2: no final newline",
		"blank":     "line 2: empty line",
		"plain":     "not gzip",
		"missing":   "not found",
	} {
		err := a.ReadLines(ctx, key, func(int, []byte) error { return nil })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", key, err, want)
		}
	}
	// An object whose body fails to close is not read as if all were well.
	errClose := errors.New("connection reset while closing")
	if err := Open(objstoretest.Faulty(store.Dir, "", objstoretest.Faults{Close: errClose}), "").ReadLines(ctx, "ok", func(int, []byte) error { return nil }); !errors.Is(err, errClose) {
		t.Errorf("ok, failing to close: %v, want the close error", err)
	}
}

// A gzip bomb among the archive's objects is read no further than the
// longest archive line.
func TestReadLinesBounded(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	block := make([]byte, 1<<20)
	for n := 0; n <= maxLineBytes+(1<<20); n += len(block) {
		if _, err := zw.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	key := "entity=Order/date=2026-11-30/4421584500000000017450439091.jsonl.gz"
	if err := objstore.NewDir(dir).Put(context.Background(), key, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	err := Open(objstore.NewDir(dir), "").ReadLines(context.Background(), key, func(int, []byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line 1: longer than %d bytes", maxLineBytes)) {
		t.Fatalf("err = %v", err)
	}
}
