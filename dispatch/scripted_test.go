package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// evalText runs s with args and returns its reply as text.
func evalText(ctx context.Context, x dispatch.Executor, s *dispatch.Script, a *dispatch.Args) (string, error) {
	var got string
	err := x.Eval(ctx, s, a, func(v resp.Value) error {
		got = v.String()
		return nil
	})
	return got, err
}

func TestEval(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(c)
	var a dispatch.Args
	a.Key("emq:{q}:job:" + jobID(1))
	a.Key("emq:{q}:pending")
	a.Arg(jobID(1))
	a.Arg("payload")
	for i, want := range []string{"1", "0"} { // enqueued, then a duplicate
		got, err := evalText(ctx, x, enqueue, &a)
		if err != nil || got != want {
			t.Fatalf("enqueue #%d = %q, %v; want %q", i+1, got, err, want)
		}
	}
	row, err := srv.Do("HGETALL", "emq:{q}:job:"+jobID(1))
	if err != nil || row != "state\npending\nattempts\n0\npayload\npayload" {
		t.Fatalf("row = %q, %v", row, err)
	}
	if got, err := evalText(ctx, x, dispatch.NewScript("nil", "return 'x'"), nil); err != nil || got != "x" {
		t.Fatalf("nil Args: %q, %v", got, err)
	}
	// One load for enqueue, one for "nil"; the first send of each NOSCRIPT.
	want := dispatch.Stats{Loads: 2, NoScripts: 2, EvalSHAs: 5}
	if st := x.Stats(); st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
	if n := loads(t); n != 2 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 2", n)
	}
	if n := srv.CommandCalls(t, "eval"); n != 0 {
		t.Fatalf("server ran EVAL %d times: the executor must never send the source", n)
	}
}

// TestEvalAllocs is the allocation budget of Eval: none in steady state,
// against the real server. The context has no Done channel, so the
// measure is dispatch's path and the connection's, not the cost of
// watching a cancellable context (see TestEvalAllocsFake for dispatch
// alone with one).
func TestEvalAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	c := ready(t)
	ctx := context.Background()
	for _, x := range []dispatch.Executor{dispatch.NewScripted(c)} {
		var a dispatch.Args
		var got int64
		fn := func(v resp.Value) error {
			got = v.Int
			return nil
		}
		run := func() {
			a.Reset()
			a.Key("emq:{q}:job:JOB00000000001")
			a.Key("emq:{q}:pending")
			a.Arg("JOB00000000001")
			a.Arg("payload")
			if err := x.Eval(ctx, enqueue, &a, fn); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if got != 1 {
			t.Fatalf("first enqueue = %d", got)
		}
		if n := testing.AllocsPerRun(500, run); n != 0 {
			t.Fatalf("Eval: %v allocs per call, want 0", n)
		}
	}
}

