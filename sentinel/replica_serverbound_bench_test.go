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

// BenchmarkReplicaReadsServerBound is a read-only workload whose cost
// is on the server, the case users send reads to replicas for: each read
// is SINTERCARD 2 sa sb, the size of the intersection of two sets of
// EMQ_READ_SET_SIZE members (default 5,000 strings, hash-table encoded,
// half of them in both): a "how many in common" count that costs the
// server a lookup per member of the smaller set (270-330 µs of CPU
// measured here; 4.6 ms at 20,000, the sets out of the caches) and the
// client one short command and an integer reply (15-40 µs). Its
// throughput is bound by the server that runs the reads, not by the
// client process, so spreading them over 2 replicas can nearly double it,
// where reading small keys (BenchmarkReplicaReads) leaves the client the
// bottleneck on a 2-core machine.
//
// One run interleaves the routes, EMQ_READ_ROUNDS rounds (default 2) of
// primary (replica reads off), random and latency, each on its own
// client made before the first round, 3 sentinels and down-after 1 min
// (no failover mid-run). Each reports:
//   - reads/s: a route's over primary's of the same round is the gain;
//   - <node>-µs-cpu/op and <node>-cores: each node's server CPU per read
//     (INFO cpu deltas) and its share of a core over the run, which show
//     where the reads went;
//   - busiest-µs-cpu/op: primary's over a route's is the read capacity
//     gained by the busiest node's CPU, whatever else the machine runs;
//   - client-µs-cpu/op: the benchmark process's own CPU per read (the
//     client, and the little the test runs), a small part of a node's.
//
// The ≥ 1.8× target needs each replica to get close to a core while the
// client, sentinels and primary take the rest: on a 2-core machine that
// is at the limit, and on a shared one the figures mean little (read the
// ratios of one run). EMQ_READ_PARALLELISM sets the goroutines per core
// (default 32). To measure it quietly:
//
//	go test -run '^$' -bench BenchmarkReplicaReadsServerBound -benchtime 5s ./sentinel/
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
				before, client := nodesCPU(b, set), processCPU()
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
				client = processCPU() - client
				reportNodesCPU(b, set, before, elapsed)
				b.ReportMetric(client*1e6/float64(b.N), "client-µs-cpu/op")
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
