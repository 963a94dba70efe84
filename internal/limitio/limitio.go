// Package limitio reads input whose size its format bounds (a Lambda event,
// an invocation record, a GetRecords body), gzip-compressed or not, and
// never reads or decompresses past that bound: a gzip bomb (6 GB of zeros
// in 26 MB) fails with an error that names the limit, instead of filling
// memory.
package limitio

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// TooLargeError is input longer than its format allows.
type TooLargeError struct {
	Max        int  // bytes allowed
	Compressed bool // the input was gzip-compressed: Max bounds what it decompresses to
}

func (e *TooLargeError) Error() string {
	if e.Compressed {
		return fmt.Sprintf("decompresses to more than %d bytes", e.Max)
	}
	return fmt.Sprintf("more than %d bytes", e.Max)
}

// IsGzip reports whether b starts with gzip's magic bytes.
func IsGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Reader reads r, decompressed if it is gzip (by its magic bytes).
type Reader struct {
	*bufio.Reader
	// Compressed reports that r was gzip.
	Compressed bool
}

// NewReader returns a Reader of r; it fails only on a gzip header that
// cannot be read.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(2)
	if !IsGzip(head) {
		return &Reader{Reader: br}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("corrupt gzip: %w", err)
	}
	return &Reader{Reader: bufio.NewReaderSize(zr, 64<<10), Compressed: true}, nil
}

// ReadAll reads the rest of r, at most max bytes: more is a
// *TooLargeError, read no further than one byte past max.
func (r *Reader) ReadAll(max int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		if r.Compressed && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("corrupt gzip: %w", err)
		}
		if r.Compressed {
			return nil, errors.New("corrupt gzip: truncated")
		}
		return nil, err
	}
	if len(data) > max {
		return nil, &TooLargeError{Max: max, Compressed: r.Compressed}
	}
	return data, nil
}

// ReadAll reads data, gunzipping it if it is gzip, at most max bytes.
func ReadAll(data []byte, max int) ([]byte, error) {
	if !IsGzip(data) {
		if len(data) > max {
			return nil, &TooLargeError{Max: max}
		}
		return data, nil
	}
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return r.ReadAll(max)
}
