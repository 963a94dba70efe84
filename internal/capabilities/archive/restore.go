package archive

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/batchwrite"
	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Selection is the set of archived items to restore: the lines of the
// selected objects, with one winner per item key. An item archived more than
// once (it was created again after it expired, and expired again) is
// restored as its latest removal: the greatest RemovedAt, then the greatest
// sequence number; the others are superseded.
//
// Select reads the objects once to pick the winners, keeping only item keys
// and positions in memory; each reads them again to hand the winners out.
type Selection struct {
	a       *Archive
	objects []ObjectInfo
	other   []string
	keys    []string
	winners map[string]winner
	lines   int
}

// winner is where an item's latest archived version is.
type winner struct {
	removed time.Time
	seq     string
	object  int // index in Selection.objects
	line    int
}

func (w winner) newerThan(o winner) bool {
	if !w.removed.Equal(o.removed) {
		return w.removed.After(o.removed)
	}
	return seqLess(o.seq, w.seq)
}

// seqLess compares two sequence numbers (strings of digits) numerically.
func seqLess(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Select picks the items to restore from the objects f selects. keyAttrs
// names the table's key attributes (default PK, SK); an item without them
// is an error naming its object and line. Lines are decoded by the export
// decoder (pipeline.ExportDecoder), the same reader the reimport tooling
// uses, which ignores the "Archive" member beside "Item".
func (a *Archive) Select(ctx context.Context, f Filter, keyAttrs []string) (*Selection, error) {
	if len(keyAttrs) == 0 {
		keyAttrs = pipeline.DefaultKeyAttributes()
	}
	objs, other, err := a.Objects(ctx, f)
	if err != nil {
		return nil, err
	}
	s := &Selection{a: a, objects: objs, other: other, keys: keyAttrs, winners: make(map[string]winner)}
	dec := pipeline.NewExportDecoder(pipeline.Options{Schema: pipeline.Schema{KeyAttributes: keyAttrs}})
	for oi, o := range objs {
		err := a.ReadObject(ctx, o, func(n int, line []byte) error {
			c, l, err := decodeLine(dec, o.Key, n, line)
			if err != nil {
				return err
			}
			s.lines++
			w := winner{seq: l.Archive.SequenceNumber, object: oi, line: n}
			if l.Archive.RemovedAt != "" {
				if w.removed, err = time.Parse(time.RFC3339Nano, l.Archive.RemovedAt); err != nil {
					return fmt.Errorf("archive: %s line %d: RemovedAt: %w", o.Key, n, err)
				}
			}
			k := pipeline.ItemKey(c.Keys)
			if old, ok := s.winners[k]; !ok || w.newerThan(old) {
				s.winners[k] = w
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// decodeLine reads one archive line both ways: as the export decoder sees it
// (the item and its keys) and as an archive line (the metadata and the
// item's bytes).
func decodeLine(dec *pipeline.ExportDecoder, key string, n int, line []byte) (pipeline.Change, Line, error) {
	l, err := ParseLine(line)
	if err != nil {
		return pipeline.Change{}, Line{}, fmt.Errorf("archive: %s line %d: %w", key, n, err)
	}
	c, err := dec.Decode(line, key, n)
	if err != nil {
		return pipeline.Change{}, Line{}, fmt.Errorf("archive: %w", err)
	}
	return c, l, nil
}

// Objects returns the selected objects; Other the keys under the prefix
// that are not archive objects (and were not read).
func (s *Selection) Objects() []ObjectInfo { return s.objects }

// Other returns the keys under the archive prefix that are not archive objects.
func (s *Selection) Other() []string { return s.other }

// Lines returns the number of archive lines read; Items the number of
// distinct items among them. Lines-Items versions are superseded.
func (s *Selection) Lines() int { return s.lines }

// Items returns the number of distinct items selected.
func (s *Selection) Items() int { return len(s.winners) }

// each reads the selected objects again, in key order, and calls fn for each
// winning line: the item decoded and its DynamoDB JSON bytes as archived. If
// an object changed since Select so that a winner is no longer where it was,
// each fails rather than skip it.
func (s *Selection) each(ctx context.Context, fn func(o ObjectInfo, item pipeline.Item, raw json.RawMessage) error) error {
	dec := pipeline.NewExportDecoder(pipeline.Options{Schema: pipeline.Schema{KeyAttributes: s.keys}})
	emitted := 0
	for oi, o := range s.objects {
		err := s.a.ReadObject(ctx, o, func(n int, line []byte) error {
			c, l, err := decodeLine(dec, o.Key, n, line)
			if err != nil {
				return err
			}
			if w := s.winners[pipeline.ItemKey(c.Keys)]; w.object != oi || w.line != n {
				return nil
			}
			emitted++
			return fn(o, c.New, l.Item)
		})
		if err != nil {
			return err
		}
	}
	if emitted != len(s.winners) {
		return fmt.Errorf("archive: the objects changed while being read: %d of %d items found again; run again", emitted, len(s.winners))
	}
	return nil
}

// TableOptions configures RestoreTable. The zero value works.
type TableOptions struct {
	// MaxAttempts bounds the BatchWriteItem calls for one batch of 25 items
	// while some stay unprocessed. Default 12.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff between those calls: full
	// jitter over min(MaxDelay, BaseDelay·2^attempt). Defaults 50 ms and
	// 10 s.
	BaseDelay, MaxDelay time.Duration
	// Sleep waits between attempts; nil waits on a timer, ending early when
	// ctx is done. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Progress, when set, is called with the number of items handed to the
	// writer each time some are (of Selection.Items in all), for a progress
	// line.
	Progress func(items int64)
}

// RestoreTable puts every selected item into table with the batch writer
// (infra/batchwrite: BatchWriteItem, 25 at a time, unprocessed items
// retried with capped exponential backoff and full jitter; the SDK itself
// retries throttled calls). It returns the number of items written.
// Putting an item twice is harmless, so a failed restore can simply be run
// again.
func RestoreTable(ctx context.Context, s *Selection, client batchwrite.API, table string, opts TableOptions) (int, error) {
	w, err := batchwrite.New(ctx, client, table, batchwrite.Options{MaxAttempts: opts.MaxAttempts, BaseDelay: opts.BaseDelay, MaxDelay: opts.MaxDelay, Sleep: opts.Sleep})
	if err != nil {
		return 0, err
	}
	var b *batchwrite.Batch
	cur, pos := "", int64(0)
	keys := make(pipeline.Item, len(s.keys))
	err = s.each(ctx, func(o ObjectInfo, item pipeline.Item, _ json.RawMessage) error {
		if b == nil || o.Key != cur {
			if b != nil {
				if err := b.Flush(ctx); err != nil {
					return err
				}
			}
			b, cur, pos = w.Source(o.Key), o.Key, 0
		}
		for _, k := range s.keys {
			keys[k] = item[k]
		}
		pos++
		if err := b.Add(ctx, pipeline.ItemKey(keys), item, pos); err != nil {
			return err
		}
		if opts.Progress != nil {
			opts.Progress(1)
		}
		return nil
	})
	if err == nil && b != nil {
		err = b.Flush(ctx)
	}
	st, _ := w.Close(ctx)
	if err != nil {
		return int(st.Written), fmt.Errorf("archive: restore into %s: %w", table, err)
	}
	return int(st.Written), nil
}

// errExportExists matches the error of restoring into an export directory
// that exists already: a finished restore's, or one another restore is
// writing.
var errExportExists = errors.New("the export exists already")

// exportStore is where RestoreExport writes: a directory or an S3 prefix
// (objstore's stores).
type exportStore interface {
	Put(ctx context.Context, key string, body []byte) error
	PutIfAbsent(ctx context.Context, key string, body []byte) (string, error)
	String() string
}

// ExportOptions configures RestoreExport.
type ExportOptions struct {
	// ExportID names the export directory (AWSDynamoDB/<ExportID>/).
	// Default: the time in milliseconds and 8 hex digits, like DynamoDB's.
	ExportID string
	// Now is the export's time; default time.Now().
	Now time.Time
	// Progress, when set, is called with the number of items written each
	// time a data file is (of Selection.Items in all), for a progress line.
	Progress func(items int64)
}

// ExportResult is what RestoreExport wrote.
type ExportResult struct {
	// Dir is the export's directory: <out>/AWSDynamoDB/<ExportID>.
	Dir string
	// Items and Files count the items and data files written.
	Items, Files int
}

// RestoreExport writes the selected items into out in the shape of a
// DynamoDB full export in DYNAMODB_JSON format:
//
//	AWSDynamoDB/<ExportID>/_started
//	AWSDynamoDB/<ExportID>/data/<date>-<entity>-<seq>.json.gz   one per archive object, {"Item":...} lines
//	AWSDynamoDB/<ExportID>/manifest-files.json                  one JSON line per data file
//	AWSDynamoDB/<ExportID>/manifest-summary.json                written last
//
// Data lines are the archived items byte for byte, without the metadata, so
// the data/ prefix can be given to ImportTable, and the directory to the
// export reimport tooling. Each file is written atomically; _started is
// created only if absent (a second restore into the same export fails with
// ErrExportExists); the summary, written last, marks a complete export.
func RestoreExport(ctx context.Context, s *Selection, out exportStore, opts ExportOptions) (ExportResult, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	opts.Now = opts.Now.UTC()
	if opts.ExportID == "" {
		h := sha256.New()
		for _, o := range s.objects {
			h.Write([]byte(o.Key + "\n"))
		}
		opts.ExportID = fmt.Sprintf("%014d-%s", opts.Now.UnixMilli(), hex.EncodeToString(h.Sum(nil))[:8])
	}
	base := "AWSDynamoDB/" + opts.ExportID
	if !objstore.ValidKey(base) {
		return ExportResult{}, fmt.Errorf("archive: invalid export ID %q", opts.ExportID)
	}
	res := ExportResult{Dir: objstore.Name(out, base)}
	// The export's first object, created only if absent: of two restores
	// into one export directory, one writes it and the other stops here.
	if _, err := out.PutIfAbsent(ctx, base+"/_started", nil); errors.Is(err, objstore.ErrPreconditionFailed) {
		return ExportResult{}, fmt.Errorf("archive: %s: %w (written, or being written, by another restore)", res.Dir, errExportExists)
	} else if err != nil {
		return ExportResult{}, err
	}

	var (
		manifest bytes.Buffer
		data     []byte
		items    int
		cur      = -1
		curObj   ObjectInfo
		objIndex = make(map[string]int, len(s.objects))
		// Every archive object becomes one data file, of a name no other
		// object's may shorten to.
		files = objstore.NewNames("archive objects")
	)
	for i, o := range s.objects {
		objIndex[o.Key] = i
	}
	flush := func() error {
		if items == 0 {
			return nil
		}
		name := curObj.Date + "-" + curObj.EntitySegment + "-" + curObj.FirstSeq
		if curObj.Compacted {
			name += "-" + curObj.Inputs
		}
		file := objstore.FitName("", name, ".json.gz", objstore.MaxSegmentBytes)
		if err := files.Add(file, name); err != nil {
			return fmt.Errorf("archive: restoring %s into %s: %w", curObj.Key, res.Dir, err)
		}
		key := path.Join(base, "data", file)
		body := Gzip(data)
		if err := out.Put(ctx, key, body); err != nil {
			return err
		}
		sum := md5.Sum(body)
		line, _ := json.Marshal(struct {
			ItemCount   int    `json:"itemCount"`
			MD5Checksum string `json:"md5Checksum"`
			ETag        string `json:"etag"`
			DataFileKey string `json:"dataFileS3Key"`
		}{items, base64.StdEncoding.EncodeToString(sum[:]), hex.EncodeToString(sum[:]), key})
		manifest.Write(line)
		manifest.WriteByte('\n')
		res.Items += items
		res.Files++
		if opts.Progress != nil {
			opts.Progress(int64(items))
		}
		data, items = data[:0], 0
		return nil
	}
	err := s.each(ctx, func(o ObjectInfo, _ pipeline.Item, raw json.RawMessage) error {
		if i := objIndex[o.Key]; i != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, curObj = i, o
		}
		data = append(data, `{"Item":`...)
		data = append(data, raw...)
		data = append(data, '}', '\n')
		items++
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return ExportResult{}, err
	}
	if err := out.Put(ctx, base+"/manifest-files.json", manifest.Bytes()); err != nil {
		return ExportResult{}, err
	}
	ts := opts.Now.Format(time.RFC3339Nano)
	summary, _ := json.Marshal(map[string]any{
		"version":            "2020-06-30",
		"exportArn":          nil,
		"startTime":          ts,
		"endTime":            ts,
		"exportTime":         ts,
		"tableArn":           nil,
		"tableId":            nil,
		"s3Bucket":           nil,
		"s3Prefix":           nil,
		"s3SseAlgorithm":     nil,
		"s3SseKmsKeyId":      nil,
		"manifestFilesS3Key": base + "/manifest-files.json",
		"billedSizeBytes":    0,
		"itemCount":          res.Items,
		"outputFormat":       "DYNAMODB_JSON",
		"exportType":         "FULL_EXPORT",
	})
	if err := out.Put(ctx, base+"/manifest-summary.json", append(summary, '\n')); err != nil {
		return ExportResult{}, err
	}
	return res, nil
}
