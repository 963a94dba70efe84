//go:build unix

package entry

import (
	"os"
	"syscall"
)

// handOver replaces the process with the executable at path, with the same
// environment less MainEnv. It returns only if that fails.
func handOver(path string) error {
	if err := os.Unsetenv(MainEnv); err != nil {
		return err
	}
	return syscall.Exec(path, []string{path}, os.Environ())
}
