//go:build race

package archive

// raceDetector is true when the tests run under the race detector, which
// makes the simulation about ten times slower: it then runs fewer seeds.
const raceDetector = true
