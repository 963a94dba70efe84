// Package exportgen writes DynamoDB exports in the real export-to-S3 layout
// (AWSDynamoDB/<ExportId>/manifest-summary.json, manifest-files.json, the
// .checksum files, _started and data/*.json.gz), full and incremental,
// deterministically: the same input gives the same bytes. Tests, the CLI's
// tests and the repartition benchmark read what it writes exactly as they
// would read an export made by DynamoDB.
//
// What the layout follows: the DynamoDB Developer Guide's "DynamoDB table
// export output format" (S3DataExport.Output), and, for incremental exports,
// its "Incremental export output" section: data files in the shared
// AWSDynamoDB/data/ folder, lines
// {"Keys":…,"Metadata":{"WriteTimestampMicros":{"N":"…"}},"NewImage":…,"OldImage":…}.
// The md5Checksum of manifest-files.json is written as the base64 MD5 of
// the data object's bytes and the etag in the multipart form ("<hex>-1");
// the .checksum files hold the hex MD5 of their manifest (AWS does not
// document either; see docs/exports.md).
package exportgen

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"hash/fnv"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/sim"
	"github.com/tributary/tributary/pipeline"
)

// Store is where exports are written: objstore's stores.
type Store interface {
	Put(ctx context.Context, key string, body []byte) error
	Create(ctx context.Context, key string) (objstore.Writer, error)
}

// Export describes an export to write.
type Export struct {
	// ID is the ExportId, e.g. "01796037000000-a1b2c3d4".
	ID string
	// Bucket and Prefix are what the manifests record as the export's S3
	// location (keys in the manifests are bucket keys under Prefix). The
	// files themselves go to the store's root as if it were Prefix.
	Bucket, Prefix string
	// Table is the table name (the ARN is in eu-west-1, account 111122223333).
	Table string
	// Time is the export time (full) or the end of the window (incremental).
	Time time.Time
	// From is the start of an incremental export's window.
	From time.Time
	// Files is the number of data files (table partitions). Default 4.
	Files int
	// Level is the gzip level of the data files. Default 6.
	Level int
	// Empty adds that many data files with no items (empty partitions).
	Empty int
}

// Result is what was written.
type Result struct {
	Dir               string // AWSDynamoDB/<ID>
	Items             int64
	DataFiles         []string // store keys
	UncompressedBytes int64
	CompressedBytes   int64
}

func (e *Export) defaults() {
	if e.Files <= 0 {
		e.Files = 4
	}
	if e.Level == 0 {
		e.Level = 6
	}
	if e.Bucket == "" {
		e.Bucket = "tributary-exports"
	}
	if e.Table == "" {
		e.Table = "app"
	}
}

func (e *Export) tableARN() string { return "arn:aws:dynamodb:eu-west-1:111122223333:table/" + e.Table }

func (e *Export) bucketKey(storeKey string) string {
	if e.Prefix == "" {
		return storeKey
	}
	return e.Prefix + "/" + storeKey
}

// dataName is a deterministic, real-looking data file name: 26 characters
// of lower-case base32, like DynamoDB's.
func dataName(id string, i int) string {
	h := md5.Sum([]byte(id + "/" + strconv.Itoa(i)))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:])[:26])
}

// fileBuf streams one data file to the store; the gzip stream starts with
// the first item, so that an empty partition's file is empty.
type fileBuf struct {
	key   string
	level int
	ow    objstore.Writer
	h     hash.Hash
	n     int64
	zw    *gzip.Writer
	items int64
	raw   int64
}

func (f *fileBuf) Write(p []byte) (int, error) {
	f.h.Write(p)
	f.n += int64(len(p))
	return f.ow.Write(p)
}

func (f *fileBuf) add(line []byte) error {
	if f.zw == nil {
		zw, err := gzip.NewWriterLevel(f, f.level)
		if err != nil {
			return err
		}
		f.zw = zw
	}
	f.items++
	f.raw += int64(len(line))
	_, err := f.zw.Write(line)
	return err
}

func newFiles(ctx context.Context, st Store, keys []string, level int) ([]*fileBuf, error) {
	files := make([]*fileBuf, len(keys))
	for i, k := range keys {
		ow, err := st.Create(ctx, k)
		if err != nil {
			for _, f := range files[:i] {
				f.ow.Abort()
			}
			return nil, err
		}
		files[i] = &fileBuf{key: k, level: level, ow: ow, h: md5.New()}
	}
	return files, nil
}

