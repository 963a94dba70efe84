package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tributary/tributary/internal/capabilities/export"
	"github.com/tributary/tributary/internal/limitio"
	"github.com/tributary/tributary/internal/quote"
	"github.com/tributary/tributary/pipeline"
)

func runDecode(ctx context.Context, e *Env, args []string) (err error) {
	fs := e.FlagSet("decode", "FILE...")
	format := fs.String("format", "", "input format: streams, kinesis, streams-api or export (default: told from each file's structure)")
	var sf schemaFlags
	sf.register(fs, typeFlag|versionFlag|keysFlag)
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no input files (use - for standard input)", errUsage)
	}
	switch *format {
	case "", "streams", "kinesis", "streams-api", "export":
	default:
		return fmt.Errorf("%w: unknown format %q", errUsage, *format)
	}
	schema, err := e.schema(sf)
	if err != nil {
		return err
	}
	opts := pipeline.Options{Schema: schema}
	out := bufio.NewWriter(e.Stdout)
	var buf []byte
	emit := func(c *pipeline.Change) error {
		// JSON whose strings a terminal prints as themselves too.
		buf = append(c.AppendJSON(buf[:0]), '\n')
		_, err := out.Write(quote.PrintableJSON(buf))
		return err
	}
	var bad int
	for _, name := range fs.Args() {
		if err = ctx.Err(); err != nil {
			break
		}
		var n int
		if n, err = decodeInput(ctx, e, name, *format, opts, emit); err != nil {
			break
		}
		bad += n
	}
	flush(out, &err) // before the count of what could not be decoded
	if err != nil {
		return err
	}
	if bad > 0 {
		fmt.Fprintf(e.Stderr, "%s decode: %d record(s) could not be decoded\n", e.Name, bad)
		return errFailed
	}
	return nil
}

// decodeInput decodes one input in format ("": told from its structure),
// passing each change to emit and reporting each record that cannot be
// decoded on stderr; it returns how many could not. Export lines are read
// one at a time; the other formats, a whole payload each, are read up to
// the most their format can hold. It stops at emit's first error.
func decodeInput(ctx context.Context, e *Env, name, format string, opts pipeline.Options, emit func(*pipeline.Change) error) (_ int, err error) {
	in, closeIn, err := openInput(e, name)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, closeIn()) }()
	var data []byte
	if format == "" {
		if format, data, err = detectInput(name, in); err != nil {
			return 0, err
		}
	}
	bad := 0
	report := func(err error) error {
		var de *pipeline.DecodeError
		if !errors.As(err, &de) {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, r := range de.Records {
			if r.File != "" { // an export line's error names its file
				fmt.Fprintln(e.Stderr, quote.Printable(r.Error()))
			} else {
				fmt.Fprintf(e.Stderr, "%s: %s\n", name, quote.Printable(r.Error()))
			}
		}
		bad += len(de.Records)
		return nil
	}
	if format == "export" {
		var lines io.Reader = in
		if data != nil {
			lines = bytes.NewReader(data)
		}
		d := pipeline.NewExportDecoder(opts)
		err := export.ScanLines(ctx, lines, name, func(line []byte, n int) error {
			c, err := d.Decode(line, name, n)
			if err != nil {
				return report(&pipeline.DecodeError{Records: []*pipeline.RecordError{asRecordError(err)}})
			}
			return emit(&c)
		})
		return bad, err // a *export.FileError names the file and the line
	}
	if data == nil {
		if data, err = readPayload(name, format, in); err != nil {
			return 0, err
		}
	}
	changes, err := decodePayload(format, data, opts)
	for i := range changes {
		if eerr := emit(&changes[i]); eerr != nil {
			return bad, eerr
		}
	}
	if err != nil {
		return bad, report(err)
	}
	return bad, nil
}

// asRecordError returns the *pipeline.RecordError an export decoder's error
// is.
func asRecordError(err error) *pipeline.RecordError {
	var re *pipeline.RecordError
	if errors.As(err, &re) {
		return re
	}
	return &pipeline.RecordError{Err: err}
}

// openInput opens a file, or standard input for "-", decompressing it if it
// is gzip; the function it returns closes it.
func openInput(e *Env, name string) (*limitio.Reader, func() error, error) {
	var rc io.ReadCloser = io.NopCloser(e.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		rc = f
	}
	in, err := limitio.NewReader(rc)
	if err != nil {
		_ = rc.Close() // read-only, and the read's error is the one to report
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return in, rc.Close, nil
}

// payloadLimits are the most bytes a payload of each whole-payload format
// can have, and why.
var payloadLimits = map[string]struct {
	max int
	why string
}{
	"streams":     {pipeline.MaxLambdaPayloadBytes, "a Lambda event is at most Lambda's 6 MB payload"},
	"kinesis":     {pipeline.MaxLambdaPayloadBytes, "a Lambda event is at most Lambda's 6 MB payload"},
	"streams-api": {pipeline.MaxStreamsAPIBodyBytes, "a GetRecords response holds at most 1 MB of items' data"},
}

// readPayload reads a whole payload of format, up to the most it can hold.
func readPayload(name, format string, in *limitio.Reader) ([]byte, error) {
	lim := payloadLimits[format]
	data, err := in.ReadAll(lim.max)
	if err != nil {
		var tl *limitio.TooLargeError
		if errors.As(err, &tl) {
			return nil, fmt.Errorf("%s: %w: not a %s payload (%s)", name, err, format, lim.why)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// detectPrefix is how much of an input detectInput looks at first: the
// format shows within a few hundred bytes in what AWS writes.
const detectPrefix = 64 << 10

// detectInput tells an input's format from its structure
// (pipeline.DetectFormat), from its first bytes if they show it; else from
// the whole of it, which it then returns.
func detectInput(name string, in *limitio.Reader) (string, []byte, error) {
	head, _ := in.Peek(detectPrefix)
	f, err := pipeline.DetectFormat(head)
	if err == nil {
		return f.String(), nil, nil
	}
	if len(head) < detectPrefix || !errors.Is(err, pipeline.ErrShortPrefix) {
		return "", nil, fmt.Errorf("%s: cannot tell its format (give --format): %w", name, err)
	}
	data, rerr := readPayload(name, "streams-api", in) // the largest whole payload
	if rerr != nil {
		return "", nil, fmt.Errorf("%s: cannot tell its format from its first %d bytes (give --format): %w", name, detectPrefix, err)
	}
	if f, err = pipeline.DetectFormat(data); err != nil {
		return "", nil, fmt.Errorf("%s: cannot tell its format (give --format): %w", name, err)
	}
	return f.String(), data, nil
}

// decodePayload decodes a whole payload of an event or GetRecords format.
func decodePayload(format string, data []byte, opts pipeline.Options) ([]pipeline.Change, error) {
	switch format {
	case "streams":
		return pipeline.DecodeStreamsEvent(data, opts)
	case "kinesis":
		return pipeline.DecodeKinesisEvent(data, opts)
	}
	return pipeline.DecodeStreamsAPIResponse(data, "", "", opts)
}
