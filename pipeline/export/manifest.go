package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

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
	FullExport        = "FULL_EXPORT"
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
	store Store
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
func OpenExportAt(ctx context.Context, loc Location, newStore func(Location) (Store, error), opts OpenOptions) (*Export, error) {
	root, dir := splitExportLocation(loc)
	st, err := newStore(root)
	if err != nil {
		return nil, err
	}
	return OpenExport(ctx, st, dir, opts)
}

// splitExportLocation splits a location naming AWSDynamoDB/<ExportId> into
// the location above AWSDynamoDB and the export's directory key.
func splitExportLocation(loc Location) (root Location, dir string) {
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
func OpenExport(ctx context.Context, st Store, dir string, opts OpenOptions) (*Export, error) {
	if dir == "" {
		var found []string
		var dataDirs []string
		err := st.List(ctx, awsDir, func(o Object) error {
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
			return nil, fmt.Errorf("export: %s holds %d exports (%s); name one, e.g. %s", st, len(found), strings.Join(found, ", "), join(st.String(), found[0]))
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
	sumBytes, err := readAll(ctx, st, sumKey)
	if errors.Is(err, ErrNotFound) && opts.AllowMissingManifest {
		return e.openWithoutManifest(ctx)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(sumBytes, &e.Summary); err != nil {
		return nil, fmt.Errorf("export: %s: %w", join(st.String(), sumKey), err)
	}
	switch e.Summary.OutputFormat {
	case "DYNAMODB_JSON", "":
	case "ION":
		return nil, fmt.Errorf("%w: %s is an ION export; only DYNAMODB_JSON is read so far (export again with ExportFormat DYNAMODB_JSON)", ErrUnsupportedFormat, join(st.String(), dir))
	default:
		return nil, fmt.Errorf("%w: %s: outputFormat %q", ErrUnsupportedFormat, join(st.String(), sumKey), e.Summary.OutputFormat)
	}
	filesKey := e.storeKey(e.Summary.ManifestFilesS3Key)
	if e.Summary.ManifestFilesS3Key == "" {
		filesKey = dir + "/manifest-files.json"
	}
	filesBytes, err := readAll(ctx, st, filesKey)
	if err != nil {
		return nil, err
	}
	sum := newSHA256()
	sum.Write(sumBytes)
	sum.Write(filesBytes)
	e.ManifestSHA256 = hexSum(sum)
	var total int64
	for i, line := range bytes.Split(filesBytes, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var f DataFile
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, &FileError{File: join(st.String(), filesKey), Line: i + 1, Err: err}
		}
		if f.DataFileS3Key == "" || f.ItemCount < 0 {
			return nil, &FileError{File: join(st.String(), filesKey), Line: i + 1, Err: errors.New("want dataFileS3Key and a non-negative itemCount")}
		}
		if strings.HasSuffix(f.DataFileS3Key, ".ion.gz") {
			return nil, fmt.Errorf("%w: %s is an ION data file; only DYNAMODB_JSON is read so far", ErrUnsupportedFormat, f.DataFileS3Key)
		}
		total += f.ItemCount
		e.Files = append(e.Files, f)
	}
	if total != e.Summary.ItemCount {
		return nil, fmt.Errorf("export: %s lists %d items in %d data files, but %s says itemCount %d",
			join(st.String(), filesKey), total, len(e.Files), join(st.String(), sumKey), e.Summary.ItemCount)
	}
	return e, nil
}

// openWithoutManifest lists dir/data/ as the export's data files.
func (e *Export) openWithoutManifest(ctx context.Context) (*Export, error) {
	e.NoManifest = true
	e.Summary = Summary{OutputFormat: "DYNAMODB_JSON", ExportType: FullExport}
	sum := newSHA256()
	err := e.store.List(ctx, e.Dir+"/data/", func(o Object) error {
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
		return nil, fmt.Errorf("export: no manifest-summary.json and no data files under %s", join(e.store.String(), e.Dir))
	}
	e.ManifestSHA256 = hexSum(sum)
	return e, nil
}

// Store returns the store the export is read from.
func (e *Export) Store() Store { return e.store }

// String names the export for people.
func (e *Export) String() string { return join(e.store.String(), e.Dir) }

// storeKey maps a key from a manifest (a full bucket key, under the export
// request's prefix) to a key in the store, whose root is the folder that
// holds AWSDynamoDB/.
func (e *Export) storeKey(bucketKey string) string {
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
func (e *Export) DataKey(f DataFile) string { return e.storeKey(f.DataFileS3Key) }

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

// MaxLineBytes is the longest data line read: the longest line an export
// of DynamoDB's 400 KB items can hold (pipeline.MaxExportLineBytes).
const MaxLineBytes = pipeline.MaxExportLineBytes

// FileStats describes one data file as read.
type FileStats struct {
	Lines             int64  // item lines
	CompressedBytes   int64  // bytes of the object
	UncompressedBytes int64  // bytes of the lines, newlines included
	MD5               string // base64 MD5 of the object; empty when not checked (skipMD5)
}

// ReadLines streams the lines of data file f, calling fn with each (without
// its newline; the slice is only valid during the call) and its line number,
// from 1. It fails, naming the file and line, on a gzip error (bad or
// truncated data), an empty line or an over-long one; and, after the last
// line, when the line count or the object's MD5 does not match the
// manifest (unless skipMD5, which also skips hashing).
func (e *Export) ReadLines(ctx context.Context, f DataFile, skipMD5 bool, fn func(line []byte, n int) error) (FileStats, error) {
	key := e.DataKey(f)
	name := join(e.store.String(), key)
	r, err := e.store.Open(ctx, key)
	if err != nil {
		return FileStats{}, err
	}
	defer r.Close()
	st, err := readGzipLines(ctx, r, name, MaxLineBytes, !skipMD5, fn)
	if err != nil {
		return st, err
	}
	if f.ItemCount >= 0 && st.Lines != f.ItemCount {
		return st, &FileError{File: name, Err: corruptf("%d items, but the manifest says itemCount %d", st.Lines, f.ItemCount)}
	}
	if !skipMD5 && f.MD5Checksum != "" && st.MD5 != f.MD5Checksum {
		return st, &FileError{File: name, Err: corruptf("MD5 %s, but the manifest says md5Checksum %s (the object changed, or is not the one exported)", st.MD5, f.MD5Checksum)}
	}
	return st, nil
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
	finish := func() FileStats {
		io.Copy(io.Discard, br) // hash the whole object
		st.CompressedBytes = cr.n
		if hash {
			st.MD5 = base64.StdEncoding.EncodeToString(cr.h.Sum(nil))
		}
		return st
	}
	if _, err := br.Peek(1); err == io.EOF {
		return finish(), nil
	} else if err != nil {
		return st, &FileError{File: name, Err: err}
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return st, &FileError{File: name, Err: corruptf("not gzip: %v", err)}
	}
	defer zr.Close()
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
	return finish(), nil
}

// lineErr is a reading error at a line.
type lineErr struct {
	line int
	err  error
}

func (e *lineErr) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineErr) Unwrap() error { return e.err }

// ScanLines calls fn with each line of r (without its newline; the slice
// is only valid during the call) and its number, from 1, as the export's
// data files are read: a line may have at most maxLine bytes
// (pipeline.MaxExportLineBytes for DYNAMODB_JSON), an empty line is an
// error, the last line may lack its newline. An error names the line.
func ScanLines(ctx context.Context, r io.Reader, maxLine int, fn func(line []byte, n int) error) error {
	return scanLines(ctx, r, maxLine, fn)
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
