//go:build !race

package pipeline_test

// raceEnabled scales the heaviest tests down under the race detector,
// which slows this client's hot path about tenfold.
const raceEnabled = false
