package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// TestBatchColdPipeline: 1,000 pipelined EVALSHAs of a cold script cost one
// SCRIPT LOAD, and every reply lands at its call's index.
func TestBatchColdPipeline(t *testing.T) {
	c := ready(t)
	x := dispatch.NewScripted(c)
	var b dispatch.Batch
	var a dispatch.Args
	const n = 1000
	for i := range n {
		a.Reset()
		a.ArgInt(int64(i))
		b.Add(echo, &a)
	}
	if b.Len() != n {
		t.Fatalf("Len = %d", b.Len())
	}
	if err := x.EvalBatch(testCtx(t), &b); err != nil {
		t.Fatal(err)
	}
	checkEchoes(t, &b, 0)
	if got := loads(t); got != 1 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 1", got)
	}
	want := dispatch.Stats{Loads: 1, NoScripts: n, EvalSHAs: 2 * n}
	if st := x.Stats(); st != want {
		t.Fatalf("Stats %+v, want %+v", st, want)
	}
	// Warm now: the same batch again is one round trip, no NOSCRIPT.
	if err := x.EvalBatch(testCtx(t), &b); err != nil {
		t.Fatal(err)
	}
	checkEchoes(t, &b, 0)
	if st := x.Stats(); st.NoScripts != n || st.EvalSHAs != 3*n {
		t.Fatalf("warm Stats %+v", st)
	}
}

// checkEchoes checks that reply i of b is the decimal text of base+i.
func checkEchoes(t *testing.T, b *dispatch.Batch, base int) {
	t.Helper()
	r := b.Replies()
	if len(r) != b.Len() {
		t.Fatalf("%d replies for %d calls", len(r), b.Len())
	}
	for i, v := range r {
		if v.Type != resp.BulkString || string(v.Str) != strconv.Itoa(base+i) {
			t.Fatalf("reply %d = %v (%s), want %d", i, v, v.Type, base+i)
		}
	}
}

// TestBatchMixed: several cold scripts and a script error in one batch;
// each script is loaded once, replies stay at their indices, the error is
// that call's reply only.
func TestBatchMixed(t *testing.T) {
	c := ready(t)
	x := dispatch.NewScripted(c)
	var b dispatch.Batch
	var a dispatch.Args
	add := func(s *dispatch.Script, id string) {
		a.Reset()
		if s == enqueue {
			a.Key("emq:{q}:job:" + id)
			a.Key("emq:{q}:pending")
		}
		a.Arg(id)
		a.Arg("p")
		b.Add(s, &a)
	}
	add(enqueue, jobID(1))
	add(echo, "e1")
	add(enqueue, "XYZ0000000001")
	add(echo2, "e2")
	add(enqueue, jobID(1))
	add(echo, "e3")
	if err := x.EvalBatch(testCtx(t), &b); err != nil {
		t.Fatal(err)
	}
	want := []string{"1", "e1", "(error) EMQKIND job id must be JOB-namespaced", "[e2 two]", "0", "e3"}
	for i, w := range want {
		if got := b.Reply(i).String(); got != w {
			t.Fatalf("reply %d = %q, want %q", i, got, w)
		}
	}
	for i := range want {
		err := b.Err(i)
		if (i == 2) != (err != nil) {
			t.Fatalf("Err(%d) = %v", i, err)
		}
	}
	var se *resp.ServerError
	if !errors.As(b.Err(2), &se) || se.Msg != "EMQKIND job id must be JOB-namespaced" {
		t.Fatalf("Err(2) = %#v", b.Err(2))
	}
	if got := loads(t); got != 3 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 3 (one per script)", got)
	}
}

