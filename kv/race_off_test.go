//go:build !race

package kv_test

// raceEnabled skips the allocation budgets, which the race detector
// breaks (sync.Pool drops items).
const raceEnabled = false
