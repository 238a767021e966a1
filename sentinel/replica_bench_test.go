package sentinel_test

import (
	"context"
	"os"
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
			o := sentinel.Options{MasterName: set.MasterName, Sentinels: set.SentinelAddrs(), Reads: mode.reads}
			cl, err := sentinel.NewClient(ctx, o)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			if mode.reads.On() && len(cl.Replicas()) != 2 {
				b.Fatalf("replicas taking reads: %v", cl.Replicas())
			}
			for i := range 1000 {
				if _, err := cl.Client.Do(ctx, "SET", "bk"+strconv.Itoa(i), strings.Repeat("x", 64)); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := cl.Client.Do(ctx, "WAIT", "2", "5000"); err != nil {
				b.Fatal(err)
			}
			before := make([]float64, len(set.Data))
			for i, d := range set.Data {
				before[i] = serverCPU(b, d)
			}
			par := 32 // 64 goroutines on 2 cores
			if v, err := strconv.Atoi(os.Getenv("EMQ_READ_PARALLELISM")); err == nil && v > 0 {
				par = v // deeper pipelines per connection: a node's capacity, not the client's
			}
			b.SetParallelism(par)
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
			busiest := 0.0
			for i, d := range set.Data {
				us := (serverCPU(b, d) - before[i]) * 1e6 / float64(b.N)
				busiest = max(busiest, us)
				name := "primary"
				if i > 0 {
					name = "replica" + strconv.Itoa(i)
				}
				b.ReportMetric(us, name+"-µs-cpu/op")
			}
			b.ReportMetric(busiest, "busiest-µs-cpu/op")
		})
	}
}
