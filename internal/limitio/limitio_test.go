package limitio

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
)

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bomb is gzip of n zero bytes, written a block at a time.
func bomb(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	block := make([]byte, 1<<20)
	for ; n > 0; n -= len(block) {
		if _, err := zw.Write(block[:min(n, len(block))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadAll(t *testing.T) {
	event := []byte(`{"Records":[]}`)
	tests := []struct {
		name    string
		in      []byte
		max     int
		want    []byte
		wantErr string
	}{
		{"Plain", event, 100, event, ""},
		{"PlainAtTheLimit", event, len(event), event, ""},
		{"PlainOver", event, len(event) - 1, nil, "more than 13 bytes"},
		{"Gzip", gz(t, event), 100, event, ""},
		{"GzipOver", gz(t, event), 10, nil, "decompresses to more than 10 bytes"},
		{"Bomb", bomb(t, 64<<20), 6 << 20, nil, "decompresses to more than 6291456 bytes"},
		{"Truncated", gz(t, event)[:20], 100, nil, "corrupt gzip: truncated"},
		{"BadHeader", []byte{0x1f, 0x8b, 0, 0}, 100, nil, "corrupt gzip"},
		{"BadChecksum", func() []byte { b := gz(t, event); b[len(b)-8] ^= 0xff; return b }(), 100, nil, "corrupt gzip: gzip: invalid checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadAll(tt.in, tt.max)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("%q, %v", got, err)
			}
		})
	}
	_, err := ReadAll(bomb(t, 1<<20), 1000)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Max != 1000 || !tl.Compressed {
		t.Errorf("err = %#v", err)
	}
}

// A bomb costs no more than its limit in memory.
func BenchmarkBomb(b *testing.B) {
	data := bomb(b, 1<<30)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ReadAll(data, 6<<20); err == nil {
			b.Fatal("no error")
		}
	}
}
