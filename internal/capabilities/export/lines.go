package export

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"

	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/pipeline"
)

// FileError is an error in one export or output file, at a line when Line
// is not 0.
type FileError struct {
	File string
	Line int
	Err  error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ErrCorrupt matches data that cannot be read: bad compression, a truncated
// file, a line that is not an export line, counts or checksums that do not
// reconcile with the manifest.
var ErrCorrupt = errors.New("corrupt export data")

type corrupt struct{ error }

func (c corrupt) Unwrap() []error { return []error{c.error, ErrCorrupt} }

func corruptf(format string, args ...any) error { return corrupt{fmt.Errorf(format, args...)} }

// Corrupt returns the error of unreadable data in file at line (0: the
// file as a whole), matching ErrCorrupt. A decoder's error loses the
// "file line N:" it repeats.
func Corrupt(file string, line int, err error) *FileError {
	return &FileError{File: file, Line: line, Err: corrupt{decodeCause(err)}}
}

// AppendItemLine appends item as a full-export line, {"Item":{…}}
// (attribute names sorted), without a newline.
func AppendItemLine(buf []byte, item pipeline.Item) []byte {
	buf = append(buf, `{"Item":`...)
	buf = pipeline.AppendItem(buf, item)
	return append(buf, '}')
}

// DecodeItem decodes a full-export line with dec: the change it stands
// for, whose New is the item, or an error naming name and the line that
// matches ErrCorrupt.
func DecodeItem(dec *pipeline.ExportDecoder, line []byte, name string, n int) (pipeline.Change, error) {
	c, err := dec.DecodeItem(line, name, n)
	if err != nil {
		return c, Corrupt(name, n, err)
	}
	return c, nil
}

// decodeCause strips the decoder's "file line N:" wrapping, which the
// caller's FileError repeats.
func decodeCause(err error) error {
	var re *pipeline.RecordError
	if errors.As(err, &re) {
		if inner := errors.Unwrap(re.Err); inner != nil {
			return inner
		}
		return re.Err
	}
	return err
}

// countingReader counts and hashes the compressed bytes read through it.
type countingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	return n, err
}

// readGzipLines reads gzip-compressed lines, and hashes the compressed bytes
// with MD5 if hash is set. An empty object is a file of no lines (an empty
// partition's data file).
func readGzipLines(ctx context.Context, r io.Reader, name string, maxLine int, hash bool, fn func(line []byte, n int) error) (FileStats, error) {
	cr := &countingReader{r: r}
	if hash {
		cr.h = md5.New()
	}
	br := bufio.NewReaderSize(cr, 256<<10)
	var st FileStats
	finish := func() (FileStats, error) {
		if _, err := io.Copy(io.Discard, br); err != nil { // hash the whole object
			return st, &FileError{File: name, Err: err}
		}
		st.CompressedBytes = cr.n
		if hash {
			st.MD5 = base64.StdEncoding.EncodeToString(cr.h.Sum(nil))
		}
		return st, nil
	}
	if _, err := br.Peek(1); err == io.EOF {
		return finish()
	} else if err != nil {
		return st, &FileError{File: name, Err: err}
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return st, &FileError{File: name, Err: corruptf("not gzip: %v", err)}
	}
	// Close frees the decompressor; its error, if any, is one that a read
	// has already returned.
	defer func() { _ = zr.Close() }()
	err = scanLines(ctx, zr, maxLine, func(line []byte, n int) error {
		st.Lines++
		st.UncompressedBytes += int64(len(line)) + 1
		return fn(line, n)
	})
	if err != nil {
		var le *lineErr
		if errors.As(err, &le) {
			return st, &FileError{File: name, Line: le.line, Err: le.err}
		}
		return st, err
	}
	return finish()
}

// lineErr is a reading error at a line.
type lineErr struct {
	line int
	err  error
}

func (e *lineErr) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineErr) Unwrap() error { return e.err }

// ScanLines calls fn with each line of r (without its newline; the slice
// is valid only during the call) and its number, from 1. A read error (a
// gzip checksum, a truncated stream), an empty line or one longer than
// pipeline.MaxExportLineBytes is a FileError naming name and the line.
func ScanLines(ctx context.Context, r io.Reader, name string, fn func(line []byte, n int) error) error {
	err := scanLines(ctx, r, pipeline.MaxExportLineBytes, fn)
	var le *lineErr
	if errors.As(err, &le) {
		return &FileError{File: name, Line: le.line, Err: le.err}
	}
	return err
}

// scanLines splits r into lines. A read error (a gzip checksum, a truncated
// stream) is reported at the line being read. The last line may lack its
// newline; an empty line is an error.
func scanLines(ctx context.Context, r io.Reader, maxLine int, fn func(line []byte, n int) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte // a line longer than br's buffer, being assembled
	inLong := false
	n := 0
	for {
		if n&1023 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > maxLine {
				return &lineErr{n + 1, corruptf("line longer than %d bytes", maxLine)}
			}
			long = append(long, chunk...)
			inLong = true
			continue
		}
		line := chunk
		if inLong {
			long = append(long, chunk...)
			line = long
		}
		if err != nil && err != io.EOF {
			return &lineErr{n + 1, corruptf("%v (a corrupt or truncated file)", readErr(err))}
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			if err == io.EOF {
				return nil
			}
			return &lineErr{n + 1, corruptf("empty line")}
		}
		if len(line) > maxLine {
			return &lineErr{n + 1, corruptf("line longer than %d bytes", maxLine)}
		}
		n++
		if ferr := fn(line, n); ferr != nil {
			return ferr
		}
		long, inLong = long[:0], false
		if err == io.EOF {
			return nil
		}
	}
}

func readErr(err error) error {
	if err == io.ErrUnexpectedEOF {
		return errors.New("unexpected end of data: truncated")
	}
	return err
}

// sortFiles orders data files by key, for deterministic plans.
func sortFiles(fs []DataFile) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].DataFileS3Key < fs[j].DataFileS3Key })
}
