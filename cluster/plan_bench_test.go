package cluster

import (
	"context"
	"strconv"
	"syscall"
	"testing"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// BenchmarkPlan measures routing alone: parsing a 100-command EVALSHA
// batch and finding every command's slot, with no network.
func BenchmarkPlan(b *testing.B) {
	cl := &Client{} // EVALSHA's key specs: the generated table's
	var cmds resp.Cmds
	for i := range 100 {
		cmds.Add("EVALSHA", "0123456789012345678901234567890123456789", "2",
			"emq:{bench}:job:JOB"+strconv.Itoa(i), "emq:{bench}:pending", "JOB"+strconv.Itoa(i),
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	}
	w, _ := wire.FromCmds(&cmds)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		s := getSub(cl, nil, context.Background(), w)
		if err := s.plan(); err != nil {
			b.Fatal(err)
		}
		s.release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/cmd")
	// The process's CPU time too: on a loaded machine it varies less than
	// the wall time.
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/100, "cpu-ns/cmd")
}

// cpuTime is the process's CPU time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
