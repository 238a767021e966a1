//go:build !unix

package sentinel_test

// processCPU is 0 where getrusage is not: the client's CPU goes
// unreported.
func processCPU() float64 { return 0 }
