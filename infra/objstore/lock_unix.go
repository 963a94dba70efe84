//go:build unix

package objstore

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes an exclusive flock(2) of a directory and returns its
// release.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close() // the lock's error is the one to return
		return nil, err
	}
	return func() {
		// Closing the descriptor releases the lock too, and the caller's
		// work under it is done: neither error changes its result.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// alive reports whether a process of this machine is running: kill(pid, 0)
// succeeds, or fails only for want of permission.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
