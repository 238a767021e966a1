//go:build unix

package sentinel_test

import "syscall"

// processCPU is this process's CPU time (user + system), in seconds: the
// client's side of a benchmark.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