// TestBatchFlushMidRun: batches of 100 from several goroutines while
// SCRIPT FLUSH runs once: every call succeeds, each script is reloaded
// exactly once.
func TestBatchFlushMidRun(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(c)
	// Warm both scripts, then count from zero.
	var warm dispatch.Batch
	warm.Add(echo, nil)
	warm.Add(enqueue, nil)
	if err := x.EvalBatch(ctx, &warm); err != nil {
		t.Fatal(err)
	}
	srv.ResetStats(t)
	before := x.Stats()

	const workers, batches, depth = 4, 60, 100
	var done atomic.Int64
	flushed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // the flusher
		defer close(flushed)
		for done.Load() < workers*batches/4 {
			runtimeYield()
		}
		if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Error(err)
		}
	})
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			var b dispatch.Batch
			var a dispatch.Args
			for k := range batches {
				if k == batches-5 {
					<-flushed // the flush comes before the last batches
				}
				b.Reset()
				for i := range depth {
					n := (w*batches+k)*depth + i
					a.Reset()
					if i%2 == 0 {
						id := jobID(n)
						a.Key("emq:{f}:job:" + id)
						a.Key("emq:{f}:pending")
						a.Arg(id)
						a.Arg("payload")
						b.Add(enqueue, &a)
					} else {
						a.ArgInt(int64(n))
						b.Add(echo, &a)
					}
				}
				if err := x.EvalBatch(ctx, &b); err != nil {
					errs <- err
					return
				}
				for i, v := range b.Replies() {
					n := (w*batches+k)*depth + i
					want := "1"
					if i%2 == 1 {
						want = strconv.Itoa(n)
					}
					if v.String() != want {
						errs <- fmt.Errorf("worker %d batch %d reply %d = %v, want %s", w, k, i, v, want)
						return
					}
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := loads(t); got != 2 {
		t.Fatalf("server ran %d SCRIPT LOADs after one flush, want 2 (one per script)", got)
	}
	st := x.Stats()
	if st.Loads-before.Loads != 2 || st.NoScripts == before.NoScripts {
		t.Fatalf("Stats %+v (before %+v): want 2 loads and some NOSCRIPTs", st, before)
	}
	if n, _ := srv.Do("ZCARD", "emq:{f}:pending"); n != strconv.Itoa(workers*batches*depth/2) {
		t.Fatalf("pending holds %s jobs", n)
	}
}

// TestBatchCompileError: a script that fails to load keeps NOSCRIPT as its
// calls' replies; the other calls complete; EvalBatch returns the
// *LoadError; the bad script was loaded once.
func TestBatchCompileError(t *testing.T) {
	c := ready(t)
	x := dispatch.NewScripted(c)
	bad := dispatch.NewScript("bad", "return +")
	var b dispatch.Batch
	var a dispatch.Args
	for i := range 10 {
		a.Reset()
		a.ArgInt(int64(i))
		if i%3 == 0 {
			b.Add(bad, &a)
		} else {
			b.Add(echo, &a)
		}
	}
	err := x.EvalBatch(testCtx(t), &b)
	var le *dispatch.LoadError
	if !errors.As(err, &le) || le.Script != "bad" {
		t.Fatalf("EvalBatch = %v, want a *dispatch.LoadError for bad", err)
	}
	for i, v := range b.Replies() {
		if i%3 == 0 {
			if !resp.IsCode(b.Err(i), resp.CodeNoScript) {
				t.Fatalf("reply %d = %v, want its NOSCRIPT", i, v)
			}
		} else if v.String() != strconv.Itoa(i) {
			t.Fatalf("reply %d = %v", i, v)
		}
	}
	if got := loads(t); got != 2 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 2 (bad once, echo once)", got)
	}
}

// TestBatchReuse: Add copies the Args; Reset empties; an empty batch is a
// no-op; Reply out of range panics.
func TestBatchReuse(t *testing.T) {
	c := ready(t)
	x := dispatch.NewScripted(c)
	var b dispatch.Batch
	if err := x.EvalBatch(testCtx(t), &b); err != nil || b.Replies() != nil {
		t.Fatalf("empty batch: %v, %v", err, b.Replies())
	}
	var a dispatch.Args
	for round := range 3 {
		b.Reset()
		for i := range 5 {
			a.Reset()
			a.ArgInt(int64(round*5 + i))
			b.Add(echo, &a)
		}
		a.Reset()
		a.Arg("clobbered") // must not affect what was added
		if err := x.EvalBatch(testCtx(t), &b); err != nil {
			t.Fatal(err)
		}
		checkEchoes(t, &b, round*5)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Reply(5) of 5 did not panic")
		}
	}()
	b.Reply(5)
}

// TestBatchAllocs: in steady state EvalBatch allocates nothing, against
// the real server.
func TestBatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	c := ready(t)
	ctx := context.Background()
	x := dispatch.NewScripted(c)
	var b dispatch.Batch
	var a dispatch.Args
	run := func() {
		b.Reset()
		for i := range 100 {
			a.Reset()
			a.ArgInt(int64(i))
			b.Add(echo, &a)
		}
		if err := x.EvalBatch(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	run()
	checkEchoes(t, &b, 0)
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("EvalBatch of 100: %v allocs per batch, want 0", n)
	}
}

func runtimeYield() { <-timeAfterMilli() }
