package emq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

func TestJudgeFence(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{"echomq:6.0.0", true},
		{"echomq:6.1.0", true},
		{"echomq:6.0.12", true},
		{"echomq:5.0.0", false},
		{"echomq:7.0.0", false},
		{"echomq:60.0.0", false},
		{"echomq:6", false},
		{"echomq:6.0", false},
		{"echomq:6.x.0", false},
		{"bullmq:6.0.0", false},
		{"", false},
	} {
		err := judgeFence(c.v)
		if (err == nil) != c.ok {
			t.Errorf("judgeFence(%q) = %v, want ok=%v", c.v, err, c.ok)
		}
		if err != nil && (!errors.Is(err, ErrFence) || !strings.Contains(err.Error(), Version)) {
			t.Errorf("judgeFence(%q) error %v", c.v, err)
		}
	}
}

func TestFence(t *testing.T) {
	for _, c := range []struct {
		stored string // "" absent
		ok     bool
	}{
		{"", true},
		{Version, true},
		{"echomq:6.1.0", true},
		{"echomq:5.0.0", false},
		{"echomq:7.0.0", false},
	} {
		t.Run(c.stored, func(t *testing.T) {
			q := fresh(t, "fence") // flushes; the fence is now set
			if c.stored == "" {
				do(t, "DEL", VersionKey)
			} else {
				do(t, "SET", VersionKey, c.stored)
			}
			_, err := Open(tctx(t), q.Sender(), "fence")
			if c.ok != (err == nil) {
				t.Fatalf("Open with %q = %v", c.stored, err)
			}
			after := do(t, "GET", VersionKey)
			if c.stored == "" && after != Version {
				t.Fatalf("absent fence set to %q", after)
			}
			if c.stored != "" && after != c.stored {
				t.Fatalf("fence rewritten from %q to %q", c.stored, after)
			}
			if err == nil {
				return
			}
			var fe *FenceError
			if !errors.Is(err, ErrFence) || !errors.As(err, &fe) || fe.Server != c.stored || fe.Client != Version {
				t.Fatalf("error %#v", err)
			}
			if !strings.Contains(err.Error(), c.stored) || !strings.Contains(err.Error(), Version) {
				t.Fatalf("error %q does not name both versions", err)
			}
		})
	}
}

