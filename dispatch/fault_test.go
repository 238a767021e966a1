package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
)

// TestScriptedWire: the exact bytes of EVALSHA, SCRIPT LOAD and the
// re-send, in order.
func TestScriptedWire(t *testing.T) {
	loaded := false
	p := startPeer(t, func(args []string) string {
		switch {
		case args[0] == "SCRIPT":
			loaded = true
			return bulkReply(enqueue.SHA())
		case !loaded:
			return noScript
		}
		return ":1\r\n"
	})
	x := dispatch.NewScripted(dialPeer(t, p.addr))
	var a dispatch.Args
	a.Key("emq:{q}:job:" + jobID(7))
	a.Key("emq:{q}:pending")
	a.Arg(jobID(7))
	a.ArgBytes([]byte("pay\r\nload"))
	if got, err := evalText(testCtx(t), x, enqueue, &a); err != nil || got != "1" {
		t.Fatalf("Eval = %q, %v", got, err)
	}
	evalsha := wantCommand("EVALSHA", enqueue.SHA(), "2", "emq:{q}:job:"+jobID(7), "emq:{q}:pending", jobID(7), "pay\r\nload")
	want := evalsha + wantCommand("SCRIPT", "LOAD", enqueue.Source()) + evalsha
	if got := p.bytes(); got != want {
		t.Fatalf("wire:\n%q\nwant\n%q", got, want)
	}
}

// TestLoadBreaks: the connection breaks while the one SCRIPT LOAD is in
// flight; every caller, Eval or EvalBatch, gets an error matching
// conn.ErrBroken, and nobody hangs.
func TestLoadBreaks(t *testing.T) {
	var x *dispatch.Scripted
	var answered atomic.Uint64
	p := startPeer(t, func(args []string) string {
		if args[0] == "SCRIPT" {
			// Every caller told NOSCRIPT so far joins the load first.
			until(t, func() bool { return x.Stats().NoScripts >= answered.Load() })
			return "" // close
		}
		answered.Add(1)
		return noScript
	})
	x = dispatch.NewScripted(dialPeer(t, p.addr))
	ctx := testCtx(t)
	const callers = 16
	errs := make([]error, callers+1)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { errs[i] = x.Eval(ctx, echo, nil, nil) })
	}
	wg.Go(func() {
		var b dispatch.Batch
		for range 10 {
			b.Add(echo, nil)
		}
		errs[callers] = x.EvalBatch(ctx, &b)
	})
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("callers hang after the connection broke during a load")
	}
	for i, err := range errs {
		if !errors.Is(err, conn.ErrBroken) {
			t.Fatalf("caller %d: %v, want an error matching conn.ErrBroken", i, err)
		}
	}
	if n := p.count("SCRIPT LOAD"); n != 1 {
		t.Fatalf("peer got %d SCRIPT LOADs, want 1", n)
	}
}

// TestReloadLimit: a server that answers NOSCRIPT after every load ends
// in ErrReloadLimit after three sends, not in a loop.
func TestReloadLimit(t *testing.T) {
	p := startPeer(t, func(args []string) string {
		if args[0] == "SCRIPT" {
			return bulkReply(echo.SHA())
		}
		return noScript
	})
	x := dispatch.NewScripted(dialPeer(t, p.addr))
	err := x.Eval(testCtx(t), echo, nil, nil)
	if !errors.Is(err, dispatch.ErrReloadLimit) || !strings.Contains(err.Error(), `"echo"`) {
		t.Fatalf("Eval = %v, want ErrReloadLimit naming the script", err)
	}
	if e, l := p.count("EVALSHA"), p.count("SCRIPT LOAD"); e != 3 || l != 2 {
		t.Fatalf("peer got %d EVALSHA and %d SCRIPT LOAD, want 3 and 2", e, l)
	}
	var b dispatch.Batch
	b.Add(echo, nil)
	b.Add(echo, nil)
	if err := x.EvalBatch(testCtx(t), &b); !errors.Is(err, dispatch.ErrReloadLimit) {
		t.Fatalf("EvalBatch = %v, want ErrReloadLimit", err)
	}
	if st := x.Stats(); st.EvalSHAs != 3+6 || st.Loads != 4 || st.NoScripts != 3+6 {
		t.Fatalf("Stats %+v", st)
	}
}

