//go:build !race

package archive

// raceDetector is true when the tests run under the race detector.
const raceDetector = false
