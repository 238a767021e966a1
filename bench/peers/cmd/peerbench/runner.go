package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// runner is what every client adapter implements. One runner lives in one
// process and owns its connections; main times only calls to run.
type runner interface {
	// run performs n operations of w and checks every reply, calling w.fail
	// for a wrong one. With w.goroutines > 1 it starts w.goroutines
	// goroutines that each send one command at a time (see fanOut); else
	// one goroutine sends batches of w.depth commands over one connection
	// (see batches), depth 1 being the client's plain one-command call.
	// It returns early only on an I/O or client error.
	run(ctx context.Context, w *workload, n int) error
	// close releases the runner's connections.
	close() error
}

// config is what an adapter needs to connect.
type config struct {
	addr       string
	goroutines int // size pools for this many concurrent callers
	depth      int
}

// errNotWired is returned by an adapter that cannot run yet; main exits
// with exitNotWired so run-peers.sh can skip the client with a note.
var errNotWired = errors.New("echomq adapter not wired yet")

// adapters maps a -client name to its constructor.
var adapters = map[string]func(config) (runner, error){
	"rueidis": newRueidis,
	"goredis": newGoredis,
	"redigo":  newRedigo,
	"echomq":  newEchomq,
	// echomq-typed: the same runner on the typed paths (cmds builders,
	// kv.Call, pipeline handles), for typed ÷ raw in one run.
	"echomq-typed": newEchomqTyped,
	"floor":        newFloor,
}

func adapterNames() []string {
	names := make([]string, 0, len(adapters))
	for n := range adapters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// batches calls fn for consecutive batches of at most depth ops covering
// op indices [0, n); first is the batch's first op index.
func batches(n, depth int, fn func(first uint64, k int) error) error {
	for i := 0; i < n; i += depth {
		if err := fn(uint64(i), min(depth, n-i)); err != nil {
			return err
		}
	}
	return nil
}

// fanOut starts w.goroutines goroutines that claim op indices from a shared
// counter until n are claimed, calling fn once per op. The first error
// stops every goroutine.
func fanOut(ctx context.Context, w *workload, n int, fn func(seq uint64) error) error {
	w.next.Store(0)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	var stop atomic.Bool // cheaper per op than ctx.Err()
	for range w.goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				seq := w.next.Add(1) - 1
				if seq >= uint64(n) {
					return
				}
				if err := fn(seq); err != nil {
					once.Do(func() { first = fmt.Errorf("op %d: %w", seq, err); stop.Store(true); cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