// TestLoadWrongSHA: SCRIPT LOAD answering another SHA is a load failure.
func TestLoadWrongSHA(t *testing.T) {
	p := startPeer(t, func(args []string) string {
		if args[0] == "SCRIPT" {
			return bulkReply(strings.Repeat("0", 40))
		}
		return noScript
	})
	x := dispatch.NewScripted(dialPeer(t, p.addr))
	err := x.Eval(testCtx(t), echo, nil, nil)
	var le *dispatch.LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), strings.Repeat("0", 40)) {
		t.Fatalf("Eval = %v, want a *LoadError quoting the SHA", err)
	}
}

// TestWaiterGivesUp: one caller waiting on a load stops waiting (its ctx
// ends); the load is not cancelled, and the other callers get their
// replies after it.
func TestWaiterGivesUp(t *testing.T) {
	const callers = 5
	var mu sync.Mutex
	loaded, first := false, true
	loadSeen, release := make(chan struct{}), make(chan struct{})
	var x *dispatch.Scripted
	p := startPeer(t, func(args []string) string {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case args[0] == "SCRIPT":
			close(loadSeen)
			<-release
			loaded = true
			return bulkReply(echo.SHA())
		case !loaded:
			if first { // let every caller's EVALSHA in before the load
				first = false
				until(t, func() bool { return x.Stats().EvalSHAs >= callers })
			}
			return noScript
		}
		return bulkReply(args[len(args)-1])
	})
	x = dispatch.NewScripted(dialPeer(t, p.addr))
	ctx0, cancel0 := context.WithCancel(context.Background())
	defer cancel0()
	errs := make([]error, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ctx := testCtx(t)
			if i == 0 {
				ctx = ctx0
			}
			var a dispatch.Args
			a.Arg(jobID(i))
			<-start
			got, err := evalText(ctx, x, echo, &a)
			if err == nil && got != jobID(i) {
				err = errors.New("reply " + got)
			}
			errs[i] = err
			if i == 0 {
				close(release) // the load goes on only now
			}
		})
	}
	close(start)
	<-loadSeen
	cancel0()
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("caller 0: %v, want context.Canceled", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Fatalf("caller %d: %v", i+1, err)
		}
	}
	if n := p.count("SCRIPT LOAD"); n != 1 {
		t.Fatalf("peer got %d SCRIPT LOADs, want 1", n)
	}
}

// TestBatchAbandoned: a batch whose ctx ends while its replies are owed
// returns at once; reused at once, it gets its own new replies, never the
// late ones of the abandoned run. The peer holds the slow replies until
// the abandoned run has returned, however long that takes.
func TestBatchAbandoned(t *testing.T) {
	abandoned := make(chan struct{})
	answerSlow := sync.OnceFunc(func() { close(abandoned) })
	p := startPeer(t, func(args []string) string {
		if args[len(args)-1] == "slow" {
			<-abandoned
		}
		return bulkReply(args[len(args)-1])
	})
	t.Cleanup(answerSlow) // runs before the peer's cleanup, which waits for it
	x := dispatch.NewScripted(dialPeer(t, p.addr))
	var b dispatch.Batch
	var a dispatch.Args
	a.Arg("slow")
	b.Add(echo, &a)
	b.Add(echo, &a)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := x.EvalBatch(short, &b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("EvalBatch = %v, want its deadline", err)
	}
	if b.Replies() != nil {
		t.Fatalf("replies after an abandoned run: %v", b.Replies())
	}
	answerSlow()
	b.Reset()
	for _, s := range []string{"a", "b", "c"} {
		a.Reset()
		a.Arg(s)
		b.Add(echo, &a)
	}
	if err := x.EvalBatch(testCtx(t), &b); err != nil {
		t.Fatal(err)
	}
	if got := b.Reply(0).String() + b.Reply(1).String() + b.Reply(2).String(); got != "abc" {
		t.Fatalf("replies %q, want abc", got)
	}
}

// until polls cond, a condition of the code under test, until it holds;
// the test fails when it does not within 10 s.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Error("condition not met within 10 s")
			return
		}
	}
}
