//go:build race

package sentinel_test

// raceEnabled scales the heaviest tests down under the race detector,
// and allocation budgets are not measured under it.
const raceEnabled = true