// TestColdConcurrentOneLoad: 64 goroutines call a cold script at once; the
// server sees exactly one SCRIPT LOAD. Repeated to catch a caller whose
// NOSCRIPT arrives after the load has finished.
func TestColdConcurrentOneLoad(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	const callers, rounds = 64, 20
	for round := range rounds {
		srv.Flush(t)
		srv.ResetStats(t)
		x := dispatch.NewScripted(c)
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		start := make(chan struct{})
		for g := range callers {
			wg.Go(func() {
				var a dispatch.Args
				a.Arg(jobID(g))
				<-start
				got, err := evalText(ctx, x, echo, &a)
				if err == nil && got != jobID(g) {
					err = errors.New("reply " + got + " for caller " + jobID(g))
				}
				if err != nil {
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := loads(t); n != 1 {
			t.Fatalf("round %d: server ran %d SCRIPT LOADs, want 1", round, n)
		}
		st := x.Stats()
		if st.Loads != 1 || st.EvalSHAs != callers+st.NoScripts || st.NoScripts == 0 {
			t.Fatalf("round %d: Stats %+v: want 1 load, %d first sends plus one re-send per NOSCRIPT", round, st, callers)
		}
		if n := srv.CommandCalls(t, "evalsha"); uint64(n) != st.EvalSHAs {
			t.Fatalf("round %d: server ran %d EVALSHAs, Stats say %d", round, n, st.EvalSHAs)
		}
	}
}

// TestScriptErrorByteForByte: a script's error reply reaches the caller as
// the server's text, and triggers no reload.
func TestScriptErrorByteForByte(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(c)
	var a dispatch.Args
	a.Key("emq:{q}:job:ABC0000000001")
	a.Key("emq:{q}:pending")
	a.Arg("ABC0000000001")
	a.Arg("p")
	for range 3 {
		called := false
		err := x.Eval(ctx, enqueue, &a, func(resp.Value) error { called = true; return nil })
		var se *resp.ServerError
		if !errors.As(err, &se) || called {
			t.Fatalf("Eval = %v (fn called: %v), want a *resp.ServerError", err, called)
		}
		if se.Msg != "EMQKIND job id must be JOB-namespaced" || se.Code() != resp.CodeEMQKind {
			t.Fatalf("error text %q, want EMQKIND job id must be JOB-namespaced", se.Msg)
		}
	}
	// A runtime error, too, is a reply.
	boom := dispatch.NewScript("boom", "return redis.call('INCR', KEYS[1])")
	a.Reset()
	a.Key("emq:{q}:notanumber")
	if _, err := srv.Do("SET", "emq:{q}:notanumber", "x"); err != nil {
		t.Fatal(err)
	}
	_, err := evalText(ctx, x, boom, &a)
	var se *resp.ServerError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "ERR value is not an integer") {
		t.Fatalf("runtime error = %v", err)
	}
	if n := loads(t); n != 2 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 2 (one per script)", n)
	}
	if st := x.Stats(); st.Loads != 2 || st.NoScripts != 2 {
		t.Fatalf("Stats %+v", st)
	}
}

// TestCompileError: a script that does not compile fails its one load,
// and each of 16 concurrent waiters gets that error.
func TestCompileError(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(c)
	bad := dispatch.NewScript("bad", "return +")
	const callers = 16
	errs := make([]error, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			errs[i] = x.Eval(ctx, bad, nil, nil)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		var le *dispatch.LoadError
		if !errors.As(err, &le) || le.Script != "bad" || le.SHA != bad.SHA() {
			t.Fatalf("caller %d: %v, want a *dispatch.LoadError", i, err)
		}
		if err != errs[0] {
			t.Fatalf("caller %d got another error than caller 0: %v vs %v", i, err, errs[0])
		}
		var se *resp.ServerError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "Error compiling script") {
			t.Fatalf("caller %d: %v does not carry the server's text", i, err)
		}
		if !strings.Contains(err.Error(), `script "bad"`) || !strings.Contains(err.Error(), se.Msg) {
			t.Fatalf("error text %q", err)
		}
	}
	if n := loads(t); n != 1 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 1", n)
	}
	// A later call gets the same error, without another load.
	if err := x.Eval(ctx, bad, nil, nil); err != errs[0] {
		t.Fatalf("later call: %v, want the first load's error", err)
	}
	if n := loads(t); n != 1 {
		t.Fatalf("server ran %d SCRIPT LOADs after a later call, want still 1", n)
	}
}

// TestTwoScriptsCold: two different cold scripts called at once load once
// each.
func TestTwoScriptsCold(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(c)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	start := make(chan struct{})
	for g := range 64 {
		wg.Go(func() {
			s, want := echo, jobID(g)
			if g%2 == 1 {
				s, want = echo2, "["+jobID(g)+" two]"
			}
			var a dispatch.Args
			a.Arg(jobID(g))
			<-start
			got, err := evalText(ctx, x, s, &a)
			if err == nil && got != want {
				err = errors.New("got " + got + " want " + want)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := loads(t); n != 2 {
		t.Fatalf("server ran %d SCRIPT LOADs, want 2", n)
	}
	if st := x.Stats(); st.Loads != 2 {
		t.Fatalf("Stats %+v", st)
	}
}

// TestSameSourceSharesLoad: two Script values with one source are one
// script to the server.
func TestSameSourceSharesLoad(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(c)
	twin := dispatch.NewScript("twin", echo.Source())
	var a dispatch.Args
	a.Arg("v")
	for _, s := range []*dispatch.Script{echo, twin, echo} {
		if got, err := evalText(ctx, x, s, &a); err != nil || got != "v" {
			t.Fatalf("%v: %q, %v", s, got, err)
		}
	}
	if st := x.Stats(); st.Loads != 1 || st.NoScripts != 1 {
		t.Fatalf("Stats %+v, want one load", st)
	}
}

// TestEvalCallbackError: fn's error is Eval's error.
func TestEvalCallbackError(t *testing.T) {
	c := ready(t)
	x := dispatch.NewScripted(c)
	sentinel := errors.New("mine")
	var a dispatch.Args
	a.Arg("v")
	if err := x.Eval(testCtx(t), echo, &a, func(resp.Value) error { return sentinel }); err != sentinel {
		t.Fatalf("Eval = %v, want fn's error", err)
	}
}
