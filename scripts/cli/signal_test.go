package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// signalOptions are the stock binary's with a command that stands for work
// that does not return when its context is cancelled: it says when it
// runs and when its context is done, then goes on for an hour.
var signalOptions = func() Options {
	o := stockOptions
	o.Commands = append(o.Commands[:len(o.Commands):len(o.Commands)], Command{
		Name:    "stuck",
		Summary: "run until killed (a test's)",
		Run: func(ctx context.Context, env *Env, _ []string) error {
			fmt.Fprintln(env.Stdout, "running")
			<-ctx.Done()
			fmt.Fprintln(env.Stdout, "cancelled")
			time.Sleep(time.Hour)
			return nil
		},
	})
	return o
}()

// TestSignals runs Main in a process of its own and interrupts a command
// that does not stop: the first SIGINT (or SIGTERM) cancels its context,
// the second ends the process at once, by the signal.
func TestSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "stuck")
			cmd.Env = append(os.Environ(), envChild+"=main")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			expect := func(want string) {
				t.Helper()
				select {
				case got := <-lines:
					if got != want {
						t.Fatalf("the command printed %q, want %q", got, want)
					}
				case <-time.After(time.Minute):
					t.Fatalf("the command never printed %q", want)
				}
			}
			expect("running")
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			expect("cancelled")
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var exit *exec.ExitError
				ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if !errors.As(err, &exit) || !ws.Signaled() || ws.Signal() != sig {
					t.Errorf("the process ended with %v, not by the second %v", err, sig)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the process is still running 10 s after the second %v", sig)
			}
		})
	}
}
