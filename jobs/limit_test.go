package jobs

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// The limits of TestLimitsManyProcesses.
const (
	limitActive = 5
	limitRate   = 40
	limitPer    = 200 * time.Millisecond
	limitJobs   = 500
)

// TestLimitChild is a consumer process of TestLimitsManyProcesses; run
// alone it skips. It claims through claim_limited, counts its running
// handlers in the server (INCR/DECR of test:running around each, noting
// any count past the limit in test:over) and completes each job.
func TestLimitChild(t *testing.T) {
	if os.Getenv(childEnv) != "limit" {
		t.Skip("a child process of TestLimitsManyProcesses")
	}
	ctx := childContext()
	q := openAddrQueue(t, ctx, os.Getenv(childAddr), os.Getenv(childQueue))
	s := q.Sender()
	for ctx.Err() == nil {
		jobs, wait, err := q.ClaimLimited(ctx, time.Minute, 3)
		if err != nil {
			if ctx.Err() == nil {
				t.Fatal(err)
			}
			return
		}
		if len(jobs) == 0 {
			pause(ctx, max(wait, 2*time.Millisecond)) // the rate's window, or a poll
			continue
		}
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Go(func() {
				n, err := s.Do(ctx, "INCR", "test:running")
				if err != nil {
					return
				}
				if v, _ := n.AsInt(); v > limitActive {
					s.Do(ctx, "RPUSH", "test:over", strconv.FormatInt(v, 10))
				}
				pause(ctx, time.Duration(1+rand.IntN(8))*time.Millisecond) // the work
				s.Do(ctx, "DECR", "test:running")
				if q.Complete(ctx, j.ID, j.Token, 0) == nil {
					s.Do(ctx, "INCR", "test:done")
				}
			})
		}
		wg.Wait()
	}
}

// TestLimitsManyProcesses: 4 consumer processes drain a queue limited to
// 5 active and 40 claims per 200 ms. From the server's own clock (the
// claim's TIME, in claim_limited's audit log): active never passed 5 and
// no window of 200 ms held more than 40 claims; the handlers' own count,
// kept in the server, never passed 5; and both limits were reached, so
// they were what held the consumers back.
func TestLimitsManyProcesses(t *testing.T) {
	srv, ctx, q := processTest(t, "lim", 3*time.Minute)
	payloads := make([][]byte, limitJobs)
	for i := range payloads {
		payloads[i] = []byte("job")
	}
	if _, err := q.EnqueueBulk(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, emq.Limits{Active: limitActive, Rate: limitRate, Per: limitPer}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("HSET", q.Keys().Meta, emq.MetaLimitLog, "1"); err != nil {
		t.Fatal(err)
	}
	var children []*child
	for range 4 {
		children = append(children, startChild(t, "TestLimitChild", "limit", srv.Addr, "lim", ""))
	}
	defer func() {
		for _, c := range children {
			c.kill()
		}
	}()
	waitUntil(t, ctx, "every job done", 10*time.Millisecond, func() bool {
		done, _ := srv.Do("GET", "test:done")
		return done == strconv.Itoa(limitJobs)
	})
	if over, _ := srv.Do("LRANGE", "test:over", "0", "-1"); over != "" {
		t.Fatalf("handlers running past the limit: %q", over)
	}

	raw, err := srv.Do("LRANGE", q.Keys().Base+emq.TypeLimitLog, "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	type claim struct{ at, n, active int64 }
	var log []claim
	total, maxActive := int64(0), int64(0)
	for line := range strings.SplitSeq(raw, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("log line %q", line)
		}
		var c claim
		c.at, _ = strconv.ParseInt(f[0], 10, 64)
		c.n, _ = strconv.ParseInt(f[1], 10, 64)
		c.active, _ = strconv.ParseInt(f[2], 10, 64)
		if c.active > limitActive {
			t.Fatalf("%d active after a claim at %d", c.active, c.at)
		}
		log = append(log, c)
		total += c.n
		maxActive = max(maxActive, c.active)
	}
	if total != limitJobs {
		t.Fatalf("%d claims logged, want %d", total, limitJobs)
	}
	slices.SortStableFunc(log, func(a, b claim) int { return int(a.at - b.at) })
	per := limitPer.Milliseconds()
	busiest := int64(0)
	for i := range log { // every window (at_i - per, at_i]
		sum := int64(0)
		for k := i; k >= 0 && log[k].at > log[i].at-per; k-- {
			sum += log[k].n
		}
		if sum > limitRate {
			t.Fatalf("%d claims in the %d ms up to %d", sum, per, log[i].at)
		}
		busiest = max(busiest, sum)
	}
	span := log[len(log)-1].at - log[0].at
	t.Logf("%d claim calls over %d ms; busiest window %d claims, most active %d", len(log), span, busiest, maxActive)
	if busiest != limitRate || maxActive != limitActive {
		t.Fatalf("limits never reached (busiest window %d, most active %d): the test tested nothing", busiest, maxActive)
	}
	if min := (limitJobs/limitRate - 1) * per; span < min {
		t.Fatalf("%d jobs in %d ms: faster than the rate allows (%d ms)", limitJobs, span, min)
	}
}
