package export

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/pipeline"
)

// appendItemLine is AppendItemLine under the name the scanner's tests use.
func appendItemLine(buf []byte, item pipeline.Item) []byte { return AppendItemLine(buf, item) }

// endsThenFails reads r to its end, then fails when read again: the reader
// readGzipLines drains past the last byte to hash the whole object.
type endsThenFails struct {
	r     io.Reader
	ended bool
}

var errAfterEnd = errors.New("connection reset after the last byte")

func (e *endsThenFails) Read(p []byte) (int, error) {
	if e.ended {
		return 0, errAfterEnd
	}
	n, err := e.r.Read(p)
	e.ended = err == io.EOF
	return n, err
}

// TestReadGzipLinesDrainError: a read error while draining the object to
// hash it whole fails the file, naming it, rather than giving the MD5 of
// part of it.
func TestReadGzipLinesDrainError(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(`{"Item":{"PK":{"S":"a"}}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty object", nil},
		{"one line", gz.Bytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &endsThenFails{r: bytes.NewReader(tc.body)}
			st, err := readGzipLines(context.Background(), r, "data/a.json.gz", MaxLineBytes, true, func([]byte, int) error { return nil })
			if !errors.Is(err, errAfterEnd) || !strings.Contains(err.Error(), "data/a.json.gz") {
				t.Errorf("readGzipLines: %+v, %v; want the read error, naming the file", st, err)
			}
		})
	}
}
