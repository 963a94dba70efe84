// Command fitcollide finds two entity types that the 64-bit shortened names
// of earlier versions of objstore.FitName gave one name: "_sha256-" and the
// first 16 hex digits of the SHA-256 of the (escaped) type. It rebuilds the
// pair in infra/objstore/testdata/fitname-collision-64.json, which the tests
// use to show that the old names collided and the present ones do not.
//
// It is a parallel collision search with distinguished points (van Oorschot
// and Wiener): the names are a fixed prefix and 16 hex digits of a 64-bit x,
// the step is x ← the first 8 bytes of SHA-256(prefix + hex(x)), and every
// chain runs until x has its top -bits bits zero. Two chains that end on one
// distinguished point meet, and walking them again from their starts finds
// two names with one hash. About 1.25·2³² steps are expected, each one SHA-256
// block after a precomputed prefix state: a few minutes on two cores.
//
// Rebuild the fixture with
//
//	go run ./internal/cmd/fitcollide > infra/objstore/testdata/fitname-collision-64.json
//
// The names are letters and digits only, which neither the archive's nor the
// repartition's escaping changes, so one pair collides in both.
package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	var (
		prefix  = flag.String("prefix", strings.Repeat("EntityType", 28), "the fixed part of both names; the names are it and 16 hex digits")
		bits    = flag.Int("bits", 14, "a distinguished point has this many leading zero bits")
		workers = flag.Int("workers", runtime.GOMAXPROCS(0), "chains walked at once")
	)
	flag.Parse()
	if err := run(*prefix, *bits, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "fitcollide:", err)
		os.Exit(1)
	}
}

// stepper computes the step function from a saved state of the hash after
// the prefix's whole blocks, so that a step costs one or two blocks.
type stepper struct {
	h     hash.Hash
	state []byte // the hash's state after the prefix's whole blocks
	tail  []byte // the rest of the prefix, then room for the 16 hex digits
	n     int    // len(tail) without the digits
	sum   []byte
}

func newStepper(prefix string) (*stepper, error) {
	whole := len(prefix) / sha256.BlockSize * sha256.BlockSize
	h := sha256.New()
	h.Write([]byte(prefix[:whole]))
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("saving the hash state: %w", err)
	}
	rest := prefix[whole:]
	return &stepper{h: h, state: state, tail: append([]byte(rest), make([]byte, 16)...), n: len(rest), sum: make([]byte, 0, sha256.Size)}, nil
}

func (s *stepper) step(x uint64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], x)
	hex.Encode(s.tail[s.n:], b[:])
	// The state was made by this hash: restoring it cannot fail.
	_ = s.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.state)
	s.h.Write(s.tail)
	s.sum = s.h.Sum(s.sum[:0])
	return binary.BigEndian.Uint64(s.sum[:8])
}

func name(prefix string, x uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], x)
	return prefix + hex.EncodeToString(b[:])
}

type chain struct {
	start  uint64
	length uint64
}

// Result is what the command prints: the two names, their one shortened
// name under the 64-bit scheme, and how it was found.
type Result struct {
	Source      string   `json:"source"`
	Rebuild     string   `json:"rebuild"`
	Names       []string `json:"names"`
	OldFitName  string   `json:"oldFitName"`
	Steps       uint64   `json:"steps"`
	Elapsed     string   `json:"elapsed"`
	Workers     int      `json:"workers"`
	Distinguish int      `json:"distinguishedBits"`
}

func run(prefix string, bits, workers int) error {
	if bits < 1 || bits > 30 || workers < 1 {
		return fmt.Errorf("want 1 <= -bits <= 30 and -workers >= 1")
	}
	mask := ^uint64(0) << (64 - bits)
	maxLen := uint64(40) << bits // a chain this long is in a cycle without a distinguished point
	var (
		mu     sync.Mutex
		points = make(map[uint64]chain)
		found  *Result
		steps  atomic.Uint64
		wg     sync.WaitGroup
		begin  = time.Now()
		done   = make(chan struct{})
		once   sync.Once
	)
	for w := 0; w < workers; w++ {
		s, err := newStepper(prefix)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rb [8]byte
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := rand.Read(rb[:]); err != nil {
					panic(err) // crypto/rand does not fail on Linux
				}
				start := binary.BigEndian.Uint64(rb[:])
				x, n := start, uint64(0)
				for x&mask != 0 && n < maxLen {
					x = s.step(x)
					n++
				}
				steps.Add(n)
				if x&mask != 0 {
					continue
				}
				mu.Lock()
				other, seen := points[x]
				if !seen {
					points[x] = chain{start, n}
				}
				mu.Unlock()
				if !seen {
					continue
				}
				if a, b, ok := meet(s, chain{start, n}, other); ok {
					once.Do(func() {
						h := s.step(a)
						found = &Result{
							Source:      "internal/cmd/fitcollide: a parallel distinguished-point collision search over the first 64 bits of SHA-256",
							Rebuild:     "go run ./internal/cmd/fitcollide > infra/objstore/testdata/fitname-collision-64.json",
							Names:       []string{name(prefix, a), name(prefix, b)},
							OldFitName:  fmt.Sprintf("_sha256-%016x", h),
							Workers:     workers,
							Distinguish: bits,
						}
						close(done)
					})
					return
				}
			}
		}()
	}
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	go func() {
		for range tick.C {
			mu.Lock()
			n := len(points)
			mu.Unlock()
			fmt.Fprintf(os.Stderr, "fitcollide: %d steps (2^%.2f), %d distinguished points, %s\n",
				steps.Load(), math.Log2(float64(steps.Load())), n, time.Since(begin).Round(time.Second))
		}
	}()
	wg.Wait()
	found.Steps = steps.Load()
	found.Elapsed = time.Since(begin).Round(time.Second).String()
	out, err := json.MarshalIndent(found, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s\n", out)
	return err
}

// meet walks two chains that end on one distinguished point from their
// starts and returns the two different points whose steps are equal; false
// when one chain's start lies on the other (they share every point).
func meet(s *stepper, c1, c2 chain) (uint64, uint64, bool) {
	a, b := c1.start, c2.start
	for n := c1.length; n > c2.length; n-- {
		a = s.step(a)
	}
	for n := c2.length; n > c1.length; n-- {
		b = s.step(b)
	}
	if a == b {
		return 0, 0, false
	}
	for {
		na, nb := s.step(a), s.step(b)
		if na == nb {
			return a, b, true
		}
		a, b = na, nb
	}
}