// WriteFull writes a full DYNAMODB_JSON export of items to st. Items go to
// data files by a hash of their PK, as table partitions hold them.
func WriteFull(ctx context.Context, st Store, e Export, items iter.Seq[pipeline.Item]) (Result, error) {
	e.defaults()
	dir := "AWSDynamoDB/" + e.ID
	keys := make([]string, e.Files+e.Empty)
	for i := range keys {
		keys[i] = dir + "/data/" + dataName(e.ID, i) + ".json.gz"
	}
	files, err := newFiles(ctx, st, keys, e.Level)
	if err != nil {
		return Result{}, err
	}
	var line []byte
	for item := range items {
		f := files[partition(item, e.Files)]
		line = append(line[:0], `{"Item":`...)
		line = pipeline.AppendItem(line, item)
		line = append(line, "}\n"...)
		if err := f.add(line); err != nil {
			abortAll(files)
			return Result{}, err
		}
	}
	return e.finish(ctx, st, dir, files, false)
}

// partition picks a data file by a hash of the item's partition key (PK,
// or pk for a table keyed in lower case), as table partitions hold them.
func partition(item pipeline.Item, n int) int {
	pk := item["PK"]
	if pk == nil {
		pk = item["pk"]
	}
	h := fnv.New64a()
	h.Write(pipeline.AppendValue(nil, pk))
	return int(h.Sum64() % uint64(n))
}

// Change is one line of an incremental export: the item's keys, its image
// before the window (nil: it did not exist) and after it (nil: deleted),
// and the time of the last write.
type Change struct {
	Keys, Old, New pipeline.Item
	Time           time.Time
}

// WriteIncremental writes an incremental export (NEW_AND_OLD_IMAGES view)
// of changes: manifests under AWSDynamoDB/<ID>/, data files in the shared
// AWSDynamoDB/data/ folder.
func WriteIncremental(ctx context.Context, st Store, e Export, changes []Change) (Result, error) {
	e.defaults()
	dir := "AWSDynamoDB/" + e.ID
	keys := make([]string, e.Files)
	for i := range keys {
		keys[i] = "AWSDynamoDB/data/" + dataName(e.ID, i) + ".json.gz"
	}
	files, err := newFiles(ctx, st, keys, e.Level)
	if err != nil {
		return Result{}, err
	}
	var line []byte
	for _, c := range changes {
		f := files[partition(c.Keys, len(files))]
		line = append(line[:0], `{"Keys":`...)
		line = pipeline.AppendItem(line, c.Keys)
		line = append(line, `,"Metadata":{"WriteTimestampMicros":{"N":"`...)
		line = strconv.AppendInt(line, c.Time.UnixMicro(), 10)
		line = append(line, `"}}`...)
		if c.New != nil {
			line = append(line, `,"NewImage":`...)
			line = pipeline.AppendItem(line, c.New)
		}
		if c.Old != nil {
			line = append(line, `,"OldImage":`...)
			line = pipeline.AppendItem(line, c.Old)
		}
		line = append(line, "}\n"...)
		if err := f.add(line); err != nil {
			abortAll(files)
			return Result{}, err
		}
	}
	return e.finish(ctx, st, dir, files, true)
}

