package cli

// Real processes: the test binary runs the command line in a child process
// when TRIBUTARY_CLI_CHILD is set, so that a test can run two commands at
// once, or kill one with SIGKILL in the middle of its writes, as a user's
// terminal or the operating system would.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/infra/objstore"
	"github.com/tributary/tributary/internal/capabilities/export/reimport"
	"github.com/tributary/tributary/internal/capabilities/export/repartition"
	"github.com/tributary/tributary/internal/exportgen"
)

const envChild = "TRIBUTARY_CLI_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "1":
		os.Exit(Run(context.Background(), stockOptions, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	case "main":
		Main(signalOptions) // exits
	}
	os.Exit(m.Run())
}

// child starts the command line in a process of its own.
func child(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			// The test is over: the child goes whatever it was doing, and
			// neither a kill that finds it gone nor its status says more.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out, &errb
}

// bigExport writes an export large enough that a repartition of it takes a
// few seconds on this machine, and returns its directory.
func bigExport(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	e, _ := exportgen.GeneratedIn(t, root, 21, 5000, 96<<20, 4)
	return filepath.Join(root, filepath.FromSlash(e.Dir))
}

// waitFor polls until cond holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// temporaries lists the temporary files under dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	var tmp []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // renamed or removed by the run while the walk went by
		case err != nil:
			return err
		case !e.IsDir() && strings.HasPrefix(e.Name(), objstore.TempPrefix):
			tmp = append(tmp, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tmp
}

