package readme_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/kv"
)

// oneCall is the README's "The one call": connect by URL, build any
// command with cmds and run it in one line with its typed result; Do for
// anything ad hoc.
func oneCall(ctx context.Context, url string, w io.Writer) error {
	c, err := conn.Connect(ctx, url) // redis://, rediss:// (TLS), valkey://, unix://; ?protocol=2 for RESP2
	if err != nil {
		return err // a wrong address or password shows here: Connect dials at once
	}
	defer c.Close()

	var b cmds.Builder // one per goroutine; it reuses its memory
	if _, err := kv.Call(ctx, c, b.Set("greeting", "hello").Build(), cmds.OKOrNil); err != nil {
		return err
	}
	v, ok, err := kv.CallNull(ctx, c, b.Get("greeting").Build(), cmds.String) // ok == false for a missing key: never an error
	if err != nil {
		return err
	}
	n, err := kv.Call(ctx, c, b.Strlen("greeting").Build(), cmds.Int)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, v, ok, n)
	return nil
}

func Example_oneCall() {
	if err := oneCall(context.Background(), os.Getenv("REDIS_URL"), os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output: hello true 5
}

// trackedCache is the README's client-side cache.
func trackedCache(ctx context.Context, addr string, w io.Writer) error {
	c, err := cache.New(ctx, cache.Options{Options: conn.Options{Addr: addr}})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Do(ctx, "SET", "greeting", "hello"); err != nil {
		return err
	}
	for range 3 { // the first read goes to the server, the others are served from memory
		v, _, err := c.Get(ctx, "greeting", time.Minute)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(v))
	}
	s := c.Stats() // a write by anyone else invalidates the entry: the server tells the Cache
	fmt.Fprintln(w, "hits", s.Hits, "misses", s.Misses)
	return nil
}

func Example_trackedCache() {
	if err := trackedCache(context.Background(), srv.Addr, os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// hello
	// hello
	// hello
	// hits 2 misses 1
}

// onACluster is the README's cluster: compiled, not run (it needs a
// cluster; internal/servertest.StartCluster starts one for the tests).
func onACluster(ctx context.Context, handler emq.Handler, payloads [][]byte) error {
	cl, err := cluster.NewClient(ctx, cluster.Options{Seeds: []string{"127.0.0.1:7000", "127.0.0.1:7001"}})
	if err != nil {
		return err
	}
	defer cl.Close()
	sh, err := emq.OpenSharded(ctx, cl, "orders", 6) // 6 member queues, slots spread evenly
	if err != nil {
		return err
	}
	if _, err := sh.EnqueueBulk(ctx, payloads); err != nil { // spread over the members, all at once
		return err
	}
	sw, err := emq.NewShardedWorker(sh, handler, emq.WorkerConfig{Concurrency: 48})
	if err != nil {
		return err
	}
	return sw.Run(ctx)
}

var _ = onACluster
