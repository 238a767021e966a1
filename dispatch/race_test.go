//go:build race

package dispatch_test

// raceEnabled: the race detector makes sync.Pool drop items, so allocation
// budgets are not asserted under it.
const raceEnabled = true