func TestFenceRace(t *testing.T) {
	q := fresh(t, "fence")
	do(t, "DEL", VersionKey)
	errs := make(chan error, 16)
	for range 16 {
		go func() { errs <- CheckFence(context.Background(), q.Sender()) }()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if v := do(t, "GET", VersionKey); v != Version {
		t.Fatalf("fence %q", v)
	}
}

// TestInvalidInputsSendNothing checks that invalid queue names and ids are
// refused before any key is built or any command sent.
func TestInvalidInputsSendNothing(t *testing.T) {
	q := fresh(t, "valid")
	c := q.Sender()
	ctx := tctx(t)
	srv.ResetStats(t)
	for _, name := range []string{"", "a{b", "a}b", "a\x00b", strings.Repeat("q", MaxQueueLen+1)} {
		if _, err := Open(ctx, c, name); !errors.Is(err, ErrInvalidQueue) {
			t.Errorf("Open(%q) = %v", name, err)
		}
	}
	bad := []string{"", "JOB", "job0KHTOWnGLuC", "JOB0KHTOWnGLu!", "JOBAzL8n0Y58m8", "JOB0KHTOWnGLuCX", "emq:{x}:job:1"}
	for _, id := range bad {
		check := func(verb string, err error) {
			t.Helper()
			var ie *IDError
			if !errors.Is(err, ErrInvalidID) || !errors.As(err, &ie) {
				t.Errorf("%s(%q) = %v", verb, id, err)
			}
		}
		_, err := q.EnqueueID(ctx, id, nil)
		check("EnqueueID", err)
		_, err = q.EnqueueIDIn(ctx, id, time.Second, nil)
		check("EnqueueIDIn", err)
		check("Complete", q.Complete(ctx, id, 1, 0))
		_, err = q.Retry(ctx, id, 1, 0, 3, "x")
		check("Retry", err)
		check("Extend", q.Extend(ctx, id, 1, time.Second))
		_, err = q.CompleteBatch(ctx, []Ack{{"JOB0KHTOWnGLuC", 1}, {id, 1}}, 0)
		check("CompleteBatch", err)
	}
	for _, err := range []error{
		func() error { _, _, err := q.Claim(ctx, 0); return err }(),
		func() error { _, err := q.ClaimBatch(ctx, time.Second, 0); return err }(),
		func() error { _, err := q.Promote(ctx, -1); return err }(),
		func() error { _, err := q.Reap(ctx, 1, -1); return err }(),
		q.Complete(ctx, "JOB0KHTOWnGLuC", 1, -time.Second),
		q.Extend(ctx, "JOB0KHTOWnGLuC", 1, time.Microsecond),
	} {
		if !errors.Is(err, ErrArg) {
			t.Errorf("bad argument error %v, want ErrArg", err)
		}
	}
	if n := sentCommands(t); n != 0 {
		t.Fatalf("%d commands reached the server:\n%s", n, do(t, "INFO", "commandstats"))
	}
	if do(t, "DBSIZE") != "1" { // the fence only
		t.Fatalf("DBSIZE %s", do(t, "DBSIZE"))
	}
	// The control: a valid call is counted.
	if _, err := q.Enqueue(ctx, nil); err != nil || sentCommands(t) == 0 {
		t.Fatalf("a valid Enqueue (err %v) was not counted", err)
	}
}

// countingExec wraps an executor and counts its calls.
type countingExec struct {
	dispatch.Executor
	evals, batches int
}

func (c *countingExec) Eval(ctx context.Context, s *dispatch.Script, a *dispatch.Args, fn func(resp.Value) error) error {
	c.evals++
	return c.Executor.Eval(ctx, s, a, fn)
}

func (c *countingExec) EvalBatch(ctx context.Context, b *dispatch.Batch) error {
	c.batches++
	return c.Executor.EvalBatch(ctx, b)
}

func TestWithExecutor(t *testing.T) {
	base := fresh(t, "x") // for the connection
	x := &countingExec{Executor: dispatch.NewScripted(base.Sender())}
	q, err := Open(tctx(t), base.Sender(), "exec", WithExecutor(x))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(tctx(t), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueBatch(tctx(t), [][]byte{nil, nil}); err != nil {
		t.Fatal(err)
	}
	if x.evals != 1 || x.batches != 1 {
		t.Fatalf("evals %d batches %d", x.evals, x.batches)
	}
	// Extensions through their own executor.
	y := &countingExec{Executor: dispatch.NewScripted(base.Sender())}
	q, err = Open(tctx(t), base.Sender(), "exec", WithExecutor(x), WithExtensionExecutor(y))
	require.NoError(t, err)
	ctx := tctx(t)
	_, err = q.Enqueue(ctx, nil)
	require.NoError(t, err)
	_, err = q.EnqueueIn(ctx, 0, nil)
	require.NoError(t, err)
	res, err := q.EnqueueBulk(ctx, [][]byte{nil})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	jobs, err := q.ClaimBatch(ctx, time.Minute, 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.NoError(t, q.Extend(ctx, jobs[0].ID, jobs[0].Token, time.Minute))
	done, err := q.CompleteBatch(ctx, []Ack{{jobs[0].ID, jobs[0].Token}}, 0)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, done)
	_, err = q.Promote(ctx, 10)
	require.NoError(t, err)
	if x.evals != 3 || y.evals != 4 || y.batches != 1 {
		t.Fatalf("core evals %d, extension evals %d batches %d", x.evals, y.evals, y.batches)
	}
	// A native executor on a server without the module: the core verbs
	// reach EMQ.* commands the server does not know, byte for byte; the
	// extensions still run as scripts.
	q, err = Open(ctx, base.Sender(), "native", WithExecutor(dispatch.NewNative(base.Sender())),
		WithExtensionExecutor(dispatch.NewScripted(base.Sender())))
	require.NoError(t, err)
	if _, err := q.Enqueue(ctx, nil); err == nil || !strings.Contains(err.Error(), "EMQ.ENQUEUE") || errors.Is(err, ErrKind) {
		t.Fatalf("native Enqueue on a plain server: %v", err)
	}
	if res, err := q.EnqueueBulk(ctx, [][]byte{nil}); err != nil || res[0].Err != nil {
		t.Fatalf("EnqueueBulk through the scripted extension executor: %v %v", res, err)
	}

	gen, err := NewIDGenerator("QTE", 1)
	require.NoError(t, err)
	if _, err := Open(tctx(t), base.Sender(), "exec", WithIDGenerator(gen)); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("Open with a QTE generator = %v", err)
	}
}
