package archive

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/pathseg"
	"github.com/tributary/tributary/pipeline"
)

// Layout constants.
const (
	// UnknownEntity is the entity segment of items whose image has no type
	// attribute. A real type spelled "_unknown" is escaped ("%5Funknown"), so
	// the two never share a partition.
	UnknownEntity = "_unknown"
	// unknownDate is the date segment of an item with neither a usable ttl
	// attribute nor a removal time (a record without ApproximateCreationDateTime).
	unknownDate = "_unknown"
	// ext ends every archive object's name.
	ext = ".jsonl.gz"

	dateLayout = "2006-01-02"
	// maxEntitySegment bounds an escaped entity type; longer ones are hashed.
	maxEntitySegment = 200
	// maxEpochSeconds is 9999-12-31T23:59:59Z, the last time a date segment
	// can spell.
	maxEpochSeconds = 253402300799
)

// EntitySegment returns the path segment that stands for an entity type in
// object keys (without the "entity=" label). Letters, digits and "-._~"
// stay as they are; every other byte is percent-encoded (%XX, upper-case
// hex), and so is a leading "_" or "." so that "_unknown", "." and ".." can
// never be spelled by a real type. An empty type (the attribute is missing)
// is UnknownEntity. A type whose escaped form is longer than 200 bytes
// becomes objstore.FitName's "_sha256-" and the 64 hex digits of the
// SHA-256 of that escaped form, which keeps keys under S3's 1,024-byte
// limit with a prefix of up to 512 bytes. (Versions before kept 16 of the
// digits: LegacyEntitySegment.)
func EntitySegment(entityType string) string {
	if entityType == "" {
		return UnknownEntity
	}
	return objstore.FitName("", escapeEntity(entityType), "", maxEntitySegment)
}

// legacyEntitySegment returns the segment that versions before the whole
// hash wrote for a type, and true, when it differs from EntitySegment's: for
// a type hashed then as "_sha256-" and 16 hex digits. Such a partition may
// hold other types with the same 16 digits; readers keep only the lines of
// the type they look for (Archive.ReadObject).
func legacyEntitySegment(entityType string) (string, bool) {
	if entityType == "" {
		return "", false
	}
	seg := objstore.LegacyFitName("", escapeEntity(entityType), "", maxEntitySegment)
	return seg, objstore.IsLegacyHashed(seg)
}

// hashedSegment reports whether an entity segment is a hash (of either
// length), which may stand for more than one type.
func hashedSegment(seg string) bool { return objstore.IsHashed(seg) }

// escapeEntity percent-encodes an entity type as EntitySegment describes
// (the repartitioner's layout escapes other bytes with the same encoder).
func escapeEntity(entityType string) string {
	return pathseg.Escape(entityType, func(c byte) bool { return !isSafe(c) })
}

func isSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// entityFromSegment reverses EntitySegment: it returns the entity type a
// segment stands for ("" for UnknownEntity), and false for a segment that
// EntitySegment cannot produce or that hides a hashed type.
func entityFromSegment(seg string) (string, bool) {
	if seg == UnknownEntity {
		return "", true
	}
	if seg == "" || seg[0] == '_' || seg[0] == '.' {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			if !isSafe(c) {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		v, err := strconv.ParseUint(seg[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

// ObjectKey returns the key of the object holding a group: prefix (may be
// empty), the entity and date segments, and the sequence number of the
// group's first record.
func ObjectKey(prefix, entitySeg, date, firstSeq string) string {
	rel := "entity=" + entitySeg + "/date=" + date + "/" + firstSeq + ext
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

// KeyInfo is what an object key says about its object.
type KeyInfo struct {
	// EntitySegment and Date are the key's partition segments, as written.
	EntitySegment, Date string
	// FirstSeq is the sequence number of the object's first record (of a
	// compacted object, its first input's).
	FirstSeq string
	// Compacted is set for a compacted (Parquet) object, under CompactedDir;
	// Inputs is then the digest of its inputs in its name.
	Compacted bool
	Inputs    string
}

// ParseKey reads the partition segments and the first sequence number from
// an object key relative to the archive prefix: a JSON-lines object
// ("entity=E/date=D/SEQ.jsonl.gz") or a compacted one
// ("compacted/entity=E/date=D/SEQ-HEX.parquet"). It returns false for any
// other key.
func ParseKey(rel string) (KeyInfo, bool) {
	compacted := false
	if r, ok := strings.CutPrefix(rel, CompactedDir+"/"); ok {
		rel, compacted = r, true
	}
	parts := strings.Split(rel, "/")
	if len(parts) != 3 {
		return KeyInfo{}, false
	}
	ent, ok1 := strings.CutPrefix(parts[0], "entity=")
	date, ok2 := strings.CutPrefix(parts[1], "date=")
	var seq, h string
	ok3 := false
	if compacted {
		var name string
		name, ok3 = strings.CutSuffix(parts[2], CompactedExt)
		seq, h, _ = strings.Cut(name, "-")
		ok3 = ok3 && len(h) == 16 && objstore.IsLegacyHashed(objstore.HashMark+h)
	} else {
		seq, ok3 = strings.CutSuffix(parts[2], ext)
	}
	if !ok1 || !ok2 || !ok3 || ent == "" || !allDigits(seq) || !validDate(date) {
		return KeyInfo{}, false
	}
	return KeyInfo{EntitySegment: ent, Date: date, FirstSeq: seq, Compacted: compacted, Inputs: h}, true
}

func validDate(d string) bool {
	if d == unknownDate {
		return true
	}
	t, err := time.Parse(dateLayout, d)
	return err == nil && t.Format(dateLayout) == d
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dateOf returns the date segment of an archived item: the UTC date of its
// ttl attribute when that is a number of epoch seconds between 1970 and
// 9999, otherwise the UTC date of the removal, otherwise UnknownDate.
func dateOf(old pipeline.Item, ttlAttribute string, removed time.Time) string {
	if n, ok := old[ttlAttribute].(*types.AttributeValueMemberN); ok {
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f >= 0 && f <= maxEpochSeconds {
			return time.Unix(int64(math.Floor(f)), 0).UTC().Format(dateLayout)
		}
	}
	if removed.IsZero() {
		return unknownDate
	}
	return removed.UTC().Format(dateLayout)
}

// Meta is the metadata an archive line carries beside the item: where and
// when the removal was recorded.
type Meta struct {
	// EventID is the stream record's event ID.
	EventID string `json:"EventID"`
	// RemovedAt is the record's approximate creation time (when DynamoDB
	// deleted the item), RFC 3339 in UTC; empty when the record has none.
	RemovedAt string `json:"RemovedAt"`
	// Table is the source table's name, read from the stream ARN.
	Table string `json:"Table"`
	// StreamARN is the DynamoDB stream the record was read from.
	StreamARN string `json:"StreamARN"`
	// SequenceNumber is the record's sequence number in its stream.
	SequenceNumber string `json:"SequenceNumber"`
}

// metaMember is the name of the metadata member of an archive line, beside
// "Item".
const metaMember = "Archive"

// metaOf returns the metadata of a change.
func metaOf(c *pipeline.Change) Meta {
	m := Meta{
		EventID:        c.EventID,
		Table:          c.Table,
		StreamARN:      c.Position.Stream,
		SequenceNumber: c.Position.SequenceNumber,
	}
	if !c.Time.IsZero() {
		m.RemovedAt = c.Precision.Truncate(c.Time).UTC().Format(time.RFC3339Nano)
	}
	return m
}

// AppendLine appends one archive line, newline included, to buf:
//
//	{"Item":<item in DynamoDB JSON, names sorted>,"Archive":{"EventID":...,"RemovedAt":...,"Table":...,"StreamARN":...,"SequenceNumber":...}}
func AppendLine(buf []byte, item pipeline.Item, m Meta) []byte {
	buf = append(buf, `{"Item":`...)
	buf = pipeline.AppendItem(buf, item)
	return append(appendMeta(buf, m), '\n')
}

// appendMeta ends an archive line after its item: the metadata member and
// the closing brace.
func appendMeta(buf []byte, m Meta) []byte {
	buf = append(buf, `,"`+metaMember+`":`...)
	mb, _ := json.Marshal(m) // a struct of strings always marshals
	buf = append(buf, mb...)
	return append(buf, '}')
}

// Line is one parsed archive line.
type Line struct {
	// Item is the item in DynamoDB JSON, byte for byte as archived.
	Item json.RawMessage `json:"Item"`
	// Archive is the line's metadata.
	Archive Meta `json:"Archive"`
}

// ParseLine parses one archive line (without its newline).
func ParseLine(b []byte) (Line, error) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return Line{}, err
	}
	if len(l.Item) == 0 || l.Item[0] != '{' {
		return Line{}, errors.New(`no "Item" object`)
	}
	return l, nil
}

// gzipWriters reuses compressors: a flate compressor is about a megabyte of
// state, which a batch of a dozen objects would otherwise allocate and clear
// a dozen times.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// Gzip compresses data as one gzip member with an empty header (no name, no
// modification time), so that equal input gives equal bytes. It is safe for
// concurrent use.
func Gzip(data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data)/4 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&b)
	// Writes to a bytes.Buffer do not fail, and neither do the gzip
	// writer's over one.
	_, _ = zw.Write(data)
	_ = zw.Close()
	zw.Reset(nil)
	gzipWriters.Put(zw)
	return b.Bytes()
}

// gunzip decompresses a whole object.
func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("corrupt gzip: %w", err)
	}
	return out.Bytes(), nil
}
