package sentinel_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/sentinel"
)

// load runs INCRs of "counter" from 16 goroutines until stop is closed,
// recording every acknowledged value and counting the failures that may
// have run (ErrBroken) apart from those that did not (nothing sent).
type load struct {
	acked     atomic.Int64
	ambiguous atomic.Int64
	refused   atomic.Int64
	mu        sync.Mutex
	values    map[int64]int
	wg        sync.WaitGroup
	stop      chan struct{}
}

func startLoad(ctx context.Context, cl *sentinel.Client) *load {
	l := &load{values: map[int64]int{}, stop: make(chan struct{})}
	for range 16 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				v, err := cl.Do(ctx, "INCR", "counter")
				switch {
				case err == nil:
					l.acked.Add(1)
					l.mu.Lock()
					l.values[v.Int]++
					l.mu.Unlock()
				case errors.Is(err, conn.ErrBroken):
					l.ambiguous.Add(1)
				default:
					// Refused at once (no primary to dial): a
					// millisecond's backoff, ended by stop.
					l.refused.Add(1)
					select {
					case <-l.stop:
						return
					case <-ctx.Done():
						return
					case <-time.After(time.Millisecond):
					}
				}
			}
		}()
	}
	return l
}

func (l *load) waitAcked(t *testing.T, ctx context.Context, n int64) {
	t.Helper()
	want := l.acked.Load() + n
	waitFor(t, ctx, "acknowledged writes", func() bool { return l.acked.Load() >= want })
}

// end stops the load and checks it against the counter on primary:
// every acknowledged INCR is there (no value acknowledged twice, the
// counter at least the acknowledged count and at most that plus the
// ambiguous ones); it returns the writes lost.
func (l *load) end(t *testing.T, primary *servertest.Server) (lost int64) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	got, err := primary.Do("GET", "counter")
	if err != nil {
		t.Fatal(err)
	}
	final, _ := strconv.ParseInt(got, 10, 64)
	var dup int64
	for _, n := range l.values {
		dup += int64(n - 1)
	}
	a, b := l.acked.Load(), l.ambiguous.Load()
	t.Logf("acknowledged %d, ambiguous (ErrBroken) %d, refused unsent %d; counter on the new primary %d; values acknowledged twice (lost writes) %d",
		a, b, l.refused.Load(), final, dup)
	if final > a+b {
		t.Errorf("counter %d > acknowledged %d + ambiguous %d", final, a, b)
	}
	return max(dup, a-final)
}

// TestFailoverUnderLoad: SENTINEL FAILOVER under 16 goroutines of INCR.
// Writes go on to the new primary; the old one receives none once the
// sentinels named the new one (its INCR calls stop moving); no
// acknowledged write is lost.
func TestFailoverUnderLoad(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{})
	ctx := tctx(t)
	cl := newClient(t, opts(set, "", ""))
	l := startLoad(ctx, cl)
	l.waitAcked(t, ctx, 500)
	old, now := failover(t, set)
	// now, or another node if the sentinels failed over again (a node
	// starved past down-after-milliseconds on a loaded machine).
	waitFor(t, ctx, "the client on the sentinels' primary", func() bool {
		cur, err := set.Current()
		return err == nil && cl.MasterSet().Primary() == cur.Addr
	})
	before := old.CommandCalls(t, "incr")
	l.waitAcked(t, ctx, 500)
	after := old.CommandCalls(t, "incr")
	info, _ := old.Do("INFO", "replication")
	if strings.Contains(info, "role:master") && after != before {
		t.Errorf("the old primary ran %d INCRs after the switch", after-before)
	}
	final := current(t, set)
	if lost := l.end(t, final); lost != 0 && final == now {
		t.Errorf("%d acknowledged writes lost", lost)
	} else if final != now {
		t.Logf("the sentinels failed over again, to %s: an unplanned failover's loss (%d) is printed, not asserted", final.Addr, lost)
	}
}

// TestKillPrimary: kill -9 of the primary under load; the sentinels fail
// it over, and the writes go on to the new primary. What asynchronous
// replication lost (acknowledged by the dead primary, never copied) is
// measured and printed.
func TestKillPrimary(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{})
	ctx := tctx(t)
	cl := newClient(t, opts(set, "", ""))
	l := startLoad(ctx, cl)
	l.waitAcked(t, ctx, 500)
	old, err := set.Primary()
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	old.Kill()
	now, err := set.WaitSwitch(old)
	if err != nil {
		t.Fatal(err)
	}
	l.waitAcked(t, ctx, 1)
	t.Logf("writes acknowledged again %v after the kill", time.Since(killed).Round(time.Millisecond))
	l.waitAcked(t, ctx, 500)
	lost := l.end(t, current(t, set))
	t.Logf("lost to asynchronous replication: %d (primary %s after %s)", lost, current(t, set).Addr, now.Addr)
}

// current is the primary the sentinels have now, waited for.
func current(t *testing.T, set *servertest.SentinelSet) *servertest.Server {
	t.Helper()
	now, err := set.WaitCurrent()
	if err != nil {
		t.Fatal(err)
	}
	return now
}
