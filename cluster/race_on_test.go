//go:build race

package cluster_test

// raceEnabled: allocation budgets are not measured under the race
// detector.
const raceEnabled = true
