package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/sentinel"
)

// Through Sentinel (issue 28): emqbench's workloads on a sentinel URL,
// and a master set failing over (SENTINEL FAILOVER, kill -9 of the
// primary) under emqbench e2e and under 64 goroutines of writes.

// Timings of the clients below: the backoff bounds reconnection.
const (
	sentTimeout = 500 * time.Millisecond
	maxBackoff  = 100 * time.Millisecond
)

// startSentinels starts 3 sentinels, a primary and 2 replicas for one
// test (skipped without a server binary, failed under CI=true).
func startSentinels(t *testing.T) *servertest.SentinelSet {
	t.Helper()
	return servertest.NeedSentinels(t, servertest.SentinelOptions{Replicas: 2, Sentinels: 3})
}

// sentinelURL is the set's URL, scheme redis+sentinel or valkey+sentinel,
// with short timeouts.
func sentinelURL(set *servertest.SentinelSet, scheme string) string {
	return scheme + "://" + strings.Join(set.SentinelAddrs(), ",") + "/" + set.MasterName +
		"?sentinel_timeout=" + sentTimeout.String() + "&min_backoff=10ms&max_backoff=" + maxBackoff.String() +
		"&dial_timeout=1s&read_timeout=2s"
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitUntil is servertest.Until.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	servertest.Until(t, ctx, what, cond)
}

// TestSentinelURLWorkloads: every workload that takes -url runs through
// a sentinel URL (both schemes), on the primary; an unknown master set is
// exit 2 with a message that names it and writes nothing.
func TestSentinelURLWorkloads(t *testing.T) {
	set := startSentinels(t)
	primary := set.Data[0]
	for _, w := range [][]string{
		{"-n", "2000", "ping"},
		{"-n", "2000", "-depth", "10", "set"},
		{"-n", "2000", "get"},
		{"-n", "2000", "enqueue"},
		{"-n", "1000", "claim"},
		{"-n", "1000", "worker"},
		{"-n", "3000", "-producers", "2", "e2e"},
		{"-n", "3000", "-failover", "e2e"},
		{"-n", "500", "pubsub"},
		{"-n", "2000", "-keys", "100", "cache"},
	} {
		scheme := "redis+sentinel"
		if len(w)%2 == 0 {
			scheme = "valkey+sentinel"
		}
		args := append([]string{"-url", sentinelURL(set, scheme), "-json", "-conns", "2"}, w...)
		code, out, errs := runArgs(args...)
		var rep report
		if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil {
			t.Fatalf("%s via %s: exit %d, stderr %q, %v", w[len(w)-1], scheme, code, errs, err)
		}
		if !strings.Contains(rep.Server, "master set \"mymaster\" at "+primary.Addr) {
			t.Errorf("%s: report names %q, not the primary %s", w[len(w)-1], rep.Server, primary.Addr)
		}
	}
	before := primary.CommandCalls(t, "set") + primary.CommandCalls(t, "evalsha")
	code, _, errs := runArgs("-url", "redis+sentinel://"+strings.Join(set.SentinelAddrs(), ",")+"/nosuchmaster", "set")
	if code != exitUsage || !strings.Contains(errs, `master set "nosuchmaster"`) {
		t.Errorf("unknown master set: exit %d, stderr %q", code, errs)
	}
	if after := primary.CommandCalls(t, "set") + primary.CommandCalls(t, "evalsha"); after != before {
		t.Errorf("an unknown master set wrote %d commands", after-before)
	}
}

// fault is how a test fails the master set over.
type fault int

const (
	sentinelFailover fault = iota // SENTINEL FAILOVER: a coordinated switch
	killPrimary                   // kill -9 of the primary
)

func (f fault) String() string {
	if f == killPrimary {
		return "kill -9 of the primary"
	}
	return "SENTINEL FAILOVER"
}

