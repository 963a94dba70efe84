package lake

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/tributary/tributary/internal/capabilities/archive"
)

// The compacted form. One Parquet object holds the lines of several
// JSON-lines objects of one partition, one row a line, under
//
//	<prefix>/compacted/entity=<EntityType>/date=<YYYY-MM-DD>/<firstSeq>-<inputs>.parquet
//
// (archive.CompactedDir, archive.CompactedExt), where firstSeq is the first
// archive.Input's name and inputs 16 hex digits of the SHA-256 of the inputs' keys
// and sizes. The columns (Columns) carry everything an archive line does,
// so a line is rebuilt from its row byte for byte; the inputs are listed in
// the file's key-value metadata (InputsKey), which tells readers which
// JSON-lines objects the file stands for.
const (
	// inputsKey is the key-value metadata entry listing a Parquet object's
	// inputs: a JSON array of {"key": <key below the prefix>, "size":
	// <bytes>}.
	inputsKey = "tributary.archive.inputs"
	// formatKey is the metadata entry naming the layout's version.
	formatKey     = "tributary.archive.format"
	parquetFormat = "1"
)

// Column is one column of the compacted form, as Athena declares it.
type Column struct {
	// Name is the column's name; Type its Athena (Hive DDL) type: string,
	// timestamp, double or boolean.
	Name, Type string
	// Comment says what the column holds.
	Comment string
}

// Columns are the columns every compacted object has, in the order
// the Glue table declares them. TypedColumns add one each.
var Columns = []Column{
	{"pk", "string", "the item's partition key: a string as it is, a number as its decimal text, binary in base64"},
	{"sk", "string", "the item's sort key, likewise; null for a table without one"},
	{"entity_type", "string", "the item's entity type attribute; null when it has none"},
	{"expires_at", "timestamp", "the item's TTL attribute as a time; null when it is not a number of epoch seconds"},
	{"removed_at", "timestamp", "when DynamoDB deleted the item (the stream record's creation time)"},
	{"table_name", "string", "the source table"},
	{"stream_arn", "string", "the stream the removal was read from"},
	{"sequence_number", "string", "the removal's sequence number in its stream (with stream_arn, the position that identifies it)"},
	{"event_id", "string", "the stream record's event ID"},
	{"item", "string", "the whole item in DynamoDB JSON, as the JSON-lines object holds it"},
}

// TypedColumn is a typed column of an attribute: its value in the type
// given, null when the item has none or of another type.
type TypedColumn struct {
	// Attribute is the item's attribute; the column is named after it,
	// lower-cased (Athena's names are).
	Attribute string
	// Type is "string" (S), "double" (N) or "boolean" (BOOL).
	Type string
}

// Name is the column's name.
func (c TypedColumn) Name() string { return strings.ToLower(c.Attribute) }

