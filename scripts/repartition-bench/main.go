// Command bench measures `tributary repartition` against DuckDB and against
// the machine's own limit for the same work, side by side in one run, on a
// generated export in the real layout. scripts/repartition-bench/bench.sh
// drives it; see docs/exports.md for the figures and how to read them.
//
//	bench gen   --dir DIR [--bytes 2e9] [--files 9]   write a synthetic export
//	bench limit --export DIR [--level 6] [--workers N] decompress every data file and compress the same bytes again
//	bench run   --export DIR --tributary BIN [--python PY] [--out DIR] [--rounds 5]
//	                                                   run all three, each in its own process, and print a table
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/sim"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench gen|limit|run [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "limit":
		err = limit(os.Args[2:])
	case "limit-grouped":
		err = limitGrouped(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	dir := fs.String("dir", "", "directory to write the export into")
	size := fs.Float64("bytes", 2e9, "uncompressed size of the export's lines")
	files := fs.Int("files", 9, "data files")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("--dir is required")
	}
	start := time.Now()
	h, err := sim.Workload{Seed: 42, Changes: 60_000, Players: 2000, Workspaces: 200, Users: 2000, Products: 500}.Run()
	if err != nil {
		return err
	}
	templates := h.Table.Items()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := exportgen.Export{ID: exportgen.ExportID(at, 9), Prefix: "exports/bench", Time: at, Files: *files}
	res, err := exportgen.WriteFull(context.Background(), objstore.NewDir(*dir).WithoutSync(), e, exportgen.Synthetic(templates, int64(*size), 9))
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s/%s: %d items, %d data files, %.0f MB uncompressed, %.0f MB gzip (%d templates, %.0fs)\n",
		*dir, res.Dir, res.Items, len(res.DataFiles), float64(res.UncompressedBytes)/1e6, float64(res.CompressedBytes)/1e6, len(templates), time.Since(start).Seconds())
	return nil
}

// dataFiles lists the export's data files (local directory).
func dataFiles(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "AWSDynamoDB", "*", "data", "*.json.gz"))
	if err != nil || len(m) == 0 {
		return nil, fmt.Errorf("no data files under %s/AWSDynamoDB/*/data/", dir)
	}
	sort.Strings(m)
	return m, nil
}

