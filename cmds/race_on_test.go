//go:build race

package cmds

// raceEnabled skips the allocation budgets, which the race detector
// breaks.
const raceEnabled = true
