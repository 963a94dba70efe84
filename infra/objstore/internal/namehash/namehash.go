// Package namehash holds the hash objstore.FitName keeps of a name that
// does not fit, which tests of name collisions replace
// (objstoretest.SetNameHash): no one can make two names collide under
// SHA-256.
package namehash

import (
	"crypto/sha256"
	"sync/atomic"
)

var hash atomic.Pointer[func(string) [sha256.Size]byte]

// Sum is the hash of name: SHA-256, or the one Set put in its place.
func Sum(name string) [sha256.Size]byte {
	if h := hash.Load(); h != nil {
		return (*h)(name)
	}
	return sha256.Sum256([]byte(name))
}

// Set makes Sum use h until the returned function is called.
func Set(h func(name string) [sha256.Size]byte) (restore func()) {
	old := hash.Swap(&h)
	return func() { hash.Store(old) }
}
