package sentinel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
)

// TestPubSubAndCacheAcrossFailover: a Subscription and a Cache given the
// MasterSet's Options follow the failover. The subscription reconnects
// to the new primary (reporting the gap) and receives what is published
// there; the cache is emptied when its connection is ended (Flushes,
// Entries 0) and reads the new primary's value, not the one it held.
func TestPubSubAndCacheAcrossFailover(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1})
	ctx := tctx(t)
	cl := newClient(t, opts(set, "", ""))
	ms := cl.MasterSet()

	sub, err := pubsub.New(ctx, pubsub.Options{Options: ms.Options()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.Subscribe(ctx, "news"); err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(ctx, cache.Options{Options: ms.Options()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := cl.Do(ctx, "SET", "k", "before"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		v, _, err := c.GetInto(ctx, nil, "k", time.Minute)
		if err != nil || string(v) != "before" {
			t.Fatalf("cache read %q, %v", v, err)
		}
	}
	if s := c.Stats(); s.Hits != 1 || s.Entries != 1 {
		t.Fatalf("before the failover: %+v", s)
	}
	flushes := c.Stats().Flushes

	_, now := failover(t, set)
	waitFor(t, ctx, "the cache emptied and reconnected", func() bool {
		s := c.Stats()
		return s.Flushes > flushes && s.Reconnects > 0
	})
	if s := c.Stats(); s.Entries != 0 {
		t.Fatalf("the cache holds %d entries after the failover", s.Entries)
	}
	// Written on the new primary directly, by nobody the cache tracks.
	if _, err := now.Do("SET", "k", "after"); err != nil {
		t.Fatal(err)
	}
	v, _, err := c.GetInto(ctx, nil, "k", time.Minute)
	if err != nil || string(v) != "after" {
		t.Fatalf("cache read after the failover %q, %v; want the new primary's", v, err)
	}

	// Publish on the new primary until the restored subscription hears.
	got := make(chan string, 1)
	go func() {
		for msg, err := range sub.Messages(ctx) {
			if errors.Is(err, pubsub.ErrGap) {
				continue
			}
			if err != nil {
				return
			}
			if string(msg.Payload) == "after" {
				got <- now.Addr
				return
			}
		}
	}()
	waitFor(t, ctx, "a message published on the new primary", func() bool {
		if _, err := now.Do("PUBLISH", "news", "after"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			return true
		default:
			return false
		}
	})
	if s := sub.Stats(); s.Reconnects == 0 {
		t.Fatalf("subscription stats %+v: no reconnect", s)
	}
}

// TestWorkerAcrossFailover: an emq worker over a sentinel Client runs
// 2,000 jobs while the master set fails over. Every job is completed
// exactly once (a Complete that answered 1: the fencing token keeps a
// stale handler's completion out) and none is left or lost.
func TestWorkerAcrossFailover(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1})
	ctx := tctx(t)
	cl := newClient(t, opts(set, "", ""))
	q, err := emq.Open(ctx, cl, "failover")
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 2000
	ids := map[string]bool{}
	for start := 0; start < jobs; start += 500 {
		res, err := q.EnqueueBatch(ctx, make([][]byte, 500))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			ids[r.ID] = true
		}
	}
	var mu sync.Mutex
	completed := map[string]int{}
	var errs, stale int
	ambiguous := map[string]bool{} // a complete whose connection broke: it may have run
	allDone := make(chan struct{})
	var once sync.Once
	// check closes allDone once every job is completed or had its
	// completion sent; called with mu held.
	check := func() {
		n := len(completed)
		for id := range ambiguous {
			if completed[id] == 0 {
				n++
			}
		}
		if n == jobs {
			once.Do(func() { close(allDone) })
		}
	}
	w, err := emq.NewWorker(q, emq.HandlerFunc(func(ctx context.Context, j *emq.Job) error {
		time.Sleep(time.Millisecond)
		return nil
	}), emq.WorkerConfig{
		Concurrency: 8, Lease: time.Second, MaxAttempts: 1000,
		Backoff: func(int64, error) time.Duration { return 0 },
		PollMax: 20 * time.Millisecond, ReapInterval: 200 * time.Millisecond, PromoteInterval: 200 * time.Millisecond,
		OnEvent: func(e emq.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case emq.EventCompleted:
				completed[e.Job.ID]++

			case emq.EventError:
				errs++
				if e.Op == "complete" {
					ambiguous[e.Job.ID] = true
				}
				if errs < 5 {
					t.Logf("error event %s: %v", e.Op, e.Err)
				}
			case emq.EventStale:
				stale++
			}
			check()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "300 jobs done", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completed) >= 300
	})
	failover(t, set)
	select {
	case <-allDone:
	case <-time.After(20 * time.Second):
		t.Errorf("not all done 20 s after the failover; worker err %v, stats %+v", w.Err(), w.Stats())
	}
	// A late duplicate shows itself: wait until no job is pending,
	// delayed or active on the primary, so that none can run again.
	waitFor(t, ctx, "no job left to run", func() bool {
		k := q.Keys()
		for _, key := range []string{k.Pending, k.Delayed, k.Active} {
			n, err := cl.Client.Do(ctx, "ZCARD", key)
			if err != nil || n.Int != 0 {
				return false
			}
		}
		return true
	})
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for id, n := range completed {
		if !ids[id] {
			t.Fatalf("completed %s, never enqueued", id)
		}
		if n > 1 {
			twice++
		}
	}
	var left int64
	for _, s := range []emq.State{emq.StatePending, emq.StateActive, emq.StateDelayed, emq.StateDead} {
		n, err := q.Count(sctx, s)
		if err != nil {
			t.Fatal(err)
		}
		left += n
	}
	// A job neither completed nor left is one whose completion was sent
	// and its connection broke before the answer: it ran (the row is
	// gone), and was not sent again.
	settled := 0
	for id := range ids {
		if completed[id] == 0 {
			if !ambiguous[id] {
				t.Errorf("%s: not completed, and no completion of it was sent", id)
			}
			settled++
		}
	}
	t.Logf("%d of %d completed, %d completed twice, %d settled by a completion whose answer was lost, %d left in the queue; %d exchange errors, %d stale acks",
		len(completed), jobs, twice, settled, left, errs, stale)
	if twice != 0 || len(completed)+settled+int(left) != jobs {
		t.Fatalf("completed twice %d, left %d", twice, left)
	}
}
