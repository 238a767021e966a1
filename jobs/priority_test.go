package jobs

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/echomq/echomq-go/conn"
)

// fill enqueues n tasks into queue, in bulk.
func fill(t *testing.T, cl *Client, queue string, n int) {
	t.Helper()
	tasks := make([]*Task, n)
	for i := range tasks {
		tasks[i] = NewTask("work", []byte(strconv.Itoa(i)))
	}
	for i := 0; i < n; i += 5000 {
		_, errs, err := cl.EnqueueBulk(tctx(t), tasks[i:min(i+5000, n)], Queue(queue))
		if err != nil || errs != nil {
			t.Fatal(err, errs)
		}
	}
}

// shares runs a server over queues prefilled with n jobs each (more for
// the first when first > 0) and counts, among the first total handler
// starts, each queue's.
func shares(t *testing.T, c conn.Sender, cfg ServerConfig, fillN map[string]int, total int) map[string]int {
	cl := newClient(t, c)
	for q, n := range fillN {
		fill(t, cl, q, n)
	}
	var started atomic.Int64
	counts := map[string]*atomic.Int64{}
	for q := range cfg.Queues {
		counts[q] = new(atomic.Int64)
	}
	reached := make(chan struct{})
	h := HandlerFunc(func(_ context.Context, task *Task) ([]byte, error) {
		k := started.Add(1)
		if k <= int64(total) {
			counts[task.Queue].Add(1)
		}
		if k == int64(total) {
			close(reached)
		}
		return nil, nil
	})
	cfg.Heartbeat = -1
	s := start(t, c, h, cfg)
	recv(t, reached)
	s.Shutdown(tctx(t))
	out := map[string]int{}
	for q, n := range counts {
		out[q] = int(n.Load())
	}
	return out
}

// TestWeightedShares: three saturated queues weighted 5:3:2 are served
// 50/30/20, each share within ±5% of its own value, over 100,000 jobs
// (the number; 10,000 with -short), each queue filled with
// 10% more than its share so that none runs empty before the count.
func TestWeightedShares(t *testing.T) {
	c := fresh(t)
	total := 100_000
	if testing.Short() {
		total = 10_000
	}
	weights := map[string]int{"hi": 5, "mid": 3, "lo": 2}
	fillN := map[string]int{}
	for q, w := range weights {
		fillN[q] = total*w/10 + total/10
	}
	got := shares(t, c, ServerConfig{Queues: weights, Concurrency: 8}, fillN, total)
	for q, w := range weights {
		want := float64(w) / 10
		share := float64(got[q]) / float64(total)
		if math.Abs(share-want) > 0.05*want {
			t.Errorf("%s: share %.4f, want %.2f ±5%% (counts %v)", q, share, want, got)
		}
	}
	t.Logf("counts %v over %d jobs", got, total)
}

// TestStrictFloor: under a saturating higher queue, strict mode serves
// the lower one its floor (10% here), and with no floor not at all.
func TestStrictFloor(t *testing.T) {
	c := fresh(t)
	queues := map[string]int{"critical": 2, "low": 1}
	got := shares(t, c, ServerConfig{Queues: queues, Strict: true, StrictFloor: 0.1, Concurrency: 8},
		map[string]int{"critical": 10_000, "low": 2000}, 5000)
	if share := float64(got["low"]) / 5000; share < 0.09 || share > 0.11 {
		t.Errorf("floor 0.1: low's share %.4f (counts %v)", share, got)
	}

	c = fresh(t)
	got = shares(t, c, ServerConfig{Queues: queues, Strict: true, StrictFloor: -1, Concurrency: 8},
		map[string]int{"critical": 10_000, "low": 2000}, 5000)
	if got["low"] != 0 {
		t.Errorf("pure strict: low served %d while critical had work (counts %v)", got["low"], got)
	}
}
