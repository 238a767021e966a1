package jobs

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestWorkersSeen: a running server is listed in each of its queues'
// registries with its host, pid, queues and concurrency; it leaves them
// at Shutdown; and an entry whose heartbeat stops is gone once its ttl
// passes (pruned from the zset by the read).
func TestWorkersSeen(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	h := HandlerFunc(func(context.Context, *Task) ([]byte, error) { return nil, nil })
	s := start(t, c, h, ServerConfig{Queues: map[string]int{"a": 2, "b": 1}, Concurrency: 3, Heartbeat: 50 * time.Millisecond})
	in := NewInspector(c)
	host, _ := os.Hostname()
	for _, q := range []string{"a", "b"} {
		var ws []WorkerInfo
		waitFor(t, q+"'s registry to list the server", func() bool {
			ws, _ = in.Workers(ctx, q)
			return len(ws) > 0
		})
		if len(ws) != 1 {
			t.Fatalf("%s: workers %+v", q, ws)
		}
		w := ws[0]
		if w.ID != s.ID() || w.Host != host || w.PID != os.Getpid() || w.Concurrency != 3 || w.Queues != "a=2,b=1" ||
			w.Started.IsZero() || w.Heartbeat.IsZero() {
			t.Fatalf("%s: %+v", q, w)
		}
	}
	s.Shutdown(ctx)
	for _, q := range []string{"a", "b"} {
		if ws, _ := in.Workers(ctx, q); len(ws) != 0 {
			t.Fatalf("%s after Shutdown: %+v", q, ws)
		}
	}

	// A worker that stops beating: gone after its ttl, and pruned.
	qa := openQueue(t, c, "a")
	if _, err := qa.Heartbeat(ctx, "ghost", 30*time.Millisecond, "host", "x"); err != nil {
		t.Fatal(err)
	}
	if ws, _ := in.Workers(ctx, "a"); len(ws) != 1 || ws[0].ID != "ghost" {
		t.Fatalf("ghost not listed: %+v", ws)
	}
	key := qa.Keys().WorkersKey()
	// The hash expires on the server's clock; then the read prunes it.
	waitFor(t, "the ghost's hash to expire", func() bool {
		v, _ := c.Do(ctx, "EXISTS", qa.Keys().Base+"worker:ghost")
		return v.Int == 0
	})
	if v, _ := c.Do(ctx, "ZCARD", key); v.Int != 1 {
		t.Fatalf("zset holds %d before the read", v.Int)
	}
	if ws, _ := in.Workers(ctx, "a"); len(ws) != 0 {
		t.Fatalf("ghost listed after its ttl: %+v", ws)
	}
	if v, _ := c.Do(ctx, "ZCARD", key); v.Int != 0 {
		t.Fatalf("zset holds %d after the read: not pruned", v.Int)
	}
}
