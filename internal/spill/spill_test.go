package spill_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/tributary/tributary/internal/spill"
)

// TestSetRoundTrip: records come back from their partition in the order
// written, each whole; a dropped partition reads empty; Remove leaves
// nothing behind.
func TestSetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := spill.New(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]string{}
	for i := range 5000 {
		p := i % 3
		rec := fmt.Sprintf("record %d %s", i, bytes.Repeat([]byte{'x'}, i%300))
		want[p] = append(want[p], rec)
		if err := s.Write(p, []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for p := range s.Len() {
		var got []string
		if err := s.Read(p, func(rec []byte) error { got = append(got, string(rec)); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[p]) {
			t.Fatalf("partition %d: %d records back, want %d", p, len(got), len(want[p]))
		}
		total += s.Size(p)
	}
	if total != s.Bytes {
		t.Errorf("%d bytes on disk, %d counted", total, s.Bytes)
	}
	if err := s.Drop(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Read(1, func([]byte) error { t.Error("a dropped partition read"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// FuzzDecoder: a record of any bytes decodes without panicking; one cut
// short says so; what an Encoder wrote decodes back.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{}, "key", uint64(7))
	f.Add([]byte{0xff, 0xff, 0xff}, "", uint64(1<<63))
	f.Fuzz(func(t *testing.T, junk []byte, s string, u uint64) {
		d := spill.Decoder{B: junk}
		d.Byte()
		d.Uint()
		d.Text()
		var e spill.Encoder
		e.Byte('k')
		e.Uint(u)
		e.Text(s)
		d = spill.Decoder{B: e.B}
		if k, gu, gs := d.Byte(), d.Uint(), d.Text(); k != 'k' || gu != u || gs != s || d.Err != nil || len(d.B) != 0 {
			t.Fatalf("round trip: %q %d %q %v", k, gu, gs, d.Err)
		}
		if len(e.B) > 1 {
			d = spill.Decoder{B: e.B[:len(e.B)-1]}
			d.Byte()
			d.Uint()
			d.Text()
			if d.Err == nil {
				t.Fatal("a record cut short decoded")
			}
		}
	})
}