// TestRepartitionKilled kills a repartition with SIGKILL in the middle of
// its writes: it leaves temporary files and its claim. The rerun takes the
// claim over (its process is gone), removes the temporary files, resumes,
// and ends with the output a clean run writes; it says so, and does not
// call the output already complete.
func TestRepartitionKilled(t *testing.T) {
	exp := bigExport(t)
	out := t.TempDir()
	cmd, _, _ := child(t, "repartition", "--export", exp, "--out", out, "--no-sync", "--workers", "2", "--max-part-mb", "8")
	waitFor(t, "temporary files in the output", func() bool { return len(temporaries(t, out)) >= 2 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the run ended before it was killed: the test kills too late")
	}
	left := temporaries(t, out)
	if len(left) == 0 {
		t.Fatal("the killed run left no temporary file: the test kills too late")
	}
	var claim struct{ Owner objstore.Owner }
	if b, err := os.ReadFile(filepath.Join(out, repartition.ClaimKey)); err != nil || json.Unmarshal(b, &claim) != nil || claim.Owner.PID != cmd.Process.Pid {
		t.Fatalf("the killed run's claim: %+v, %v", claim, err)
	}
	if _, err := os.Stat(filepath.Join(out, repartition.SummaryKey)); err == nil {
		t.Fatal("the killed run left a summary")
	}

	code, stdout, stderr := runCLI(t, "repartition", "--export", exp, "--out", out, "--no-sync", "--workers", "2", "--max-part-mb", "8")
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if tmp := temporaries(t, out); len(tmp) > 0 {
		t.Errorf("the rerun left %d temporary files, e.g. %s", len(tmp), tmp[0])
	}
	for _, want := range []string{"took over the output from run " + claim.Owner.ID, "process " + strconv.Itoa(cmd.Process.Pid), "removed ", "temporary"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("rerun output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "already complete") {
		t.Errorf("the rerun calls its own work already complete:\n%s", stdout)
	}
	clean := t.TempDir()
	if code, _, stderr := runCLI(t, "repartition", "--export", exp, "--out", clean, "--no-sync", "--workers", "2", "--max-part-mb", "8"); code != 0 {
		t.Fatalf("clean run: %s", stderr)
	}
	sameOutput(t, clean, out)
}

// sameOutput checks that two outputs hold the same entities, part for part
// (the manifests' checksum over their parts).
func sameOutput(t *testing.T, want, got string) {
	t.Helper()
	ctx := context.Background()
	w, err := reimport.OpenOutput(ctx, objstore.NewDir(want))
	if err != nil {
		t.Fatal(err)
	}
	g, err := reimport.OpenOutput(ctx, objstore.NewDir(got))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Entities) != len(w.Entities) {
		t.Fatalf("%d entities, want %d", len(g.Entities), len(w.Entities))
	}
	for i, m := range w.Entities {
		if g.Entities[i].Segment != m.Segment || g.Entities[i].PartsSHA256 != m.PartsSHA256 {
			t.Errorf("%s: the parts differ from a clean run's", m.Segment)
		}
	}
	exportgen.OutputLines(t, objstore.NewDir(got)) // and every part reads back
}

// TestRepartitionResumedSummary: a rerun that finds every data file done
// and writes the summary itself says it resumed, not that the output was
// already complete; the run after it does say so.
func TestRepartitionResumedSummary(t *testing.T) {
	out := t.TempDir()
	if code, _, stderr := runCLI(t, "repartition", "--export", fullExport, "--out", out, "--no-sync"); code != 0 {
		t.Fatal(stderr)
	}
	// A run stopped after its last record, before its summary.
	if err := os.Remove(filepath.Join(out, repartition.SummaryKey)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "repartition", "--export", fullExport, "--out", out, "--no-sync")
	if code != 0 || strings.Contains(stdout, "already complete") || !strings.Contains(stdout, "resumed: 5 of 5 data files were done by an earlier run") {
		t.Errorf("rerun: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "repartition", "--export", fullExport, "--out", out, "--no-sync")
	if code != 0 || !strings.Contains(stdout, "already complete") {
		t.Errorf("third run: exit %d, stdout:\n%s", code, stdout)
	}
}

// TestRepartitionConcurrentProcesses runs two repartitions into one output
// at once, in two processes, the second with another --max-part-mb (the
// case reported): the second is refused, naming the first, which ends with
// an output entirely its own.
func TestRepartitionConcurrentProcesses(t *testing.T) {
	exp := bigExport(t)
	out := t.TempDir()
	first, _, firstErr := child(t, "repartition", "--export", exp, "--out", out, "--no-sync", "--workers", "2", "--max-part-mb", "16")
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	waitFor(t, "the first run's claim", func() bool {
		_, err := os.Stat(filepath.Join(out, repartition.ClaimKey))
		return err == nil
	})
	code, stdout, stderr := runCLI(t, "repartition", "--export", exp, "--out", out, "--no-sync", "--workers", "2", "--max-part-mb", "4")
	select {
	case err := <-exited:
		t.Fatalf("the first run ended (%v) before the second was refused: make the export larger", err)
	default:
	}
	if code != 1 || !strings.Contains(stderr, "is held by run") || !strings.Contains(stderr, "process "+strconv.Itoa(first.Process.Pid)) ||
		!strings.Contains(stderr, "rerun with --takeover") {
		t.Errorf("second run: exit %d\n%s\n%s; want it refused, naming the first and the command's --takeover", code, stdout, stderr)
	}
	if err := <-exited; err != nil {
		t.Fatalf("first run: %v\n%s", err, firstErr)
	}
	o, err := reimport.OpenOutput(context.Background(), objstore.NewDir(out))
	if err != nil {
		t.Fatal(err)
	}
	clean := t.TempDir()
	if code, _, stderr := runCLI(t, "repartition", "--export", exp, "--out", clean, "--no-sync", "--workers", "2", "--max-part-mb", "16"); code != 0 {
		t.Fatalf("clean run: %s", stderr)
	}
	c, _ := reimport.OpenOutput(context.Background(), objstore.NewDir(clean))
	if o.Summary.Fingerprint != c.Summary.Fingerprint || o.Summary.Totals.OutputItems != c.Summary.Totals.OutputItems {
		t.Errorf("the output is of fingerprint %s with %d items; the first run's settings give %s and %d", o.Summary.Fingerprint, o.Summary.Totals.OutputItems, c.Summary.Fingerprint, c.Summary.Totals.OutputItems)
	}
	sameOutput(t, clean, out)
}
