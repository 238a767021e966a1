//go:build race

package cmdbuf

// raceEnabled skips the allocation budgets, which the race detector
// breaks (sync.Pool drops items).
const raceEnabled = true
