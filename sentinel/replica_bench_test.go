package sentinel_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/sentinel"
)

// serverCPU is a node's used_cpu_sys + used_cpu_user (INFO cpu), in
// seconds.
func serverCPU(b *testing.B, s *servertest.Server) float64 {
	b.Helper()
	info, err := s.Do("INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for line := range strings.Lines(info) {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), f); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				sum += x
			}
		}
	}
	return sum
}

// readClient is a Client of set reading as reads says, with both
// replicas taking reads when reads is on; closed at cleanup.
func readClient(b *testing.B, set *servertest.SentinelSet, reads replica.Options) *sentinel.Client {
	o := sentinel.Options{MasterName: set.MasterName, Sentinels: set.SentinelAddrs(), Reads: reads}
	cl, err := sentinel.NewClient(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	if reads.On() && len(cl.Replicas()) != 2 {
		b.Fatalf("%v: replicas taking reads: %v", reads.Route, cl.Replicas())
	}
	return cl
}

// nodesCPU is serverCPU of every data node of set, the primary first.
func nodesCPU(b *testing.B, set *servertest.SentinelSet) []float64 {
	out := make([]float64, len(set.Data))
	for i, d := range set.Data {
		out[i] = serverCPU(b, d)
	}
	return out
}

// reportNodesCPU reports each data node's server CPU per op since before
// (<node>-µs-cpu/op) and the busiest node's, and, when elapsed is not 0,
// each node's share of a core over it (<node>-cores).
func reportNodesCPU(b *testing.B, set *servertest.SentinelSet, before []float64, elapsed time.Duration) {
	busiest := 0.0
	for i, cpu := range nodesCPU(b, set) {
		cpu -= before[i]
		us := cpu * 1e6 / float64(b.N)
		busiest = max(busiest, us)
		name := "primary"
		if i > 0 {
			name = "replica" + strconv.Itoa(i)
		}
		b.ReportMetric(us, name+"-µs-cpu/op")
		if elapsed > 0 {
			b.ReportMetric(cpu/elapsed.Seconds(), name+"-cores")
		}
	}
	b.ReportMetric(busiest, "busiest-µs-cpu/op")
}

// BenchmarkReplicaReads runs a read-only workload (GET of 1,000 keys
// from 64 goroutines) against a primary and 2 replicas under Sentinel:
// all reads to the primary (replica reads off), then spread over the
// replicas (Random). Besides ns/op it reports each node's server CPU per
// read (µs-cpu/op, INFO cpu), which shows where the reads went and what
// one node's read capacity is: with reads spread, the busiest node's CPU
// per read is what bounds throughput, so 1/that over the primary's
// µs-cpu/op with reads off is the read capacity gained (2 on an idle
// machine with a client that keeps up). Not for timing on a loaded
// machine:
//
//	go test -run '^$' -bench BenchmarkReplicaReads -benchtime 200000x ./sentinel/
func BenchmarkReplicaReads(b *testing.B) {
	// A long down-after: a loaded primary is no failover.
	set := startSet(b, servertest.SentinelOptions{DownAfter: time.Minute})
	ctx := context.Background()
	for _, mode := range []struct {
		name  string
		reads replica.Options
	}{
		{"primary", replica.Options{}},
		{"replicas", replica.Options{Route: replica.Random}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			cl := readClient(b, set, mode.reads)
			for i := range 1000 {
				if _, err := cl.Client.Do(ctx, "SET", "bk"+strconv.Itoa(i), strings.Repeat("x", 64)); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := cl.Client.Do(ctx, "WAIT", "2", "5000"); err != nil {
				b.Fatal(err)
			}
			before := nodesCPU(b, set)
			// 32: 64 goroutines on 2 cores; more: deeper pipelines per
			// connection, a node's capacity rather than the client's.
			b.SetParallelism(envInt("EMQ_READ_PARALLELISM", 32))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var buf [64]byte
				i := 0
				for pb.Next() {
					cmd := resp.Command(buf[:0], "GET", "bk"+strconv.Itoa(i%1000))
					if err := cl.DoFunc(ctx, cmd, func(resp.Value) error { return nil }); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
			b.StopTimer()
			reportNodesCPU(b, set, before, 0)
		})
	}
}