// limit decompresses every data file and compresses the same bytes at the
// same level, workers files at a time: the work a split cannot avoid. It
// prints one JSON object: bytes, seconds (wall), and the sum of per-file
// seconds.
func limit(args []string) error {
	fs := flag.NewFlagSet("limit", flag.ExitOnError)
	dir := fs.String("export", "", "export directory")
	level := fs.Int("level", 6, "gzip level")
	codec := fs.String("compression", "gzip", "gzip or zstd")
	workers := fs.Int("workers", runtime.NumCPU(), "files at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files, err := dataFiles(*dir)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var total int64
	var cpu time.Duration
	next := make(chan string)
	var wg sync.WaitGroup
	errs := make(chan error, len(files))
	start := time.Now()
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for f := range next {
				t0 := time.Now()
				in, err := os.Open(f)
				if err != nil {
					errs <- err
					continue
				}
				zr, err := gzip.NewReader(in)
				if err != nil {
					errs <- errors.Join(err, in.Close())
					continue
				}
				var zw io.WriteCloser
				if *codec == "zstd" {
					zw, _ = zstd.NewWriter(io.Discard, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
				} else {
					zw, _ = gzip.NewWriterLevel(io.Discard, *level)
				}
				n, err := io.CopyBuffer(zw, zr, buf)
				if err := errors.Join(err, zw.Close(), in.Close()); err != nil {
					errs <- err
				}
				mu.Lock()
				total += n
				cpu += time.Since(t0)
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"bytes": total, "seconds": time.Since(start).Seconds(), "fileSeconds": cpu.Seconds(), "workers": *workers,
	})
}

// limitGrouped is the limit for exactly the work a split does: decompress
// the input, and compress the bytes of each output part (as the split
// groups them) at the same level. It times each step on one core and
// prints the sum divided by the cores: the best a split could do with
// perfect parallelism and no cost of its own.
func limitGrouped(args []string) error {
	fs := flag.NewFlagSet("limit-grouped", flag.ExitOnError)
	dir := fs.String("export", "", "export directory")
	out := fs.String("out", "", "a repartition's output directory (gzip)")
	level := fs.Int("level", 5, "gzip level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files, err := dataFiles(*dir)
	if err != nil {
		return err
	}
	var dec, comp time.Duration
	var n int64
	for _, f := range files {
		in, err := os.Open(f)
		if err != nil {
			return err
		}
		t0 := time.Now()
		zr, err := gzip.NewReader(in)
		if err != nil {
			return err
		}
		c, err := io.Copy(io.Discard, zr)
		dec += time.Since(t0)
		if err := errors.Join(err, in.Close()); err != nil {
			return err
		}
		n += c
	}
	parts, _ := filepath.Glob(filepath.Join(*out, "entity=*", "part-*.json.gz"))
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		t0 := time.Now()
		zw, err := gzip.NewWriterLevel(io.Discard, *level)
		if err != nil {
			return err
		}
		if _, err := zw.Write(raw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		comp += time.Since(t0)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"bytes": n, "decompressSeconds": dec.Seconds(), "compressSeconds": comp.Seconds(),
		"seconds": (dec + comp).Seconds() / float64(runtime.NumCPU()), "parts": len(parts),
	})
}

type result struct {
	name    string
	seconds float64
	cpu     float64 // user + system CPU seconds
	peakMB  float64
	outMB   float64
	note    string
	skipped string
}

// measure runs a command and returns its wall time and peak RSS (of the
// process and its children).
func measure(name string, cmd *exec.Cmd) (result, []byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	r := result{name: name, seconds: time.Since(start).Seconds()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peakMB = float64(ru.Maxrss) / 1024 // KiB on Linux
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if err != nil {
		return r, out.Bytes(), fmt.Errorf("%s: %w\n%s", name, err, out.String())
	}
	return r, out.Bytes(), nil
}

// dirSize is the size of the files under dir, in MB.
func dirSize(dir string) (float64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return float64(n) / 1e6, err
}

func run(args []string) (err error) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	dir := fs.String("export", "", "export directory (from bench gen)")
	bin := fs.String("tributary", "", "the tributary binary")
	self := fs.String("self", os.Args[0], "this binary (for the limit)")
	python := fs.String("python", ".tools/bench-venv/bin/python", "a python with duckdb installed")
	script := fs.String("duckdb-script", "scripts/repartition-bench/duckdb_split.py", "the DuckDB split script")
	outRoot := fs.String("out", "", "scratch directory for outputs (default: a temporary one)")
	level := fs.Int("level", 5, "the gzip level tributary uses by default (for the limits)")
	rounds := fs.Int("rounds", 5, "how many times the limit, tributary (gzip) and tributary --skip-md5 run, in turn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files, err := dataFiles(*dir)
	if err != nil {
		return err
	}
	if *outRoot == "" {
		d, err := os.MkdirTemp("", "tributary-bench-")
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(d)) }()
		*outRoot = d
	}
	var inMB float64
	for _, f := range files {
		fi, _ := os.Stat(f)
		inMB += float64(fi.Size()) / 1e6
	}
	// The limit, tributary's default (gzip) and the default with
	// --skip-md5 run in turn, rounds times; each row is the run of median
	// wall time (with the highest peak RSS of its rounds), so that a slow
	// moment of the machine does not decide the ratio between them.
	limitName := fmt.Sprintf("limit: gunzip + gzip -%d of each file, both cores", *level)
	gzOut := filepath.Join(*outRoot, "tributary-gzip")
	var lims, tgs, tss []result
	var limOuts [][]byte
	for range max(*rounds, 1) {
		r, out, err := measure(limitName, exec.Command(*self, "limit", "--export", *dir, "--level", fmt.Sprint(*level)))
		if err != nil {
			return err
		}
		lims, limOuts = append(lims, r), append(limOuts, out)
		if err := os.RemoveAll(gzOut); err != nil {
			return err
		}
		r, _, err = measure("tributary repartition --compression gzip", exec.Command(*bin, "repartition", "--export", *dir, "--out", gzOut, "--compression", "gzip"))
		if err != nil {
			return err
		}
		if r.outMB, err = dirSize(gzOut); err != nil {
			return err
		}
		tgs = append(tgs, r)
		if err := os.RemoveAll(gzOut); err != nil {
			return err
		}
		r, _, err = measure("tributary repartition --compression gzip --skip-md5", exec.Command(*bin, "repartition", "--export", *dir, "--out", gzOut, "--compression", "gzip", "--skip-md5"))
		if err != nil {
			return err
		}
		if r.outMB, err = dirSize(gzOut); err != nil {
			return err
		}
		tss = append(tss, r)
	}
	li := medianRun(lims)
	lim, tg, ts := lims[li], tgs[medianRun(tgs)], tss[medianRun(tss)]
	// The uncompressed size comes from the limit run, which reads it all.
	var l struct {
		Bytes       int64
		Seconds     float64
		FileSeconds float64
	}
	if err := json.Unmarshal(limOuts[li], &l); err != nil {
		return fmt.Errorf("the limit's output: %w", err)
	}
	rawMB := float64(l.Bytes) / 1e6
	ideal := result{name: "limit, ideal: those per-file times summed / cores", seconds: l.FileSeconds / float64(runtime.NumCPU())}
	limZ, _, err := measure("limit: gunzip + zstd, both cores", exec.Command(*self, "limit", "--export", *dir, "--compression", "zstd"))
	if err != nil {
		return err
	}
	results := []result{lim, ideal, limZ}

	results = append(results, tg, ts)
	_, out, err := measure("grouped", exec.Command(*self, "limit-grouped", "--export", *dir, "--out", gzOut, "--level", fmt.Sprint(*level)))
	if err != nil {
		return err
	}
	var g struct{ Seconds float64 }
	if err := json.Unmarshal(out, &g); err != nil {
		return fmt.Errorf("the grouped limit's output: %w", err)
	}
	results = append(results, result{name: fmt.Sprintf("limit, grouped: gunzip input + gzip -%d of each output part, summed / cores", *level), seconds: g.Seconds})
	zo := filepath.Join(*outRoot, "tributary-zstd")
	if err := errors.Join(os.RemoveAll(gzOut), os.RemoveAll(zo)); err != nil {
		return err
	}
	tz, _, err := measure("tributary repartition --compression zstd", exec.Command(*bin, "repartition", "--export", *dir, "--out", zo, "--compression", "zstd"))
	if err != nil {
		return err
	}
	if tz.outMB, err = dirSize(zo); err != nil {
		return err
	}
	results = append(results, tz)
	if err := os.RemoveAll(zo); err != nil {
		return err
	}

	if _, err := os.Stat(*python); err != nil {
		results = append(results, result{name: "duckdb", skipped: fmt.Sprintf("skipped: %s not found; install DuckDB with scripts/repartition-bench/install-duckdb.sh", *python)})
	} else {
		o := filepath.Join(*outRoot, "duckdb")
		if err := os.RemoveAll(o); err != nil {
			return err
		}
		r, out, err := measure("duckdb COPY … PARTITION_BY, gzip", exec.Command(*python, *script, "--out", o, "--threads", fmt.Sprint(runtime.NumCPU()), strings.Join(files, ",")))
		if err != nil {
			return err
		}
		if r.outMB, err = dirSize(o); err != nil {
			return err
		}
		r.note = strings.TrimSpace(string(out))
		results = append(results, r)
		if err := os.RemoveAll(o); err != nil {
			return err
		}
	}

	fmt.Printf("input: %d data files, %.0f MB gzip, %.0f MB uncompressed; %d cores (%s/%s), %s\n",
		len(files), inMB, rawMB, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Printf("the limit, tributary (gzip) and tributary --skip-md5 ran in turn %d times: wall s %s; %s; and %s; their rows are the median runs\n\n",
		len(lims), walls(lims), walls(tgs), walls(tss))
	fmt.Println("| run | wall s | MB/s (uncompressed in) | CPU s | MB per CPU-second | peak RSS MB | output MB |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.skipped != "" {
			fmt.Printf("| %s | %s | | | | | |\n", r.name, r.skipped)
			continue
		}
		cpu, perCPU := "–", "–"
		if r.cpu > 0 {
			cpu, perCPU = fmt.Sprintf("%.1f", r.cpu), fmt.Sprintf("%.0f", rawMB/r.cpu)
		}
		peak := fmt.Sprintf("%.0f", r.peakMB)
		if r.peakMB == 0 {
			peak = "–"
		}
		outMB := fmt.Sprintf("%.0f", r.outMB)
		if r.outMB == 0 {
			outMB = "–"
		}
		fmt.Printf("| %s | %.1f | %.0f | %s | %s | %s | %s |\n", r.name, r.seconds, rawMB/r.seconds, cpu, perCPU, peak, outMB)
	}
	find := func(prefix string) result {
		for _, r := range results {
			if strings.HasPrefix(r.name, prefix) && r.skipped == "" {
				return r
			}
		}
		return result{}
	}
	dd, gr := find("duckdb"), find("limit, grouped")
	fmt.Printf("\ntributary (gzip) = %.0f%% of the measured limit, %.0f%% of the ideal limit, %.0f%% of the grouped limit",
		100*lim.seconds/tg.seconds, 100*ideal.seconds/tg.seconds, 100*gr.seconds/tg.seconds)
	if dd.seconds > 0 {
		fmt.Printf(", %.1f× DuckDB (%.1f× by CPU time)", dd.seconds/tg.seconds, dd.cpu/tg.cpu)
	}
	fmt.Printf("\ntributary --skip-md5 = %.0f%% of the measured limit", 100*lim.seconds/ts.seconds)
	fmt.Printf("\nby CPU time: tributary (gzip) needs %.0f%% more CPU than the grouped limit's %.1f CPU-seconds\n", 100*(tg.cpu/(gr.seconds*float64(runtime.NumCPU()))-1), gr.seconds*float64(runtime.NumCPU()))
	if l, _ := os.ReadFile("/proc/loadavg"); len(l) > 0 {
		fmt.Printf("load average at the end: %s", l)
	}
	return nil
}

// medianRun returns the index of the run of median wall time, and gives it
// the highest peak RSS of all the runs.
func medianRun(rs []result) int {
	idx := make([]int, len(rs))
	peak := 0.0
	for i := range rs {
		idx[i] = i
		peak = max(peak, rs[i].peakMB)
	}
	sort.Slice(idx, func(a, b int) bool { return rs[idx[a]].seconds < rs[idx[b]].seconds })
	m := idx[len(idx)/2]
	rs[m].peakMB = peak
	return m
}

func walls(rs []result) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%.2f", r.seconds))
	}
	return strings.Join(parts, ", ")
}
