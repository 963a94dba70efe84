package export

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
	"io"
	"path"
	"strings"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/pipeline"
)

// Summary is an export's manifest-summary.json.
type Summary struct {
	Version            string `json:"version"`
	ExportARN          string `json:"exportArn"`
	StartTime          string `json:"startTime"`
	EndTime            string `json:"endTime"`
	TableARN           string `json:"tableArn"`
	TableID            string `json:"tableId"`
	ExportTime         string `json:"exportTime,omitempty"`
	S3Bucket           string `json:"s3Bucket"`
	S3Prefix           string `json:"s3Prefix"`
	S3SseAlgorithm     string `json:"s3SseAlgorithm"`
	S3SseKmsKeyID      string `json:"s3SseKmsKeyId"`
	ManifestFilesS3Key string `json:"manifestFilesS3Key"`
	BilledSizeBytes    int64  `json:"billedSizeBytes"`
	ItemCount          int64  `json:"itemCount"`
	OutputFormat       string `json:"outputFormat"`
	// Incremental exports only.
	ExportType     string `json:"exportType,omitempty"`
	ExportFromTime string `json:"exportFromTime,omitempty"`
	ExportToTime   string `json:"exportToTime,omitempty"`
	OutputView     string `json:"outputView,omitempty"`
}

// Export types, as manifest-summary.json's exportType spells them (a full
// export's summary may leave the field out).
const (
	fullExport        = "FULL_EXPORT"
	IncrementalExport = "INCREMENTAL_EXPORT"
)

// Incremental reports whether the summary is an incremental export's.
func (s *Summary) Incremental() bool { return s.ExportType == IncrementalExport }

// DataFile is one line of manifest-files.json.
type DataFile struct {
	ItemCount     int64  `json:"itemCount"`
	MD5Checksum   string `json:"md5Checksum"`
	ETag          string `json:"etag"`
	DataFileS3Key string `json:"dataFileS3Key"`
}

// Export is an opened DynamoDB export to S3 (or a local copy of one): its
// summary and the data files its manifest lists.
type Export struct {
	store Source
	// Dir is the key of the export's directory, AWSDynamoDB/<ExportId>
	// ("" for a manifest-less data directory).
	Dir string
	// ID is the ExportId.
	ID      string
	Summary Summary
	Files   []DataFile
	// ManifestSHA256 is the hex SHA-256 of manifest-summary.json and
	// manifest-files.json, identifying the export's content.
	ManifestSHA256 string
	// NoManifest is true for an export opened without manifests
	// (OpenOptions.AllowMissingManifest): item counts are then not known.
	NoManifest bool
}

// OpenOptions configures OpenExport.
type OpenOptions struct {
	// AllowMissingManifest accepts an export directory that has data/ files
	// but no manifest-summary.json (a copy that lost them, or a local
	// server's export, which writes none). Nothing can then be reconciled.
	AllowMissingManifest bool
}

// ErrUnsupportedFormat matches an export in a format this package does not
// read yet (ION).
var ErrUnsupportedFormat = errors.New("export: unsupported format")

// Location of an export inside a store: the store's root holds the
// AWSDynamoDB/ folder, as the export's bucket prefix does.
const awsDir = "AWSDynamoDB/"

// OpenExportAt opens the export at loc: the export's own directory
// (…/AWSDynamoDB/<ExportId>), or a prefix under which exactly one export
// lies. newStore makes the store for a location (rooted above AWSDynamoDB/
// when loc names the export's directory, so that incremental exports' shared
// data folder is reachable).
func OpenExportAt(ctx context.Context, loc objstore.Location, newStore func(objstore.Location) (Source, error), opts OpenOptions) (*Export, error) {
	root, dir := splitExportLocation(loc)
	st, err := newStore(root)
	if err != nil {
		return nil, err
	}
	return OpenExport(ctx, st, dir, opts)
}

// splitExportLocation splits a location naming AWSDynamoDB/<ExportId> into
// the location above AWSDynamoDB and the export's directory key.
func splitExportLocation(loc objstore.Location) (root objstore.Location, dir string) {
	p := loc.Prefix
	if !loc.IsS3() {
		p = strings.TrimRight(loc.Dir, "/")
	}
	parent, id := path.Split(p)
	parent = strings.TrimSuffix(parent, "/")
	grand, aws := path.Split(parent)
	if aws+"/" != awsDir || id == "" {
		return loc, ""
	}
	grand = strings.TrimSuffix(grand, "/")
	if loc.IsS3() {
		loc.Prefix = grand
	} else {
		if grand == "" {
			grand = "."
			if strings.HasPrefix(loc.Dir, "/") {
				grand = "/"
			}
		}
		loc.Dir = grand
	}
	return loc, awsDir + id
}

