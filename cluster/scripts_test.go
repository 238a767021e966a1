package cluster_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

const incrScript = `return redis.call('INCRBY', KEYS[1], ARGV[1])`

// A cold script cache on every primary: 64 concurrent callers and a
// 1,000-command pipeline over keys on all three primaries, and each
// primary sees exactly one SCRIPT LOAD; a primary that never ran the
// script sees none. The executor itself never meets NOSCRIPT: the
// cluster client loads per node and re-sends there.
func TestScriptsLoadPerNode(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	x := dispatch.NewScripted(cl)
	s := dispatch.NewScript("incr", incrScript)

	// Keys for two primaries only at first.
	keys := []string{"{a}x", "{b}x"} // slots 15495 (third), 3300 (first)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a dispatch.Args
			a.Key(keys[g%2])
			a.ArgInt(1)
			errs <- x.Eval(ctx, s, &a, nil)
		}()
	}
	var b dispatch.Batch
	var a dispatch.Args
	for i := range 1000 {
		a.Reset()
		a.Key(keys[i%2])
		a.ArgInt(1)
		b.Add(s, &a)
	}
	require.NoError(t, x.EvalBatch(ctx, &b))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i, v := range b.Replies() {
		require.Equal(t, resp.Integer, v.Type, "reply %d: %v", i, v)
	}
	loads := func() []int64 {
		var n []int64
		for _, p := range c.Primaries {
			n = append(n, calls(t, p, "script|load"))
		}
		return n
	}
	require.Equal(t, []int64{1, 0, 1}, loads())
	require.Zero(t, x.Stats().Loads, "the executor loaded by itself")
	total := int64(0)
	for _, k := range keys {
		v, err := cl.Do(ctx, "GET", k)
		require.NoError(t, err)
		n, _ := strconv.ParseInt(v.Text(), 10, 64)
		total += n
	}
	require.EqualValues(t, 1064, total, "every call ran exactly once")

	// The third primary runs it for the first time: one load there.
	var a3 dispatch.Args
	a3.Key("{c}x") // slot 7365 (second primary)
	a3.ArgInt(1)
	require.NoError(t, x.Eval(context.Background(), s, &a3, nil))
	require.Equal(t, []int64{1, 1, 1}, loads())
	require.EqualValues(t, 3, cl.Stats().ScriptLoads)
}
