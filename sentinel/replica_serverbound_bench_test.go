package sentinel_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/sentinel"
)

// BenchmarkReplicaReadsServerBound is the read-only workload whose cost
// is on the server, the case replica reads are for: each read is
// SINTERCARD 2 of two sets of EMQ_READ_SET_SIZE members (default 5,000,
// strings, so hash-table encoded; half of them shared), an "how many in
// common" count that costs the server one lookup per member of the
// smaller set (tens to hundreds of µs) and the client one short command
// and an integer reply. The throughput is then bound by the servers, not
// by the client process, so spreading the reads over 2 replicas can
// double it where reading small keys (BenchmarkReplicaReads) cannot on a
// 2-core machine.
//
// One run interleaves the routes, EMQ_READ_ROUNDS rounds (default 2) of
// primary (replica reads off), random and latency, each on its own
// client made before the first round. Each reports reads/s (the gain is
// a route's reads/s over primary's of the same round), each node's
// server CPU per read (INFO cpu deltas, <node>-µs-cpu/op) and each
// node's share of a core over the run (<node>-cores), which show where
// the reads went, and the busiest node's µs-cpu/op. With the servers the
// bottleneck, replicas' reads/s over primary's approaches 2 when the two
// replicas share the reads evenly and each has a core of its own. On a
// shared or 2-core machine the client, the sentinels and the other tests
// take CPU too: read the ratio, not the figures. To measure it quietly:
//
//	go test -run '^$' -bench BenchmarkReplicaReadsServerBound -benchtime 5s ./sentinel/
//
// EMQ_READ_PARALLELISM sets the goroutines per core (default 32).
func BenchmarkReplicaReadsServerBound(b *testing.B) {
	// A long down-after: a loaded primary is no failover.
	set := startSet(b, servertest.SentinelOptions{DownAfter: time.Minute})
	ctx := context.Background()
	size := envInt("EMQ_READ_SET_SIZE", 5000)
	rounds := envInt("EMQ_READ_ROUNDS", 2)
	par := envInt("EMQ_READ_PARALLELISM", 32) // goroutines per core
	routes := []struct {
		name  string
		reads replica.Options
	}{
		{"primary", replica.Options{}},
		{"random", replica.Options{Route: replica.Random}},
		{"latency", replica.Options{Route: replica.Latency}},
	}
	clients := make([]*sentinel.Client, len(routes))
	for i, r := range routes {
		clients[i] = readClient(b, set, r.reads)
	}
	// The two sets: members 0..size-1 and size/2..size*3/2-1.
	prim := clients[0].Client
	for _, s := range []struct {
		key      string
		from, to int
	}{{"sa", 0, size}, {"sb", size / 2, size + size/2}} {
		for lo := s.from; lo < s.to; lo += 1000 {
			args := []any{"SADD", s.key}
			for i := lo; i < min(lo+1000, s.to); i++ {
				args = append(args, "member:"+strconv.Itoa(i))
			}
			if _, err := prim.Do(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := prim.Do(ctx, "WAIT", "2", "5000"); err != nil {
		b.Fatal(err)
	}
	want := int64(size - size/2)
	for round := range rounds {
		for i, r := range routes {
			cl := clients[i]
			b.Run("round"+strconv.Itoa(round+1)+"/"+r.name, func(b *testing.B) {
				if n, err := cl.DoInt(ctx, resp.Command(nil, "SINTERCARD", "2", "sa", "sb")); err != nil || n != want {
					b.Fatalf("SINTERCARD: %d, %v; want %d", n, err, want)
				}
				before := nodesCPU(b, set)
				b.SetParallelism(par)
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					cmd := resp.Command(nil, "SINTERCARD", "2", "sa", "sb")
					for pb.Next() {
						if err := cl.DoFunc(ctx, cmd, func(resp.Value) error { return nil }); err != nil {
							b.Error(err)
							return
						}
					}
				})
				elapsed := time.Since(start)
				b.StopTimer()
				reportNodesCPU(b, set, before, elapsed)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reads/s")
			})
		}
	}
}

// envInt is the positive integer in environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
