package cluster_test

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/servertest"
)

// The routing overhead: pipelined EVALSHA enqueue at depth 100 through
// cluster.Client on a 1-primary cluster against conn.Client on a
// standalone server, same binary, same run. One op is one enqueue.
// cpu-s/Mop is the client process's CPU (getrusage) per million ops.
//
//	go test -run '^$' -bench 'Routing' -count 6 ./cluster/ | tee new.txt; benchstat new.txt

var (
	benchOnce    sync.Once
	benchAlone   *servertest.Server
	benchOneNode *servertest.Cluster
	benchErr     error
)

func benchServers(b *testing.B) {
	benchOnce.Do(func() {
		if benchAlone, benchErr = servertest.Start(servertest.Options{}); benchErr != nil {
			return
		}
		benchOneNode, benchErr = servertest.StartCluster(1, 0, servertest.Options{})
	})
	if benchErr != nil {
		b.Skip(benchErr)
	}
}

const enqueueLua = `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1`

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchEnqueue(b *testing.B, s conn.Sender, flush func()) {
	ctx := context.Background()
	x := dispatch.NewScripted(s)
	sc := dispatch.NewScript("enqueue", enqueueLua)
	var batch dispatch.Batch
	var a dispatch.Args
	payload := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	const depth = 100
	n := 0
	var key []byte
	run := func(k int) {
		batch.Reset()
		for range k {
			key = strconv.AppendInt(append(key[:0], "emq:{bench}:job:JOB"...), int64(n), 10)
			n++
			a.Reset()
			a.KeyBytes(key)
			a.Key("emq:{bench}:pending")
			a.ArgBytes(key[len("emq:{bench}:job:"):])
			a.ArgBytes(payload)
			batch.Add(sc, &a)
		}
		if err := x.EvalBatch(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	run(depth) // load the script
	flush()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNow()
	for i := 0; i < b.N; i += depth {
		run(min(depth, b.N-i))
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuNow()-cpu)/1e9/float64(b.N)*1e6, "cpu-s/Mop")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	flush()
}

func BenchmarkRouting(b *testing.B) {
	benchServers(b)
	b.Run("standalone-conn.Client", func(b *testing.B) {
		cl, err := conn.NewClient(context.Background(), conn.Options{Addr: benchAlone.Addr})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		benchEnqueue(b, cl, func() { benchAlone.Do("FLUSHALL", "ASYNC") })
	})
	b.Run("cluster1-cluster.Client", func(b *testing.B) {
		cl, err := cluster.NewClient(context.Background(), cluster.Options{Seeds: []string{benchOneNode.Primaries[0].Addr}})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		benchEnqueue(b, cl, func() { benchOneNode.Primaries[0].Do("FLUSHALL", "ASYNC") })
	})
}
