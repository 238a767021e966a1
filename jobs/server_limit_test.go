package jobs

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// limitLog reads a queue's claim_limited audit log, oldest first: each
// line's server time (ms), jobs claimed and active after the claim.
func limitLog(t *testing.T, q *emq.Queue) (lines [][3]int64) {
	t.Helper()
	v, err := q.Sender().Do(tctx(t), "LRANGE", q.Keys().Base+emq.TypeLimitLog, "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Elems {
		f := strings.Fields(string(e.Str))
		if len(f) != 3 {
			t.Fatalf("log line %q", e.Str)
		}
		var l [3]int64
		for i := range f {
			l[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestServerLimits: two Servers on one queue limited to 3 active never
// hold more than 3 jobs in active, as the server's own audit of each
// limited claim shows (and as the handlers running at once show); every
// job of it was claimed through claim_limited. A queue without limits,
// served by the same Servers, runs more than 3 handlers at once and its
// claims never go through claim_limited.
func TestServerLimits(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	const capActive, jobs = 3, 60
	lim, free := openQueue(t, c, "lim"), openQueue(t, c, "free")
	for _, q := range []*emq.Queue{lim, free} {
		if _, err := c.Do(ctx, "HSET", q.Keys().Meta, emq.MetaLimitLog, "1"); err != nil {
			t.Fatal(err)
		}
	}
	var running, most atomic.Int64
	var freeRunning atomic.Int64
	freeBarrier := make(chan struct{})
	var freeOnce atomic.Bool
	done := make(chan string, 2*jobs)
	m := NewMux()
	m.HandleFunc("lim", func(ctx context.Context, t *Task) ([]byte, error) {
		n := running.Add(1)
		for o := most.Load(); n > o && !most.CompareAndSwap(o, n); o = most.Load() {
		}
		pause(ctx, time.Millisecond) // the work: long enough for claims to overlap it
		running.Add(-1)
		return nil, nil
	})
	m.HandleFunc("free", func(ctx context.Context, t *Task) ([]byte, error) {
		// Returns only once capActive+1 free handlers run at once.
		if freeRunning.Add(1) == capActive+1 && freeOnce.CompareAndSwap(false, true) {
			close(freeBarrier)
		}
		select {
		case <-freeBarrier:
		case <-ctx.Done():
		}
		return nil, nil
	})
	cfg := ServerConfig{
		Queues: map[string]int{"lim": 1, "free": 1}, Concurrency: 4, PollMax: 20 * time.Millisecond,
		OnEvent: func(e Event) {
			if e.Kind == EventCompleted {
				done <- e.Queue
			}
		},
	}
	cfgA := cfg
	cfgA.Limits = map[string]emq.Limits{"lim": {Active: capActive}}
	start(t, dial(t), m, cfgA)
	start(t, dial(t), m, cfg) // no Limits entry: reads them from the meta
	if l, err := lim.Limits(ctx); err != nil || l.Active != capActive {
		t.Fatalf("stored limits %+v %v", l, err)
	}
	cl := newClient(t, c)
	for range jobs {
		if _, err := cl.Enqueue(ctx, NewTask("lim", nil), Queue("lim")); err != nil {
			t.Fatal(err)
		}
	}
	for range jobs {
		if q := recv(t, done); q != "lim" {
			t.Fatalf("a %s job", q)
		}
	}
	log := limitLog(t, lim)
	var claimed int64
	for _, l := range log {
		claimed += l[1]
		if l[2] > capActive {
			t.Fatalf("active %d after a claim at %d: over the cap %d", l[2], l[0], capActive)
		}
	}
	if claimed != jobs {
		t.Fatalf("claim_limited claimed %d of %d jobs", claimed, jobs)
	}
	if most.Load() > capActive || most.Load() < 1 {
		t.Fatalf("%d handlers at once", most.Load())
	}
	// The queue without limits: more than the cap at once.
	for range 2 * 4 {
		if _, err := cl.Enqueue(ctx, NewTask("free", nil), Queue("free")); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, freeBarrier)
	for range 2 * 4 {
		if q := recv(t, done); q != "free" {
			t.Fatalf("a %s job", q)
		}
	}
	if n := len(limitLog(t, free)); n != 0 {
		t.Fatalf("the queue without limits was claimed through claim_limited %d times", n)
	}
}

// TestServerRateLimit: a queue limited to 4 claims per 300 ms is never
// claimed faster, in any window, by the server's audit; its Server
// waits for the window (the claim's wait) and serves every job.
func TestServerRateLimit(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	const rate, per, jobs = 4, 300 * time.Millisecond, 12
	q := openQueue(t, c, "rl")
	if _, err := c.Do(ctx, "HSET", q.Keys().Meta, emq.MetaLimitLog, "1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, jobs)
	h := HandlerFunc(func(context.Context, *Task) ([]byte, error) { done <- struct{}{}; return nil, nil })
	start(t, c, h, ServerConfig{Queues: map[string]int{"rl": 1}, Limits: map[string]emq.Limits{"rl": {Rate: rate, Per: per}}})
	cl := newClient(t, c)
	for range jobs {
		if _, err := cl.Enqueue(ctx, NewTask("x", nil), Queue("rl")); err != nil {
			t.Fatal(err)
		}
	}
	for range jobs {
		recv(t, done)
	}
	log := limitLog(t, q)
	var claimed int64
	for i, l := range log {
		claimed += l[1]
		in := int64(0)
		for _, m := range log[:i+1] {
			if m[0] > l[0]-per.Milliseconds() {
				in += m[1]
			}
		}
		if in > rate {
			t.Fatalf("%d claims in the window ending at %d, over %d: %v", in, l[0], rate, log)
		}
	}
	if claimed != jobs {
		t.Fatalf("claimed %d of %d", claimed, jobs)
	}
}

// TestServerLimitNoStall: a queue limited to 1 active is claimed again
// as soon as its job's outcome is sent, not after the poll's backoff
// (an hour here): each completion frees the place the next claim takes.
func TestServerLimitNoStall(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	const jobs = 30
	done := make(chan struct{}, jobs)
	h := HandlerFunc(func(context.Context, *Task) ([]byte, error) { done <- struct{}{}; return nil, nil })
	start(t, c, h, ServerConfig{Queues: map[string]int{"ns": 1}, Limits: map[string]emq.Limits{"ns": {Active: 1}},
		PollMin: time.Millisecond, PollMax: time.Hour})
	cl := newClient(t, c)
	for range jobs {
		if _, err := cl.Enqueue(ctx, NewTask("x", nil), Queue("ns")); err != nil {
			t.Fatal(err)
		}
	}
	for range jobs {
		recv(t, done)
	}
}
