//go:build !unix

package entry

import "errors"

// handOver is supported on Unix only, where Lambda runs.
func handOver(string) error { return errors.New("handing over to another main needs a Unix system") }
