package repartition

import (
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression is the compression of repartitioned output files. All three
// are accepted by ImportTable and StartBulkPutItems.
type Compression string

// The output compressions.
const (
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
	None Compression = "none"
)

// ParseCompression reads gzip, zstd or none.
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(s); c {
	case Gzip, Zstd, None:
		return c, nil
	}
	return "", fmt.Errorf("repartition: compression %q: want gzip, zstd or none", s)
}

// ext is the file name extension of output files: .json.gz, .json.zst or .json.
func (c Compression) ext() string {
	switch c {
	case Zstd:
		return ".json.zst"
	case None:
		return ".json"
	}
	return ".json.gz"
}

// InputCompressionType is the value ImportTable and StartBulkPutItems take.
func (c Compression) InputCompressionType() types.InputCompressionType {
	switch c {
	case Zstd:
		return types.InputCompressionTypeZstd
	case None:
		return types.InputCompressionTypeNone
	}
	return types.InputCompressionTypeGzip
}

// DefaultLevel is the default compression level: the codecs' own defaults,
// gzip level 5 (klauspost/compress's default: on export lines about 10%
// larger output than level 6, in 30% less time) and zstd's SpeedDefault
// (level 3).
const DefaultLevel = -1

// newCompressor returns a writer compressing to w. Closing it flushes and
// ends the stream; it does not close w.
func newCompressor(c Compression, level int, w io.Writer) (io.WriteCloser, error) {
	switch c {
	case Gzip:
		return gzip.NewWriterLevel(w, gzipLevel(level))
	case Zstd:
		el := zstd.SpeedDefault
		if level != DefaultLevel {
			el = zstd.EncoderLevelFromZstd(level)
		}
		// A small window and one goroutine per encoder keep memory flat with
		// one encoder open per entity type and worker.
		return zstd.NewWriter(w, zstd.WithEncoderLevel(el), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	case None:
		return nopWriteCloser{w}, nil
	}
	return nil, fmt.Errorf("repartition: unknown compression %q", c)
}

// gzipLevel is the deflate level for a gzip level option.
func gzipLevel(level int) int {
	if level == DefaultLevel {
		return gzip.DefaultCompression
	}
	return level
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// NewReader returns a reader of the decompressed content of r, compressed
// with c.
func (c Compression) NewReader(r io.Reader) (io.ReadCloser, error) {
	switch c {
	case Gzip:
		return gzip.NewReader(r)
	case Zstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case None:
		return io.NopCloser(r), nil
	}
	return nil, fmt.Errorf("repartition: unknown compression %q", c)
}

// CompressionOf infers a part's compression from its name.
func CompressionOf(key string) Compression {
	switch {
	case strings.HasSuffix(key, ".zst"):
		return Zstd
	case strings.HasSuffix(key, ".gz"):
		return Gzip
	}
	return None
}