func (e *Export) finish(ctx context.Context, st Store, dir string, files []*fileBuf, incremental bool) (Result, error) {
	res := Result{Dir: dir}
	var manifest bytes.Buffer
	for i, f := range files {
		if f.zw != nil {
			if err := f.zw.Close(); err != nil {
				abortAll(files[i:])
				return res, err
			}
		}
		if err := f.ow.Commit(ctx); err != nil {
			abortAll(files[i:])
			return res, err
		}
		sum := f.h.Sum(nil)
		line, _ := json.Marshal(export.DataFile{
			ItemCount:     f.items,
			MD5Checksum:   base64.StdEncoding.EncodeToString(sum),
			ETag:          hex.EncodeToString(sum) + "-1",
			DataFileS3Key: e.bucketKey(f.key),
		})
		manifest.Write(line)
		manifest.WriteByte('\n')
		res.Items += f.items
		res.DataFiles = append(res.DataFiles, f.key)
		res.UncompressedBytes += f.raw
		res.CompressedBytes += f.n
	}
	start := e.Time.Add(2 * time.Minute)
	s := export.Summary{
		Version:            "2020-06-30",
		ExportARN:          e.tableARN() + "/export/" + e.ID,
		StartTime:          start.UTC().Format("2006-01-02T15:04:05.000Z"),
		EndTime:            start.Add(5*time.Minute + 9*time.Second).UTC().Format("2006-01-02T15:04:05.000Z"),
		TableARN:           e.tableARN(),
		TableID:            tableID(e.Table),
		S3Bucket:           e.Bucket,
		S3Prefix:           e.Prefix,
		S3SseAlgorithm:     "AES256",
		ManifestFilesS3Key: e.bucketKey(dir + "/manifest-files.json"),
		BilledSizeBytes:    res.UncompressedBytes,
		ItemCount:          res.Items,
		OutputFormat:       "DYNAMODB_JSON",
	}
	if incremental {
		s.Version = "2023-08-01"
		s.ExportType = export.IncrementalExport
		s.ExportFromTime = e.From.UTC().Format("2006-01-02T15:04:05.000Z")
		s.ExportToTime = e.Time.UTC().Format("2006-01-02T15:04:05.000Z")
		s.OutputView = "NEW_AND_OLD_IMAGES"
	} else {
		s.ExportTime = e.Time.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	summary, err := json.Marshal(s)
	if err != nil {
		return res, err
	}
	for _, obj := range []struct {
		key  string
		body []byte
	}{
		{dir + "/_started", nil},
		{dir + "/manifest-files.json", manifest.Bytes()},
		{dir + "/manifest-files.checksum", checksum(manifest.Bytes())},
		{dir + "/manifest-summary.json", summary},
		{dir + "/manifest-summary.checksum", checksum(summary)},
	} {
		if err := st.Put(ctx, obj.key, obj.body); err != nil {
			return res, err
		}
	}
	return res, nil
}

func abortAll(files []*fileBuf) {
	for _, f := range files {
		f.ow.Abort()
	}
}

func checksum(b []byte) []byte {
	s := md5.Sum(b)
	return []byte(hex.EncodeToString(s[:]))
}

func tableID(name string) string {
	h := md5.Sum([]byte("table/" + name))
	x := hex.EncodeToString(h[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// ExportID returns a real-looking ExportId for a time and a seed:
// "<14-digit epoch milliseconds>-<8 hex>".
func ExportID(t time.Time, seed uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h := md5.Sum(b[:])
	return fmt.Sprintf("%014d-%s", t.UnixMilli(), hex.EncodeToString(h[:4]))
}

// Fixture is the realistic export the tests read: a simulated table
// (2,000 changes over the seed domains) exported after its 1,500th change
// together with Specials, in five data files (one of them an empty
// partition's), and an incremental export of the last 500 changes on top.
type Fixture struct {
	Full, Incremental Result
	// FullItems are the full export's items; FinalItems the items after the
	// incremental export is applied (Specials included in both).
	FullItems, FinalItems []pipeline.Item
	Changes               []Change
}

// WriteFixture writes the fixture export to st.
func WriteFixture(ctx context.Context, st Store) (*Fixture, error) {
	h, err := sim.Workload{Seed: 7, Changes: 2000}.Run()
	if err != nil {
		return nil, err
	}
	full, changes, final := FromHistory(h, 1500)
	specials := Specials()
	f := &Fixture{FullItems: append(full, specials...), FinalItems: append(final, specials...), Changes: changes}
	items := func(yield func(pipeline.Item) bool) {
		for _, it := range f.FullItems {
			if !yield(it) {
				return
			}
		}
	}
	// The full export is taken just after the 1,500th change; the
	// incremental one overlaps it by a second and ends after the last.
	at := h.Records[1499].Time.Add(time.Millisecond)
	fullExp := Export{ID: ExportID(at, 1), Prefix: "exports/app", Time: at, Files: 4, Empty: 1}
	if f.Full, err = WriteFull(ctx, st, fullExp, items); err != nil {
		return nil, err
	}
	to := h.Records[len(h.Records)-1].Time.Add(time.Second)
	incExp := Export{ID: ExportID(to, 2), Prefix: "exports/app", From: at.Add(-time.Second), Time: to, Files: 2}
	if f.Incremental, err = WriteIncremental(ctx, st, incExp, changes); err != nil {
		return nil, err
	}
	return f, nil
}
