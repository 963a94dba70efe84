package repartition

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/tributary/tributary/infra/objstore"
)

// partWriter writes one output object: gzip from deflated blocks, or a
// stream through a compressor.
type partWriter struct {
	ow   objstore.Writer
	bw   *bufio.Writer
	zw   io.WriteCloser // the stream compressor; nil for gzip
	crc  uint32         // gzip: CRC-32 of the uncompressed bytes
	md5  hash.Hash
	cnt  int64
	info PartInfo
}

// gzipHeader is the 10-byte gzip member header: deflate, no flags, no
// modification time, no extra flags, unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

func newPartWriter(ctx context.Context, st objstore.Store, key string, c Compression, level int) (*partWriter, error) {
	ow, err := st.Create(ctx, key)
	if err != nil {
		return nil, err
	}
	pw := &partWriter{ow: ow, md5: md5.New(), info: PartInfo{Key: key}}
	pw.bw = bufio.NewWriterSize(writerFunc(func(p []byte) (int, error) {
		pw.md5.Write(p)
		pw.cnt += int64(len(p))
		return ow.Write(p)
	}), 64<<10)
	if c == Gzip {
		_, _ = pw.bw.Write(gzipHeader) // buffered; errors surface at commit
		return pw, nil
	}
	if pw.zw, err = newCompressor(c, level, pw.bw); err != nil {
		ow.Abort()
		return nil, err
	}
	return pw, nil
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (pw *partWriter) write(b *block) error {
	var err error
	if pw.zw == nil {
		pw.crc = crc32.Update(pw.crc, crc32.IEEETable, b.buf)
		_, err = pw.bw.Write(b.out)
	} else {
		_, err = pw.zw.Write(b.buf)
	}
	if err != nil {
		return fmt.Errorf("repartition: writing %s: %w", pw.info.Key, err)
	}
	pw.info.Items += b.items
	pw.info.UncompressedBytes += int64(len(b.buf))
	return nil
}

func (pw *partWriter) commit(ctx context.Context) error {
	var err error
	if pw.zw == nil {
		// A final empty block (fixed Huffman codes, end of block), then the
		// trailer: CRC-32 and size modulo 2^32, little-endian.
		var t [10]byte
		t[0], t[1] = 0x03, 0x00
		binary.LittleEndian.PutUint32(t[2:], pw.crc)
		binary.LittleEndian.PutUint32(t[6:], uint32(pw.info.UncompressedBytes))
		_, err = pw.bw.Write(t[:])
	} else {
		err = pw.zw.Close()
	}
	if err == nil {
		err = pw.bw.Flush()
	}
	if err != nil {
		pw.ow.Abort()
		return fmt.Errorf("repartition: writing %s: %w", pw.info.Key, err)
	}
	if err := pw.ow.Commit(ctx); err != nil {
		return err
	}
	pw.info.Bytes = pw.cnt
	pw.info.MD5 = base64.StdEncoding.EncodeToString(pw.md5.Sum(nil))
	return nil
}

func (pw *partWriter) abort() { pw.ow.Abort() }
