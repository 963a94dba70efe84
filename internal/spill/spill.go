// Package spill cuts a stream of records into partitions on local disk,
// so that a job whose whole state would not fit in memory can be done one
// partition at a time. A record is a byte string; a partition is a file of
// records, each length-prefixed, in the order written. Writes are
// buffered and sequential; memory holds one buffer per partition.
package spill

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// bufSize is each partition's write buffer.
const bufSize = 32 << 10

// Set is a set of partitions under one directory.
type Set struct {
	dir   string
	files []*os.File
	bufs  []*bufio.Writer
	// Bytes is how many bytes the set's records take on disk, with their
	// length prefixes.
	Bytes int64
	lenb  [binary.MaxVarintLen64]byte
}

// New creates a set of n partitions in a new directory under dir (the
// system's temporary directory when empty). Remove removes it.
func New(dir string, n int) (*Set, error) {
	d, err := os.MkdirTemp(dir, "tributary-spill-")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return &Set{dir: d, files: make([]*os.File, n), bufs: make([]*bufio.Writer, n)}, nil
}

// Len is how many partitions the set has.
func (s *Set) Len() int { return len(s.files) }

// Write appends a record to partition p.
func (s *Set) Write(p int, rec []byte) error {
	if s.bufs[p] == nil {
		f, err := os.Create(s.name(p))
		if err != nil {
			return fmt.Errorf("spill: %w", err)
		}
		s.files[p], s.bufs[p] = f, bufio.NewWriterSize(f, bufSize)
	}
	n := binary.PutUvarint(s.lenb[:], uint64(len(rec)))
	if _, err := s.bufs[p].Write(s.lenb[:n]); err != nil {
		return fmt.Errorf("spill: partition %d: %w", p, err)
	}
	if _, err := s.bufs[p].Write(rec); err != nil {
		return fmt.Errorf("spill: partition %d: %w", p, err)
	}
	s.Bytes += int64(n + len(rec))
	return nil
}

func (s *Set) name(p int) string { return filepath.Join(s.dir, fmt.Sprintf("p%06d", p)) }

// Size is how many bytes partition p holds (after Flush).
func (s *Set) Size(p int) int64 {
	if s.files[p] == nil {
		return 0
	}
	fi, err := s.files[p].Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Flush writes every partition's buffer out, so that Read sees all
// records written so far.
func (s *Set) Flush() error {
	for p, b := range s.bufs {
		if b != nil {
			if err := b.Flush(); err != nil {
				return fmt.Errorf("spill: partition %d: %w", p, err)
			}
		}
	}
	return nil
}

// Read calls fn for every record of partition p, in the order written
// (after Flush). The record is valid only until fn returns.
func (s *Set) Read(p int, fn func(rec []byte) error) error {
	if s.files[p] == nil {
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(s.files[p], 0, 1<<62), bufSize)
	var rec []byte
	for {
		n, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("spill: partition %d: %w", p, err)
		}
		if uint64(cap(rec)) < n {
			rec = make([]byte, n)
		}
		rec = rec[:n]
		if _, err := io.ReadFull(r, rec); err != nil {
			return fmt.Errorf("spill: partition %d: a record cut short: %w", p, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// Drop removes partition p's file, once read.
func (s *Set) Drop(p int) error {
	if s.files[p] == nil {
		return nil
	}
	err := s.files[p].Close()
	s.files[p], s.bufs[p] = nil, nil
	return errors.Join(err, os.Remove(s.name(p)))
}

// Remove closes and removes every partition and the set's directory.
func (s *Set) Remove() error {
	var errs []error
	for _, f := range s.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	clear(s.files)
	clear(s.bufs)
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// Encoder appends the fields of a record.
type Encoder struct{ B []byte }

// Reset empties the record.
func (e *Encoder) Reset() { e.B = e.B[:0] }

// Byte appends a byte.
func (e *Encoder) Byte(b byte) { e.B = append(e.B, b) }

// Uint appends an unsigned integer.
func (e *Encoder) Uint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// Text appends a string, length first.
func (e *Encoder) Text(s string) {
	e.B = binary.AppendUvarint(e.B, uint64(len(s)))
	e.B = append(e.B, s...)
}

// Decoder reads the fields of a record, in the order Encoder appended
// them; after the first field missing, every read gives zero and Err says
// so.
type Decoder struct {
	B   []byte
	Err error
}

func (d *Decoder) fail() {
	if d.Err == nil {
		d.Err = errors.New("spill: a record cut short")
	}
	d.B = nil
}

// Byte reads a byte.
func (d *Decoder) Byte() byte {
	if len(d.B) == 0 {
		d.fail()
		return 0
	}
	b := d.B[0]
	d.B = d.B[1:]
	return b
}

// Uint reads an unsigned integer.
func (d *Decoder) Uint() uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Text reads a string.
func (d *Decoder) Text() string {
	n := d.Uint()
	if uint64(len(d.B)) < n {
		d.fail()
		return ""
	}
	s := string(d.B[:n])
	d.B = d.B[n:]
	return s
}

// Keys reads the records of partition p that are of kind (their first
// byte) and hold a string next, as Encoder.Text wrote it: a set of
// those strings.
func (s *Set) Keys(p int, kind byte) (map[string]bool, error) {
	keys := map[string]bool{}
	err := s.Each(p, kind, func(d *Decoder) error {
		keys[d.Text()] = true
		return nil
	})
	return keys, err
}

// Each calls fn for every record of partition p that is of kind (its
// first byte), with a Decoder past it; a record fn leaves cut short is an
// error.
func (s *Set) Each(p int, kind byte, fn func(d *Decoder) error) error {
	return s.Read(p, func(rec []byte) error {
		if len(rec) == 0 || rec[0] != kind {
			return nil
		}
		d := Decoder{B: rec[1:]}
		if err := fn(&d); err != nil {
			return err
		}
		if d.Err != nil {
			return fmt.Errorf("spill: partition %d: %w", p, d.Err)
		}
		return nil
	})
}

// Reader returns partition p's records as written (after Flush), each
// length-prefixed, for Append to a set elsewhere; an empty reader for a
// partition never written.
func (s *Set) Reader(p int) io.Reader {
	if s.files[p] == nil {
		return bytes.NewReader(nil)
	}
	return io.NewSectionReader(s.files[p], 0, 1<<62)
}

// Append adds to partition p the records of r, as Reader gives them; a
// stream that ends within a record is refused, naming what.
func (s *Set) Append(p int, r io.Reader, what string) error {
	br := bufio.NewReaderSize(r, bufSize)
	var rec []byte
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("spill: %s: %w", what, err)
		}
		if n == 0 || n > 1<<30 {
			return fmt.Errorf("spill: %s: a record of %d bytes: not a partition's records", what, n)
		}
		if uint64(cap(rec)) < n {
			rec = make([]byte, n)
		}
		rec = rec[:n]
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("spill: %s: a record cut short: %w", what, err)
		}
		if err := s.Write(p, rec); err != nil {
			return err
		}
	}
}