// OpenExport opens the export whose directory is dir in st ("" to find the
// one export under st's root). It reads and checks both manifests.
func OpenExport(ctx context.Context, st Source, dir string, opts OpenOptions) (*Export, error) {
	if dir == "" {
		var found []string
		var dataDirs []string
		err := st.List(ctx, awsDir, func(o objstore.Object) error {
			rest := strings.TrimPrefix(o.Key, awsDir)
			id, name, ok := strings.Cut(rest, "/")
			if !ok {
				return nil
			}
			switch {
			case name == "manifest-summary.json":
				found = append(found, awsDir+id)
			case strings.HasPrefix(name, "data/") && id != "data":
				if len(dataDirs) == 0 || dataDirs[len(dataDirs)-1] != awsDir+id {
					dataDirs = append(dataDirs, awsDir+id)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		switch {
		case len(found) == 1:
			dir = found[0]
		case len(found) > 1:
			return nil, fmt.Errorf("export: %s holds %d exports (%s); name one, e.g. %s", st, len(found), strings.Join(found, ", "), objstore.Name(st, found[0]))
		case opts.AllowMissingManifest && len(dataDirs) == 1:
			dir = dataDirs[0]
		case opts.AllowMissingManifest && len(dataDirs) > 1:
			return nil, fmt.Errorf("export: %s holds %d export data folders (%s); name one", st, len(dataDirs), strings.Join(dataDirs, ", "))
		default:
			return nil, fmt.Errorf("export: no %s<ExportId>/manifest-summary.json under %s", awsDir, st)
		}
	}
	e := &Export{store: st, Dir: dir, ID: path.Base(dir)}
	sumKey := dir + "/manifest-summary.json"
	sumBytes, err := objstore.ReadAll(ctx, st, sumKey)
	if errors.Is(err, objstore.ErrNotFound) && opts.AllowMissingManifest {
		return e.openWithoutManifest(ctx)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(sumBytes, &e.Summary); err != nil {
		return nil, fmt.Errorf("export: %s: %w", objstore.Name(st, sumKey), err)
	}
	switch e.Summary.OutputFormat {
	case "DYNAMODB_JSON", "":
	case "ION":
		return nil, fmt.Errorf("%w: %s is an ION export; only DYNAMODB_JSON is read so far (export again with ExportFormat DYNAMODB_JSON)", ErrUnsupportedFormat, objstore.Name(st, dir))
	default:
		return nil, fmt.Errorf("%w: %s: outputFormat %q", ErrUnsupportedFormat, objstore.Name(st, sumKey), e.Summary.OutputFormat)
	}
	filesKey := e.StoreKey(e.Summary.ManifestFilesS3Key)
	if e.Summary.ManifestFilesS3Key == "" {
		filesKey = dir + "/manifest-files.json"
	}
	filesBytes, err := objstore.ReadAll(ctx, st, filesKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	sum.Write(sumBytes)
	sum.Write(filesBytes)
	e.ManifestSHA256 = hex.EncodeToString(sum.Sum(nil))
	var total int64
	listed := map[string]int{} // store key → the line that lists it
	for i, line := range bytes.Split(filesBytes, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var f DataFile
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, &FileError{File: objstore.Name(st, filesKey), Line: i + 1, Err: err}
		}
		if f.DataFileS3Key == "" || f.ItemCount < 0 {
			return nil, &FileError{File: objstore.Name(st, filesKey), Line: i + 1, Err: errors.New("want dataFileS3Key and a non-negative itemCount")}
		}
		if strings.HasSuffix(f.DataFileS3Key, ".ion.gz") {
			return nil, fmt.Errorf("%w: %s is an ION data file; only DYNAMODB_JSON is read so far", ErrUnsupportedFormat, f.DataFileS3Key)
		}
		if first, ok := listed[e.DataKey(f)]; ok {
			return nil, &FileError{File: objstore.Name(st, filesKey), Line: i + 1, Err: corruptf("%s, the data file line %d lists already (%s): an export lists each data file once, so this one is corrupt",
				f.DataFileS3Key, first, objstore.Name(st, e.DataKey(f)))}
		}
		listed[e.DataKey(f)] = i + 1
		total += f.ItemCount
		e.Files = append(e.Files, f)
	}
	if total != e.Summary.ItemCount {
		return nil, fmt.Errorf("export: %s lists %d items in %d data files, but %s says itemCount %d",
			objstore.Name(st, filesKey), total, len(e.Files), objstore.Name(st, sumKey), e.Summary.ItemCount)
	}
	return e, nil
}

// openWithoutManifest lists dir/data/ as the export's data files.
func (e *Export) openWithoutManifest(ctx context.Context) (*Export, error) {
	e.NoManifest = true
	e.Summary = Summary{OutputFormat: "DYNAMODB_JSON", ExportType: fullExport}
	sum := sha256.New()
	err := e.store.List(ctx, e.Dir+"/data/", func(o objstore.Object) error {
		if strings.HasSuffix(o.Key, ".ion.gz") {
			return fmt.Errorf("%w: %s is an ION data file", ErrUnsupportedFormat, o.Key)
		}
		e.Files = append(e.Files, DataFile{DataFileS3Key: o.Key, ItemCount: -1})
		fmt.Fprintf(sum, "%s %d\n", o.Key, o.Size)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(e.Files) == 0 {
		return nil, fmt.Errorf("export: no manifest-summary.json and no data files under %s", objstore.Name(e.store, e.Dir))
	}
	e.ManifestSHA256 = hex.EncodeToString(sum.Sum(nil))
	return e, nil
}

// Store returns the store the export is read from.
func (e *Export) Store() Source { return e.store }

// String names the export for people.
func (e *Export) String() string { return objstore.Name(e.store, e.Dir) }

// StoreKey maps a key from a manifest (a full bucket key, under the export
// request's prefix) to a key in the store, whose root is the folder that
// holds AWSDynamoDB/.
func (e *Export) StoreKey(bucketKey string) string {
	if i := strings.LastIndex(bucketKey, awsDir); i >= 0 {
		return bucketKey[i:]
	}
	if p := strings.Trim(e.Summary.S3Prefix, "/"); p != "" {
		if rest, ok := strings.CutPrefix(bucketKey, p+"/"); ok {
			return rest
		}
	}
	return bucketKey
}

// DataKey returns the store key of a data file.
func (e *Export) DataKey(f DataFile) string { return e.StoreKey(f.DataFileS3Key) }

// Time returns the export's point in time: exportTime for a full export,
// exportToTime for an incremental one (zero if unknown).
func (e *Export) Time() time.Time {
	s := e.Summary.ExportTime
	if e.Summary.Incremental() {
		s = e.Summary.ExportToTime
	}
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// FileStats describes one data file as read.
type FileStats struct {
	Lines             int64  // item lines
	CompressedBytes   int64  // bytes of the object
	UncompressedBytes int64  // bytes of the lines, newlines included
	MD5               string // base64 MD5 of the object; empty when not checked (skipMD5)
}

// ErrNotExported matches the error of a data file whose object is not the
// one the export wrote: its MD5 is not the manifest's md5Checksum (the
// object was replaced, or changed while it was read).
var ErrNotExported = errors.New("not the exported object")

// notExported is the error of a data file whose MD5 is not the manifest's.
func notExported(name, md5, want, when string) error {
	return &FileError{File: name, Err: corrupt{fmt.Errorf("%w: MD5 %s, but the manifest says md5Checksum %s (%s)", ErrNotExported, md5, want, when)}}
}

// versionedSource is a Source that opens an object only at a version
// (objstore.S3: If-Match of its ETag), which every read of the body then
// reads.
type versionedSource interface {
	OpenVersion(ctx context.Context, key, version string) (io.ReadCloser, string, error)
}

// ReadExportedLines is ReadLines that proves the object is the one the
// export wrote before fn sees any line of it, for a reader that acts on
// each line (a backfill applies it). On S3 the object is read only while
// its ETag is the manifest's etag (If-Match), which is the proof, with no
// read more. Otherwise (a directory; an object with another ETag, as a
// copy of the export may have; a manifest without etag) its compressed
// bytes are hashed first and their MD5 compared with the manifest's
// md5Checksum; then the lines are read from the same open file, or on S3
// from the same object version (If-Match of the ETag hashed). The MD5 is
// checked at the end as ReadLines does: a file written over in place
// while it is read fails there, after fn has seen lines of it; both
// failures match ErrNotExported. With skipMD5, or a manifest that gives no
// md5Checksum, nothing proves the object: it is ReadLines.
func (e *Export) ReadExportedLines(ctx context.Context, f DataFile, skipMD5 bool, fn func(line []byte, n int) error) (FileStats, error) {
	if skipMD5 || f.MD5Checksum == "" {
		return e.ReadLines(ctx, f, skipMD5, fn)
	}
	key := e.DataKey(f)
	name := objstore.Name(e.store, key)
	r, err := e.openExported(ctx, f, key, name)
	if err != nil {
		return FileStats{}, err
	}
	return e.readFrom(ctx, f, name, r, false, fn)
}

// openExported opens data file f, proven to be the exported object (see
// ReadExportedLines).
func (e *Export) openExported(ctx context.Context, f DataFile, key, name string) (io.ReadCloser, error) {
	vs, versioned := e.store.(versionedSource)
	if versioned && f.ETag != "" {
		etag := f.ETag
		if !strings.HasPrefix(etag, `"`) {
			etag = `"` + etag + `"` // S3's form of it; manifests leave the quotes out
		}
		r, _, err := vs.OpenVersion(ctx, key, etag)
		if !errors.Is(err, objstore.ErrPreconditionFailed) {
			return r, err
		}
		// Another ETag: the MD5 decides.
	}
	var r io.ReadCloser
	var version string
	var err error
	if versioned {
		r, version, err = vs.OpenVersion(ctx, key, "")
	} else {
		r, err = e.store.Open(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	sum, err := hashObject(r)
	seeker, seekable := r.(io.Seeker)
	if err != nil || !seekable || versioned {
		err = errors.Join(err, r.Close())
		r = nil
	}
	if err != nil {
		return nil, &FileError{File: name, Err: err}
	}
	if sum != f.MD5Checksum {
		if r != nil {
			_ = r.Close() // the error is the object's MD5
		}
		return nil, notExported(name, sum, f.MD5Checksum, "the object is not the one exported; nothing of it was read")
	}
	switch {
	case versioned:
		r, _, err = vs.OpenVersion(ctx, key, version)
		if errors.Is(err, objstore.ErrPreconditionFailed) {
			return nil, &FileError{File: name, Err: fmt.Errorf("the object changed since its MD5 was checked: %w", err)}
		}
	case seekable:
		if _, err = seeker.Seek(0, io.SeekStart); err != nil {
			err = errors.Join(&FileError{File: name, Err: err}, r.Close())
		}
	default:
		r, err = e.store.Open(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// hashObject returns the base64 MD5 of what r holds, as manifests give it.
func hashObject(r io.Reader) (string, error) {
	h := md5.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// ReadLines streams the lines of data file f, calling fn with each (without
// its newline; the slice is only valid during the call) and its line number,
// from 1. It fails, naming the file and line, on a gzip error (bad or
// truncated data), an empty line or an over-long one; and, after the last
// line, when the line count or the object's MD5 does not match the
// manifest (unless skipMD5, which also skips hashing).
func (e *Export) ReadLines(ctx context.Context, f DataFile, skipMD5 bool, fn func(line []byte, n int) error) (_ FileStats, err error) {
	key := e.DataKey(f)
	name := objstore.Name(e.store, key)
	r, err := e.store.Open(ctx, key)
	if err != nil {
		return FileStats{}, err
	}
	return e.readFrom(ctx, f, name, r, skipMD5, fn)
}

// readFrom reads data file f's lines from r, which it closes, with the
// checks ReadLines describes.
func (e *Export) readFrom(ctx context.Context, f DataFile, name string, r io.ReadCloser, skipMD5 bool, fn func(line []byte, n int) error) (_ FileStats, err error) {
	defer func() { err = errors.Join(err, r.Close()) }()
	st, err := readGzipLines(ctx, r, name, pipeline.MaxExportLineBytes, !skipMD5, fn)
	if err != nil {
		return st, err
	}
	if !skipMD5 && f.MD5Checksum != "" && st.MD5 != f.MD5Checksum {
		return st, notExported(name, st.MD5, f.MD5Checksum, "the object changed, or is not the one exported")
	}
	if f.ItemCount >= 0 && st.Lines != f.ItemCount {
		return st, &FileError{File: name, Err: corruptf("%d items, but the manifest says itemCount %d", st.Lines, f.ItemCount)}
	}
	return st, nil
}