// failOver fails set over by f, and returns the old primary, the new one
// and when the fault was made. With killPrimary the old primary is then
// restarted (the sentinels make it a replica of the new one).
func failOver(t *testing.T, set *servertest.SentinelSet, f fault) (old, now *servertest.Server, at time.Time) {
	t.Helper()
	var err error
	if f == killPrimary {
		if old, err = set.Primary(); err != nil {
			t.Fatal(err)
		}
		at = time.Now()
		old.Kill()
	} else if old, at, err = set.Failover(); err != nil {
		t.Fatal(err)
	}
	if now, err = set.WaitSwitch(old); err != nil {
		t.Fatal(err)
	}
	if f == killPrimary {
		if err := old.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.WaitRole(old, "slave"); err != nil {
		t.Fatal(err)
	}
	return old, now, at
}

// assertNoWritesTo checks, without MONITOR, that no client wrote to the
// demoted primary old: it refused no write as a replica (INFO errorstats
// errorstat_READONLY), and no connection named name is open on it.
func assertNoWritesTo(t *testing.T, old *servertest.Server, name string) {
	t.Helper()
	stats, err := old.Do("INFO", "errorstats")
	if err != nil {
		t.Fatal(err)
	}
	if v := infoField(stats, "errorstat_READONLY"); v != "" {
		t.Errorf("the demoted primary refused writes: errorstat_READONLY %s", v)
	}
	list, err := old.Do("CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(list) {
		if strings.Contains(line, " name="+name+" ") {
			t.Errorf("a %s connection is open on the demoted primary: %s", name, strings.TrimSpace(line))
		}
	}
}

// switchWatch subscribes to a sentinel's +switch-master and records when
// each arrives.
type switchWatch struct {
	sub *pubsub.Subscription
	at  chan time.Time
}

func watchSwitch(t *testing.T, ctx context.Context, s *servertest.Server) *switchWatch {
	t.Helper()
	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: s.Addr, Protocol: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	if err := sub.Subscribe(ctx, "+switch-master"); err != nil {
		t.Fatal(err)
	}
	w := &switchWatch{sub: sub, at: make(chan time.Time, 8)}
	go func() {
		for {
			if _, err := sub.Receive(ctx); err != nil {
				if errors.Is(err, pubsub.ErrGap) {
					continue
				}
				return
			}
			w.at <- time.Now()
		}
	}()
	return w
}

// settled returns the primary the sentinels have once the test's writes
// stopped, and whether they failed over again after the fault's switch to
// now (another +switch-master, or another node named): a second failover
// was not the test's, so the outage bound and SENTINEL FAILOVER's zero
// loss (an unplanned failover loses what replication had not copied) are
// then printed, not asserted; that the client followed it is asserted.
func settled(t *testing.T, set *servertest.SentinelSet, now *servertest.Server, sw *switchWatch) (*servertest.Server, bool) {
	t.Helper()
	final, err := set.WaitCurrent()
	if err != nil {
		t.Fatal(err)
	}
	again := final != now || len(sw.at) > 0
	if again {
		t.Logf("the sentinels failed over again after the switch to %s: the primary is now %s (%d more +switch-master seen); the outage bound and the zero loss of SENTINEL FAILOVER are not asserted", now.Addr, final.Addr, len(sw.at))
	}
	return final, again
}

// writers is 64 goroutines of INCR through one sentinel.Client, each on
// a key of its own, recording every value acknowledged and when.
type writers struct {
	acks      [64][]ack
	ambiguous [64]int // failed after it may have run (conn.ErrBroken)
	refused   atomic.Int64
	total     atomic.Int64
	stop      chan struct{}
	wg        sync.WaitGroup
}

type ack struct {
	v  int64
	at time.Time
}

func startWriters(ctx context.Context, cl *sentinel.Client) *writers {
	w := &writers{stop: make(chan struct{})}
	for g := range w.acks {
		w.wg.Go(func() {
			key := "w:" + strconv.Itoa(g)
			for {
				select {
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				v, err := cl.Do(ctx, "INCR", key)
				switch {
				case err == nil:
					w.acks[g] = append(w.acks[g], ack{v.Int, time.Now()})
					w.total.Add(1)
				case unsent(err):
					w.refused.Add(1)
					select { // no primary yet: pace the retries
					case <-w.stop:
						return
					case <-time.After(time.Millisecond):
					}
				default:
					w.ambiguous[g]++
				}
			}
		})
	}
	return w
}

// waitAcked waits for n more acknowledged writes.
func (w *writers) waitAcked(t *testing.T, ctx context.Context, n int64) {
	t.Helper()
	want := w.total.Load() + n
	waitUntil(t, ctx, "acknowledged writes", func() bool { return w.total.Load() >= want })
}

// TestSentinelFailoverWrites and TestSentinelKillWrites: 64 goroutines of
// writes through a sentinel.Client while the master set fails over.
// Every write acknowledged is on the new primary (asserted for SENTINEL
// FAILOVER; for kill -9 what asynchronous replication lost is measured
// and printed), none went to the demoted primary, and the writes came
// back within the sentinels' failover time (fault to +switch-master,
// from the sentinel's own event) plus one backoff.
func TestSentinelFailoverWrites(t *testing.T) { testWritesAcross(t, sentinelFailover) }

func TestSentinelKillWrites(t *testing.T) { testWritesAcross(t, killPrimary) }

func testWritesAcross(t *testing.T, f fault) {
	set := startSentinels(t)
	ctx := testCtx(t)
	o, err := sentinel.ParseURL(sentinelURL(set, "redis+sentinel"))
	if err != nil {
		t.Fatal(err)
	}
	o.ClientName = "writer"
	cl, err := sentinel.NewClient(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sw := watchSwitch(t, ctx, set.Sentinels[1])
	w := startWriters(ctx, cl)
	w.waitAcked(t, ctx, 2000)
	old, now, faultAt := failOver(t, set, f)
	var switched time.Time
	select {
	case switched = <-sw.at:
	case <-ctx.Done():
		t.Fatal("no +switch-master from the sentinel")
	}
	// The client follows the primary the sentinels have now: now, or
	// another node when they failed over again (a loaded machine can
	// starve the new primary past down-after-milliseconds).
	waitUntil(t, ctx, "the client on the sentinels' primary", func() bool {
		cur, err := set.Current()
		return err == nil && cl.MasterSet().Primary() == cur.Addr
	})
	w.waitAcked(t, ctx, 2000)
	close(w.stop)
	w.wg.Wait()
	final, again := settled(t, set, now, sw)

	// Every goroutine wrote again after the switch (the events' order),
	// and the longest time without an acknowledged write is within the
	// failover time (the fault to the sentinel's +switch-master) plus one
	// backoff, a sentinel question and the machine's slack. (The writes
	// may come back before the announcement: the MasterSet follows the
	// promoted replica as soon as it answers master.)
	var all []time.Time
	for g := range w.acks {
		if last := w.acks[g][len(w.acks[g])-1].at; !last.After(switched) {
			t.Errorf("goroutine %d: no write acknowledged after +switch-master", g)
		}
		for _, a := range w.acks[g] {
			all = append(all, a.at)
		}
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	var gapStart, gapEnd time.Time
	for i := 1; i < len(all); i++ {
		if all[i].Sub(all[i-1]) > gapEnd.Sub(gapStart) {
			gapStart, gapEnd = all[i-1], all[i]
		}
	}
	t.Logf("%v: failover time (fault to +switch-master) %v; writes stopped %v after the fault, for %v, and came back %v after +switch-master (bound: the failover time + backoff %v + sentinel timeout %v + 1s slack)",
		f, switched.Sub(faultAt).Round(time.Millisecond), gapStart.Sub(faultAt).Round(time.Millisecond),
		gapEnd.Sub(gapStart).Round(time.Millisecond), gapEnd.Sub(switched).Round(time.Millisecond), maxBackoff, sentTimeout)
	failoverTime := switched.Sub(faultAt)
	if outage := gapEnd.Sub(gapStart); !again && outage > failoverTime+maxBackoff+sentTimeout+time.Second {
		t.Errorf("no write acknowledged for %v: more than the failover time %v plus one backoff", outage, failoverTime)
	}

	// Every acknowledged write is on the new primary: a value
	// acknowledged above the key's final value was lost.
	var lost, acked, ambiguous int64
	for g := range w.acks {
		got, err := final.Do("GET", "w:"+strconv.Itoa(g))
		if err != nil {
			t.Fatal(err)
		}
		final, _ := strconv.ParseInt(got, 10, 64)
		n := int64(len(w.acks[g]))
		acked += n
		ambiguous += int64(w.ambiguous[g])
		if final > n+int64(w.ambiguous[g]) {
			t.Errorf("w:%d is %d: more than %d acknowledged + %d ambiguous", g, final, n, w.ambiguous[g])
		}
		for _, a := range w.acks[g] {
			if a.v > final {
				lost++
			}
		}
	}
	t.Logf("%v: %d writes acknowledged, %d ambiguous (connection broke), %d refused unsent; acknowledged writes lost (asynchronous replication): %d",
		f, acked, ambiguous, w.refused.Load(), lost)
	if f == sentinelFailover && lost != 0 && !again {
		t.Errorf("SENTINEL FAILOVER lost %d acknowledged writes", lost)
	}
	if final != old { // a second failover may have made it the primary again
		assertNoWritesTo(t, old, "writer")
	}
}

// TestSentinelFailoverE2E and TestSentinelKillE2E: emqbench e2e
// -failover through the sentinel URL while the master set fails over:
// every job acknowledged by its enqueue completes once (none lost, none
// completed twice: a stale handler's completion is fenced out, or its
// job reaped and run again), for SENTINEL FAILOVER; for kill -9 what
// asynchronous replication lost is printed. The run lasts until it has
// run on the new primary (-after-switch: e2eAfterSwitch jobs acknowledged
// once the master set named it, however long the failover takes, within
// -switch-within), which the new primary's own count of EVALSHA confirms.
// The demoted primary receives no write.
func TestSentinelFailoverE2E(t *testing.T) { testE2EAcross(t, sentinelFailover) }

func TestSentinelKillE2E(t *testing.T) { testE2EAcross(t, killPrimary) }

// e2eAfterSwitch is how many jobs testE2EAcross's run has acknowledged
// on the new primary before it stops producing: 2 s at its rate.
const e2eAfterSwitch = 6000

func testE2EAcross(t *testing.T, f fault) {
	set := startSentinels(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second) // -switch-within and the drain
	defer cancel()
	first := set.Data[0]
	type result struct {
		code      int
		out, errs string
	}
	res := make(chan result, 1)
	go func() {
		code, out, errs := runArgs("-url", sentinelURL(set, "redis+sentinel"), "-json", "-failover",
			"-producers", "2", "-conns", "2", "-goroutines", "16", "-depth", "50", "-n", "6000", "-rate", "3000",
			"-after-switch", strconv.Itoa(e2eAfterSwitch), "-switch-within", "90s", "e2e")
		res <- result{code, out, errs}
	}()
	// The failover comes once the run has made jobs and completed some.
	waitUntil(t, ctx, "e2e running", func() bool {
		info, err := first.Do("INFO", "commandstats")
		return err == nil && parseCallsOf(info, "evalsha") > 200
	})
	old, now, _ := failOver(t, set, f)
	assertNoWritesTo(t, old, "emqbench")
	var r result
	select {
	case r = <-res:
	case <-ctx.Done():
		t.Fatal("e2e did not end")
	}
	var rep report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || rep.E2E == nil || rep.E2E.Failover == nil {
		t.Fatalf("e2e: exit %d, stderr %q, %v", r.code, r.errs, err)
	}
	x, fo := rep.E2E, rep.E2E.Failover
	// It ran on the new primary: the run counted the jobs acknowledged
	// after the switch, and the new primary ran at least their enqueue
	// calls (-depth 50 jobs each) itself: a replica runs no EVALSHA
	// (scripts replicate as their effects).
	// The sentinels may have failed over again (a starved node): the
	// primaries since old ran the EVALSHA calls (a replica runs none).
	final, err := set.WaitCurrent()
	if err != nil {
		t.Fatal(err)
	}
	again := final != now
	ran := parseCallsOf(must(t, now, "INFO", "commandstats"), "evalsha")
	if again {
		ran += parseCallsOf(must(t, final, "INFO", "commandstats"), "evalsha")
		t.Logf("the sentinels failed over again after the switch to %s: the primary is now %s; SENTINEL FAILOVER's zero loss is not asserted", now.Addr, final.Addr)
	}
	if fo.NewPrimary == "" || fo.AfterSwitch < e2eAfterSwitch || ran < e2eAfterSwitch/50 {
		t.Fatalf("e2e ended before it ran on the new primary %s: its master set named %q, %d jobs acknowledged after the switch (want %d), the new primary ran %d EVALSHA (want %d or more); exit %d, stderr %q\n%s",
			now.Addr, fo.NewPrimary, fo.AfterSwitch, e2eAfterSwitch, ran, e2eAfterSwitch/50, r.code, r.errs, r.out)
	}
	t.Logf("%v under e2e: exit %d; enqueued (acknowledged) %d, completed %d, lost %d, duplicates %d, extra runs %d; %+v",
		f, r.code, x.Enqueued, x.Completed, x.Lost, x.Duplicates, x.ExtraRuns, *fo)
	if fo.Left != 0 {
		t.Errorf("%d jobs left in the queue", fo.Left)
	}
	if fo.FirstPrimary != first.Addr || fo.AmbiguousCompleted > fo.AmbiguousJobs {
		t.Errorf("report: first primary %q (want %s), %d ambiguous jobs seen completed of %d", fo.FirstPrimary, first.Addr, fo.AmbiguousCompleted, fo.AmbiguousJobs)
	}
	if f == killPrimary && r.code != exitOK && x.Lost == 0 && x.Duplicates == 0 {
		t.Errorf("kill -9 under e2e: exit %d with nothing lost or doubled: %s", r.code, r.errs)
	}
	if f == sentinelFailover && !again && (r.code != exitOK || x.Lost != 0 || x.Duplicates != 0) {
		t.Errorf("SENTINEL FAILOVER under e2e: exit %d (%s), %d jobs lost, %d duplicates", r.code, r.errs, x.Lost, x.Duplicates)
	}
	if f == killPrimary && r.code != exitOK {
		t.Logf("kill -9: lost to asynchronous replication: %d jobs lost, %d completed twice (%s)", x.Lost, x.Duplicates, r.errs)
	}
	if final != old { // a second failover may have made it the primary again
		assertNoWritesTo(t, old, "emqbench")
	}
}

// TestSentinelAfterSwitchDeadline: e2e -after-switch through a sentinel
// URL whose master set never fails over goes on past -n until
// -switch-within, then stops producing, drains what it enqueued (none
// lost, none doubled) and fails with a message that says no failover
// came, naming the primary.
func TestSentinelAfterSwitchDeadline(t *testing.T) {
	set := startSentinels(t)
	code, out, errs := runArgs("-url", sentinelURL(set, "redis+sentinel"), "-json", "-failover",
		"-n", "300", "-rate", "1000", "-after-switch", "100", "-switch-within", "1s", "e2e")
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.E2E == nil || rep.E2E.Failover == nil {
		t.Fatalf("e2e: exit %d, stderr %q, %v", code, errs, err)
	}
	x, fo := rep.E2E, rep.E2E.Failover
	want := "-after-switch 100: the master set's primary stayed " + set.Data[0].Addr + " for 1s (-switch-within): no failover to run across"
	if code != exitFailed || !strings.Contains(errs, want) || rep.Error != want {
		t.Errorf("exit %d, stderr %q, error %q; want exit %d and %q", code, errs, rep.Error, exitFailed, want)
	}
	// It went on past -n (300 jobs at 1,000/s: 0.3 s) for the second.
	if x.Enqueued <= 300 || x.Lost != 0 || x.Duplicates != 0 || fo.Left != 0 || fo.AfterSwitch != 0 || fo.NewPrimary != "" {
		t.Errorf("enqueued %d, lost %d, duplicates %d; %+v", x.Enqueued, x.Lost, x.Duplicates, *fo)
	}
}

// must is s.Do, failing the test on an error.
func must(t *testing.T, s *servertest.Server, args ...string) string {
	t.Helper()
	v, err := s.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// parseCallsOf reads cmdstat_<name>'s calls from INFO commandstats text.
func parseCallsOf(info, name string) int64 {
	for field := range strings.SplitSeq(infoField(info, "cmdstat_"+name), ",") {
		if v, ok := strings.CutPrefix(field, "calls="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