var columnName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,127}$`)

// ParseTypedColumns reads "attr:type,attr:type" (type string, double or
// boolean) and refuses a name Athena cannot take, one a fixed column has, or
// one given twice.
func ParseTypedColumns(s string) ([]TypedColumn, error) {
	var out []TypedColumn
	seen := map[string]bool{}
	for _, c := range Columns {
		seen[c.Name] = true
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		attr, typ, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("typed column %q: want attribute:type", f)
		}
		c := TypedColumn{Attribute: attr, Type: typ}
		switch {
		case typ != "string" && typ != "double" && typ != "boolean":
			return nil, fmt.Errorf("typed column %q: type %q is not string, double or boolean", f, typ)
		case !columnName.MatchString(c.Name()):
			return nil, fmt.Errorf("typed column %q: %q is not a column name Athena takes (letters, digits, _)", f, c.Name())
		case seen[c.Name()]:
			return nil, fmt.Errorf("typed column %q: a column %q exists already", f, c.Name())
		}
		seen[c.Name()] = true
		out = append(out, c)
	}
	return out, nil
}

// rowSchema is the Parquet schema of compacted objects with the typed
// columns given.
func rowSchema(typed []TypedColumn) *parquet.Schema {
	str := parquet.String()
	ts := parquet.Timestamp(parquet.Microsecond)
	g := parquet.Group{
		"pk":              str,
		"sk":              parquet.Optional(str),
		"entity_type":     parquet.Optional(str),
		"expires_at":      parquet.Optional(ts),
		"removed_at":      parquet.Optional(ts),
		"table_name":      str,
		"stream_arn":      str,
		"sequence_number": str,
		"event_id":        str,
		"item":            str,
	}
	for _, c := range typed {
		switch c.Type {
		case "double":
			g[c.Name()] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		case "boolean":
			g[c.Name()] = parquet.Optional(parquet.Leaf(parquet.BooleanType))
		default:
			g[c.Name()] = parquet.Optional(str)
		}
	}
	return parquet.NewSchema("archive", g)
}

// rowAttrs names the item attributes a row is built from.
type rowAttrs struct {
	keys              []string
	typeAttr, ttlAttr string
	typed             []TypedColumn
}

// parquetWriter builds one compacted object in memory.
type parquetWriter struct {
	buf      bytes.Buffer
	w        *parquet.GenericWriter[any]
	index    map[string]int
	optional map[string]bool
	attrs    rowAttrs
	rows     []parquet.Row
	n        int
}

func newParquetWriter(attrs rowAttrs) *parquetWriter {
	s := rowSchema(attrs.typed)
	pw := &parquetWriter{attrs: attrs, index: map[string]int{}, optional: map[string]bool{}}
	for i, path := range s.Columns() {
		pw.index[path[0]] = i
	}
	for _, f := range s.Fields() {
		pw.optional[f.Name()] = f.Optional()
	}
	pw.w = parquet.NewGenericWriter[any](&pw.buf, s, parquet.Compression(&zstd.Codec{}),
		parquet.KeyValueMetadata(formatKey, parquetFormat))
	return pw
}

// add appends the row of one archive line (from object key, line n).
func (pw *parquetWriter) add(key string, n int, l archive.Line) error {
	var item map[string]json.RawMessage
	if err := json.Unmarshal(l.Item, &item); err != nil {
		return fmt.Errorf("archive: %s line %d: item: %w", key, n, err)
	}
	row := make(parquet.Row, len(pw.index))
	set := func(col string, v parquet.Value, ok bool) {
		i := pw.index[col]
		if !ok {
			row[i] = parquet.NullValue().Level(0, 0, i)
			return
		}
		def := 0
		if pw.optional[col] {
			def = 1
		}
		row[i] = v.Level(0, def, i)
	}
	for i, attr := range pw.attrs.keys[:min(2, len(pw.attrs.keys))] {
		typ, text, ok := scalarAttr(item[attr])
		if !ok || typ != "S" && typ != "N" && typ != "B" {
			return fmt.Errorf("archive: %s line %d: the item has no key attribute %s of type S, N or B", key, n, attr)
		}
		col := [2]string{"pk", "sk"}[i]
		set(col, parquet.ValueOf(text), true)
	}
	if len(pw.attrs.keys) < 2 {
		set("sk", parquet.NullValue(), false)
	}
	typ, text, ok := scalarAttr(item[pw.attrs.typeAttr])
	set("entity_type", parquet.ValueOf(text), ok && typ == "S")
	typ, text, ok = scalarAttr(item[pw.attrs.ttlAttr])
	us, inRange := int64(0), false
	if ok && typ == "N" {
		if f, err := strconv.ParseFloat(text, 64); err == nil && f >= 0 && f <= archive.MaxExpirySeconds {
			us, inRange = int64(math.Floor(f))*1e6, true
		}
	}
	set("expires_at", parquet.ValueOf(us), inRange)
	if l.Archive.RemovedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Archive.RemovedAt)
		if err != nil {
			return fmt.Errorf("archive: %s line %d: RemovedAt: %w", key, n, err)
		}
		if t.Nanosecond()%1000 != 0 {
			return fmt.Errorf("archive: %s line %d: RemovedAt %s is finer than a microsecond, which the compacted form cannot hold", key, n, l.Archive.RemovedAt)
		}
		set("removed_at", parquet.ValueOf(t.UnixMicro()), true)
	} else {
		set("removed_at", parquet.NullValue(), false)
	}
	set("table_name", parquet.ValueOf(l.Archive.Table), true)
	set("stream_arn", parquet.ValueOf(l.Archive.StreamARN), true)
	set("sequence_number", parquet.ValueOf(l.Archive.SequenceNumber), true)
	set("event_id", parquet.ValueOf(l.Archive.EventID), true)
	set("item", parquet.ValueOf(string(l.Item)), true)
	for _, c := range pw.attrs.typed {
		typ, text, ok := scalarAttr(item[c.Attribute])
		switch {
		case c.Type == "string" && ok && typ == "S":
			set(c.Name(), parquet.ValueOf(text), true)
		case c.Type == "double" && ok && typ == "N":
			f, err := strconv.ParseFloat(text, 64)
			set(c.Name(), parquet.ValueOf(f), err == nil)
		case c.Type == "boolean" && ok && typ == "BOOL":
			set(c.Name(), parquet.ValueOf(text == "true"), true)
		default:
			set(c.Name(), parquet.NullValue(), false)
		}
	}
	pw.rows = append(pw.rows, row)
	pw.n++
	if len(pw.rows) == 1024 {
		return pw.flushRows()
	}
	return nil
}

func fieldIndex(s *parquet.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name() == name {
			return i
		}
	}
	return -1
}

func (pw *parquetWriter) flushRows() error {
	if _, err := pw.w.WriteRows(pw.rows); err != nil {
		return fmt.Errorf("archive: writing Parquet rows: %w", err)
	}
	pw.rows = pw.rows[:0]
	return nil
}

// finish closes the file, recording its inputs, and returns its bytes.
func (pw *parquetWriter) finish(inputs []archive.Input) ([]byte, error) {
	if err := pw.flushRows(); err != nil {
		return nil, err
	}
	ib, err := json.Marshal(inputs)
	if err != nil {
		return nil, err
	}
	pw.w.SetKeyValueMetadata(inputsKey, string(ib))
	if err := pw.w.Close(); err != nil {
		return nil, fmt.Errorf("archive: closing Parquet: %w", err)
	}
	return pw.buf.Bytes(), nil
}

// scalarAttr returns the type and text of a scalar attribute value in DynamoDB
// JSON (S, N, B, BOOL): B in base64 as DynamoDB JSON spells it, BOOL as
// true or false. ok is false for a missing value or another type.
func scalarAttr(raw json.RawMessage) (typ, text string, ok bool) {
	if len(raw) == 0 {
		return "", "", false
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil || len(v) != 1 {
		return "", "", false
	}
	for t, val := range v {
		switch t {
		case "S", "N", "B":
			var s string
			if json.Unmarshal(val, &s) != nil {
				return "", "", false
			}
			if t == "B" {
				if _, err := base64.StdEncoding.DecodeString(s); err != nil {
					return "", "", false
				}
			}
			return t, s, true
		case "BOOL":
			var b bool
			if json.Unmarshal(val, &b) != nil {
				return "", "", false
			}
			return t, strconv.FormatBool(b), true
		}
	}
	return "", "", false
}

// parquetFile is a compacted object opened for reading.
type parquetFile struct {
	f      *parquet.File
	key    string
	inputs []archive.Input
}

var _ archive.CompactedObject = (*parquetFile)(nil)

// maxParquetBytes bounds a compacted object a reader loads whole: the
// compactor writes them far smaller (Options.MaxInputBytes).
const maxParquetBytes = 1 << 30

// Decode opens a compacted object that Compact wrote, read whole from r
// (key names it in errors): it is the archive readers' decoder of the
// compacted form (archive.Archive.WithCompacted). A file the Parquet reader
// cannot make sense of, or one without this layout's metadata and columns,
// is an error, never a panic.
func Decode(r io.Reader, key string) (archive.CompactedObject, error) {
	pf, err := openParquet(r, key)
	if err != nil {
		return nil, err
	}
	return pf, nil
}

func openParquet(r io.Reader, key string) (pf *parquetFile, err error) {
	defer recoverAs(&err, key)
	data, err := io.ReadAll(io.LimitReader(r, maxParquetBytes+1))
	if err != nil {
		return nil, fmt.Errorf("archive: reading %s: %w", key, err)
	}
	if len(data) > maxParquetBytes {
		return nil, fmt.Errorf("archive: %s: larger than %d bytes, more than a compaction writes", key, maxParquetBytes)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("archive: %s: not Parquet: %w", key, err)
	}
	pf = &parquetFile{f: f, key: key}
	if v, ok := f.Lookup(formatKey); !ok || v != parquetFormat {
		return nil, fmt.Errorf("archive: %s: not a compacted archive object (metadata %s is %q, want %q)", key, formatKey, v, parquetFormat)
	}
	if v, ok := f.Lookup(inputsKey); ok {
		if err := json.Unmarshal([]byte(v), &pf.inputs); err != nil {
			return nil, fmt.Errorf("archive: %s: metadata %s: %w", key, inputsKey, err)
		}
	}
	for _, c := range Columns {
		if fieldIndex(f.Schema(), c.Name) < 0 {
			return nil, fmt.Errorf("archive: %s: no column %s", key, c.Name)
		}
	}
	return pf, nil
}

// Inputs implements archive.CompactedObject.
func (pf *parquetFile) Inputs() []archive.Input { return pf.inputs }

// Rows implements archive.CompactedObject: each row's item and metadata,
// numbered from 1.
func (pf *parquetFile) Rows(fn func(n int, item json.RawMessage, m archive.Meta) error) (err error) {
	key := pf.key
	defer recoverAs(&err, key)
	cols := map[string]int{}
	for i, path := range pf.f.Schema().Columns() {
		cols[path[0]] = i
	}
	// The schema is flat and has no repeated column: a row holds one
	// value per column, in column order.
	value := func(row parquet.Row, col string) (parquet.Value, bool) {
		i, ok := cols[col]
		if !ok || i >= len(row) || row[i].IsNull() {
			return parquet.Value{}, false
		}
		return row[i], true
	}
	text := func(row parquet.Row, col string) (string, bool) {
		v, ok := value(row, col)
		return string(v.ByteArray()), ok
	}
	n := 0
	for _, rg := range pf.f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 256)
		for {
			k, err := rows.ReadRows(buf)
			for _, row := range buf[:k] {
				n++
				m := archive.Meta{}
				m.EventID, _ = text(row, "event_id")
				m.Table, _ = text(row, "table_name")
				m.StreamARN, _ = text(row, "stream_arn")
				m.SequenceNumber, _ = text(row, "sequence_number")
				if v, ok := value(row, "removed_at"); ok {
					m.RemovedAt = time.UnixMicro(v.Int64()).UTC().Format(time.RFC3339Nano)
				}
				item, ok := value(row, "item")
				if !ok || !json.Valid(item.ByteArray()) || !bytes.HasPrefix(item.ByteArray(), []byte("{")) {
					_ = rows.Close()
					return fmt.Errorf("archive: %s row %d: the item is not a JSON object", key, n)
				}
				if ferr := fn(n, item.ByteArray(), m); ferr != nil {
					_ = rows.Close()
					return ferr
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = rows.Close()
				return fmt.Errorf("archive: %s row %d: %w", key, n+1, err)
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("archive: %s: %w", key, err)
		}
	}
	return nil
}

// parquetName returns a compacted object's name (below its partition):
// the first archive.Input's sequence number and a digest of the inputs.
func parquetName(firstSeq string, inputs []archive.Input) string {
	ins := append([]archive.Input(nil), inputs...)
	sort.Slice(ins, func(i, j int) bool { return ins[i].Key < ins[j].Key })
	var b strings.Builder
	for _, in := range ins {
		fmt.Fprintf(&b, "%s\t%d\n", in.Key, in.Size)
	}
	return firstSeq + "-" + digest16(b.String()) + archive.CompactedExt
}

// digest16 returns the first 16 hex digits of the SHA-256 of s.
func digest16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// recoverAs turns a panic of the Parquet reader over a malformed file into
// an error naming the object.
func recoverAs(err *error, key string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("archive: %s: malformed Parquet: %v", key, r)
	}
}
