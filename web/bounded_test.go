package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// recorder is a conn.Sender that records the arguments of every Do.
type recorder struct {
	conn.Sender
	mu   sync.Mutex
	cmds [][]string
}

func (r *recorder) Do(ctx context.Context, args ...any) (resp.Value, error) {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = fmt.Sprint(a)
	}
	r.mu.Lock()
	r.cmds = append(r.cmds, s)
	r.mu.Unlock()
	return r.Sender.Do(ctx, args...)
}

// TestEveryReadBounded: browsing every page runs no KEYS or SCAN of any
// kind (INFO commandstats), and every ZRANGE the dashboard sends is a
// LIMIT page or an index range no wider than a page: no read grows with
// the set.
func TestEveryReadBounded(t *testing.T) {
	f := newFixture(t, Options{}, "q")
	rec := &recorder{Sender: f.cl}
	h, err := New(tctx(t), Options{Sender: rec, Queues: []string{"q"}, StatsTTL: -1, SampleEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	f.h = h
	f.ts = httptest.NewServer(h)
	defer f.ts.Close()
	var ids []string
	for range 30 {
		ids = append(ids, f.enqueue("p"))
	}
	for range 3 {
		f.kill("boom")
	}
	f.q.EnqueueIn(tctx(t), time.Hour, []byte("later"))
	srv.ResetStats(t)
	pages := []string{"/", "/api/overview", "/api/queues/q", "/queues/q/chart.svg",
		"/queues/q/dead", "/queues/q/dead?prefix=b&older=1s", "/queues/q/jobs/" + ids[5], "/queues/q/jobs/" + ids[5] + "/payload"}
	for _, st := range setStates {
		pages = append(pages, "/queues/q?state="+st, "/queues/q?state="+st+"&n=200")
	}
	pages = append(pages, "/queues/q?state=pending&n=3&after=0."+ids[10], "/queues/q?state=pending&n=3&before=0."+ids[10])
	for _, p := range pages {
		if code, body, _ := f.get(p); code != 200 {
			t.Fatalf("%s: %d %s", p, code, clip(body, 200))
		}
	}
	for _, c := range []string{"keys", "scan", "hscan", "sscan", "zscan", "smembers", "hkeys", "hvals"} {
		if n := srv.CommandCalls(t, c); n != 0 {
			t.Errorf("%s ran %d times", c, n)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	zr := 0
	for _, c := range rec.cmds {
		if c[0] != "ZRANGE" {
			continue
		}
		zr++
		if i := indexOf(c, "LIMIT"); i >= 0 {
			if n, _ := strconv.Atoi(c[i+2]); c[i+1] != "0" || n > maxRegistry {
				t.Errorf("ZRANGE page %v", c)
			}
			continue
		}
		start, err1 := strconv.Atoi(c[2])
		stop, err2 := strconv.Atoi(c[3])
		if err1 != nil || err2 != nil || stop < 0 || stop-start > maxPage+1 {
			t.Errorf("unbounded ZRANGE %v", c)
		}
	}
	if zr < len(setStates) {
		t.Errorf("only %d ZRANGE recorded", zr)
	}
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
