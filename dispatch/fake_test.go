package dispatch_test

import (
	"context"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// instant is a Sender that answers every command at once, on the
// caller's goroutine, with :1: it isolates dispatch's own allocations from
// the connection's.
type instant struct{}

func (instant) Send(_ context.Context, cmds wire.Cmds, h wire.Handler) error {
	for i := range cmds.Len() {
		h.Reply(i, resp.Value{Type: resp.Integer, Int: 1})
	}
	h.Done(nil)
	return nil
}

func (x instant) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return wire.Do(ctx, x, args...)
}

func (x instant) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, x, cmd, fn)
}

func (x instant) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, x, cmd)
}

var _ conn.Sender = instant{}

// TestAllocsDispatchOnly: Eval and EvalBatch, on both executors, allocate
// nothing of their own in steady state, with a cancellable context.
func TestAllocsDispatchOnly(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var a dispatch.Args
	var b dispatch.Batch
	fn := func(resp.Value) error { return nil }
	for _, x := range []dispatch.Executor{dispatch.NewScripted(instant{}), dispatch.NewNative(instant{})} {
		eval := func() {
			a.Reset()
			a.Key("emq:{q}:job:JOB00000000001")
			a.Key("emq:{q}:pending")
			a.Arg("JOB00000000001")
			a.Arg("payload")
			if err := x.Eval(ctx, enqueue, &a, fn); err != nil {
				t.Fatal(err)
			}
		}
		batch := func() {
			b.Reset()
			for range 100 {
				eval := &a
				b.Add(enqueue, eval)
			}
			if err := x.EvalBatch(ctx, &b); err != nil {
				t.Fatal(err)
			}
		}
		for name, f := range map[string]func(){"Eval": eval, "EvalBatch": batch} {
			f()
			if n := testing.AllocsPerRun(200, f); n != 0 {
				t.Fatalf("%T.%s: %v allocs per call, want 0", x, name, n)
			}
		}
	}
}

// A callback made per call that captures a local, as callers write them,
// stays on the caller's stack: the executors hand it to wire.DoFunc, never
// through an interface method, which would move it to the heap (1
// allocation per call, seen in the peer run's 64-goroutine EVALSHA).
func TestAllocsEvalCapturingCallback(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	ctx := context.Background()
	var a dispatch.Args
	a.Key("emq:{q}:job:JOB00000000001")
	a.Key("emq:{q}:pending")
	a.Arg("JOB00000000001")
	scripted, native := dispatch.NewScripted(instant{}), dispatch.NewNative(instant{})
	for name, eval := range map[string]func() int64{
		"Scripted": func() int64 {
			var got int64
			if err := scripted.Eval(ctx, enqueue, &a, func(v resp.Value) error { got = v.Int; return nil }); err != nil {
				t.Fatal(err)
			}
			return got
		},
		"Native": func() int64 {
			var got int64
			if err := native.Eval(ctx, enqueue, &a, func(v resp.Value) error { got = v.Int; return nil }); err != nil {
				t.Fatal(err)
			}
			return got
		},
	} {
		if eval() != 1 {
			t.Fatalf("%s: callback not called", name)
		}
		if n := testing.AllocsPerRun(200, func() { eval() }); n != 0 {
			t.Fatalf("%s.Eval with a capturing callback: %v allocs per call, want 0", name, n)
		}
	}
}
