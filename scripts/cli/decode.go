package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/pipeline/export"
)

func runDecode(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "decode", "FILE...")
	format := fs.String("format", "", "input format: streams, kinesis, streams-api or export (default: told from each file's structure)")
	typeAttr := fs.String("type-attribute", pipeline.DefaultTypeAttribute, "attribute holding the entity type")
	versionAttr := fs.String("version-attribute", pipeline.DefaultVersionAttribute, "attribute holding the item version")
	if err := parse(fs, args); err != nil {
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
	opts := pipeline.Options{TypeAttribute: *typeAttr, VersionAttribute: *versionAttr}
	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	var bad int
	for _, name := range fs.Args() {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := readInput(e, name)
		if err != nil {
			return err
		}
		f := *format
		if f == "" {
			if f, err = detectFormat(name, data); err != nil {
				return err
			}
		}
		changes, err := decodeFile(f, name, data, opts)
		for i := range changes {
			buf := changes[i].AppendJSON(nil)
			out.Write(append(buf, '\n'))
		}
		if err != nil {
			var de *pipeline.DecodeError
			if !errors.As(err, &de) {
				return fmt.Errorf("%s: %w", name, err)
			}
			for _, r := range de.Records {
				if r.File != "" { // an export line's error names its file
					fmt.Fprintln(e.stderr, r)
				} else {
					fmt.Fprintf(e.stderr, "%s: %v\n", name, r)
				}
			}
			bad += len(de.Records)
		}
	}
	if bad > 0 {
		out.Flush()
		fmt.Fprintf(e.stderr, "tributary decode: %d record(s) could not be decoded\n", bad)
		return errFailed
	}
	return nil
}

func readInput(e *env, name string) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: corrupt gzip: %w", name, err)
		}
	}
	return data, nil
}

// detectFormat tells the formats apart by their structure
// (pipeline.DetectFormat), naming the input if it cannot.
func detectFormat(name string, data []byte) (string, error) {
	f, err := pipeline.DetectFormat(data)
	if err != nil {
		return "", fmt.Errorf("%s: cannot tell its format (give --format): %w", name, err)
	}
	return f.String(), nil
}

func decodeFile(format, name string, data []byte, opts pipeline.Options) ([]pipeline.Change, error) {
	switch format {
	case "streams":
		return pipeline.DecodeStreamsEvent(data, opts)
	case "kinesis":
		return pipeline.DecodeKinesisEvent(data, opts)
	case "streams-api":
		return pipeline.DecodeStreamsAPIResponse(data, "", "", opts)
	}
	d := pipeline.NewExportDecoder(opts)
	var (
		out []pipeline.Change
		bad []*pipeline.RecordError
	)
	err := export.ScanLines(context.Background(), bytes.NewReader(data), pipeline.MaxExportLineBytes, func(line []byte, n int) error {
		c, err := d.Decode(line, name, n)
		if err != nil {
			var re *pipeline.RecordError
			if errors.As(err, &re) {
				bad = append(bad, re)
				return nil
			}
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return out, err
	}
	if bad != nil {
		return out, &pipeline.DecodeError{Records: bad}
	}
	return out, nil
}
