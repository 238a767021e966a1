package cluster

import (
	"context"
	"strconv"
	"syscall"
	"testing"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// BenchmarkPlan measures routing alone: finding every command's slot in a
// 100-command EVALSHA batch, with no network. Raw: a submission of raw
// resp.Cmds, whose facts Send reads from the bytes (wire.Known, as the old
// router parsed them); facts: one whose encoder gave its facts (a typed
// pipeline, dispatch), which the router reads as they are.
func BenchmarkPlan(b *testing.B) {
	cl := &Client{} // EVALSHA's key specs: the generated table's
	var cmds resp.Cmds
	var facts wire.Facts
	for i := range 100 {
		args := []string{"EVALSHA", "0123456789012345678901234567890123456789", "2",
			"emq:{bench}:job:JOB" + strconv.Itoa(i), "emq:{bench}:pending", "JOB" + strconv.Itoa(i),
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
		facts.Strings(&cmds, args)
	}
	raw, _ := wire.FromCmds(&cmds)
	withFacts, err := facts.Sync(&cmds)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		w    wire.Cmds
	}{{"raw", raw}, {"facts", withFacts}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				w, known, err := wire.Known(bc.w) // as Send does
				if err != nil {
					b.Fatal(err)
				}
				s := getSub(cl, nil, context.Background(), w)
				if err := s.plan(); err != nil {
					b.Fatal(err)
				}
				s.release()
				wire.Release(known)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/cmd")
			// The process's CPU time too: on a loaded machine it varies
			// less than the wall time.
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/100, "cpu-ns/cmd")
		})
	}
}

// cpuTime is the process's CPU time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
