package jobs

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// childEnv names the role of a child process of these tests (the test
// binary run again); its other settings come in childAddr, childQueue and
// childArg.
const (
	childEnv   = "ECHOMQ_JOBS_CHILD"
	childAddr  = "ECHOMQ_JOBS_ADDR"
	childQueue = "ECHOMQ_JOBS_QUEUE"
	childArg   = "ECHOMQ_JOBS_ARG"
)

// startServer starts a private server for one test (this package's
// TestMain, if any, is not ours to own), stopped at its end. Without a
// server binary the test is skipped, or fails under CI=true.
func startServer(t *testing.T) *servertest.Server {
	t.Helper()
	s, err := servertest.Start(servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// processTest starts a long test of many processes: skipped under
// -short, its own server, a context bounded by d, and queue name.
func processTest(t *testing.T, name string, d time.Duration) (*servertest.Server, context.Context, *emq.Queue) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short")
	}
	return serverTest(t, name, d)
}

// serverTest gives a test its own server, a context bounded by d, and
// queue name.
func serverTest(t *testing.T, name string, d time.Duration) (*servertest.Server, context.Context, *emq.Queue) {
	t.Helper()
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return srv, ctx, openAddrQueue(t, ctx, srv.Addr, name)
}

// openAddrQueue dials addr and opens queue name (scripts, whatever the server).
func openAddrQueue(t testing.TB, ctx context.Context, addr, name string) *emq.Queue {
	t.Helper()
	c, err := conn.Dial(ctx, conn.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	q, err := emq.Open(ctx, c, name, emq.WithExecutorChoice(emq.ExecutorScript))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// child is a running child process: it lives until killed, or until its
// stdin (held by the parent) closes.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startChild runs this test binary again as a child of the given role.
func startChild(t *testing.T, test, role, addr, queue, arg string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+role, childAddr+"="+addr, childQueue+"="+queue, childArg+"="+arg)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &child{cmd: cmd, stdin: in}
}

// kill ends the child at once (SIGKILL) and reaps it.
func (c *child) kill() {
	c.cmd.Process.Kill()
	c.stdin.Close()
	c.cmd.Wait()
}

// childContext is the context of a child process's work: it ends when
// the parent closes stdin (or dies).
func childContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		cancel()
	}()
	return ctx
}

// The schedule every cron child registers: a slot each 20 ms, every
// missed slot caught up.
const (
	cronName  = "tick"
	cronEvery = 20 * time.Millisecond
	cronSpec  = "@every 20ms"
)

// TestCronChild is a scheduler process of TestSchedulerManyProcesses, its
// clock skewed by childArg ms; run alone it skips.
func TestCronChild(t *testing.T) {
	if os.Getenv(childEnv) != "cron" {
		t.Skip("a child process of TestSchedulerManyProcesses")
	}
	ctx := childContext()
	skew, _ := strconv.Atoi(os.Getenv(childArg))
	q := openAddrQueue(t, ctx, os.Getenv(childAddr), os.Getenv(childQueue))
	sc := NewScheduler(SchedulerOptions{
		Now:   func() time.Time { return time.Now().Add(time.Duration(skew) * time.Millisecond) },
		Retry: 10 * time.Millisecond,
	})
	if err := sc.Register(Schedule{Name: cronName, Spec: cronSpec, Queue: q, Payload: []byte("tick"), CatchUp: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	sc.Run(ctx)
}

// TestSchedulerManyProcesses: 5 scheduler processes, clocks skewed by up
// to 2 s each way, killed (SIGKILL) and restarted at random, fire one
// schedule of a slot every 20 ms over more than 1,000 slots, while a
// consumer claims and deletes its jobs (so an id cannot hide a second
// enqueue of a slot). Every slot from the first to the last is enqueued
// exactly once: read from the jobs the consumer claimed and what is left
// in the queue.
func TestSchedulerManyProcesses(t *testing.T) {
	srv, ctx, q := processTest(t, "cron", 5*time.Minute)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	skew := func() string { return strconv.Itoa(rng.IntN(4001) - 2000) }
	const procs, wantSlots = 5, 1000
	children := make([]*child, procs)
	for i := range children {
		children[i] = startChild(t, "TestCronChild", "cron", srv.Addr, "cron", skew())
	}
	defer func() {
		for _, c := range children {
			if c != nil {
				c.kill()
			}
		}
	}()

	// The consumer: every job claimed is counted by its id, then deleted.
	claimed := map[string]int{}
	var mu sync.Mutex
	consumerCtx, stopConsumer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	consume := func(ctx context.Context) error {
		if _, err := q.Promote(ctx, 10000); err != nil {
			return err
		}
		jobs, err := q.ClaimBatch(ctx, time.Minute, 1000)
		if err != nil {
			return err
		}
		acks := make([]emq.Ack, len(jobs))
		mu.Lock()
		for i, j := range jobs {
			claimed[j.ID]++
			acks[i] = emq.Ack{ID: j.ID, Token: j.Token}
		}
		mu.Unlock()
		if len(acks) > 0 {
			_, err = q.CompleteBatch(ctx, acks, 0)
		}
		return err
	}
	wg.Go(func() {
		for consumerCtx.Err() == nil {
			if err := consume(consumerCtx); err != nil && consumerCtx.Err() == nil {
				t.Error(err)
				return
			}
			pause(consumerCtx, 5*time.Millisecond) // a consumer's poll
		}
	})

	// Kill and restart at random until the schedule has fired enough.
	first := time.Time{}
	kills := 0
	for {
		last, ok, err := q.CronLast(ctx, []string{cronName})
		if err != nil {
			t.Fatal(err)
		}
		if ok[0] && first.IsZero() {
			// The first reading may be the schedule's origin (CronStart),
			// a slot no job was enqueued for: the slots to check start
			// after it, or at the oldest job claimed (below).
			first = last[0].Add(cronEvery)
		}
		if ok[0] && last[0].Sub(first) >= (wantSlots+50)*cronEvery {
			break
		}
		// The next kill once the schedule fired 1 to 5 more slots (so
		// kills land between and during slots, paced by the firing).
		alive := 0
		for _, c := range children {
			if c != nil {
				alive++
			}
		}
		if ok[0] && alive > 0 {
			more := time.Duration(1+rng.IntN(5)) * cronEvery
			waitUntil(t, ctx, "the schedule to fire on", time.Millisecond, func() bool {
				l, ok, err := q.CronLast(ctx, []string{cronName})
				return err != nil || !ok[0] || l[0].Sub(last[0]) >= more
			})
		} else {
			pause(ctx, time.Duration(1+rng.IntN(5))*cronEvery) // none runs: a while dead
		}
		i := rng.IntN(procs)
		if children[i] != nil {
			children[i].kill()
			children[i] = nil
			kills++
		}
		if rng.IntN(3) > 0 { // leave some dead a while; restart others now
			for k := range children {
				if children[k] == nil && (k == i) == (rng.IntN(2) == 0) {
					children[k] = startChild(t, "TestCronChild", "cron", srv.Addr, "cron", skew())
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the schedule did not reach its slots in time")
		}
	}
	for i, c := range children {
		if c != nil {
			c.kill()
			children[i] = nil
		}
	}
	// Drain: the early slots wait in delayed until their time.
	for {
		if err := consume(ctx); err != nil {
			t.Fatal(err)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending+st.Delayed+st.Active == 0 {
			break
		}
		pause(ctx, 20*time.Millisecond) // the next slot's time
	}
	stopConsumer()
	wg.Wait()

	last, _, err := q.CronLast(ctx, []string{cronName})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The first slot is the oldest claimed (the first poll may come after it).
	for id := range claimed {
		_, sf, err := emq.ParseID(id)
		if err != nil {
			t.Fatal(err)
		}
		if at := emq.SnowflakeTime(sf); at.Before(first) {
			first = at
		}
	}
	byID := map[string]time.Time{}
	for s := first; !s.After(last[0]); s = s.Add(cronEvery) {
		id, err := emq.CronID(cronName, s)
		if err != nil {
			t.Fatal(err)
		}
		byID[id] = s
		if n := claimed[id]; n != 1 {
			t.Errorf("slot %s enqueued %d times (first %s last %s)", s.Format("15:04:05.000"), n, first.Format("15:04:05.000"), last[0].Format("15:04:05.000"))
		}
	}
	for id, n := range claimed {
		if _, ok := byID[id]; !ok {
			t.Errorf("job %s (x%d) of no slot in [%v, %v]", id, n, first, last[0])
		}
	}
	slots := len(byID)
	t.Logf("%d slots, %d jobs claimed, %d kills", slots, len(claimed), kills)
	if slots < wantSlots {
		t.Fatalf("%d slots, want %d", slots, wantSlots)
	}
}

// TestSchedulerLifecycle: Run fires the schedules (one job per slot, the
// slot's id), Shutdown stops it and waits for its goroutines, and Run
// returns nil; Register refuses duplicates and late schedules, Run a
// second start.
func TestSchedulerLifecycle(t *testing.T) {
	_, ctx, q := serverTest(t, "life", time.Minute)
	fired := make(chan string, 100)
	sc := NewScheduler(SchedulerOptions{OnFire: func(s *Schedule, slot time.Time, id string, f emq.CronFired) {
		if want, _ := emq.CronID(s.Name, slot); want != id || !f.Fired() {
			t.Errorf("slot %v fired as %s (%v), want %s", slot, id, f, want)
		}
		fired <- id
	}})
	s := Schedule{Name: "fast", Spec: "@every 10ms", Queue: q, Payload: []byte("p")}
	if err := sc.Register(s); err != nil {
		t.Fatal(err)
	}
	if err := sc.Register(s); !errors.Is(err, ErrScheduler) {
		t.Fatalf("duplicate: %v", err)
	}
	ran := make(chan error, 1)
	go func() { ran <- sc.Run(ctx) }()
	var ids []string
	for len(ids) < 3 {
		ids = append(ids, <-fired)
	}
	if err := sc.Register(Schedule{Name: "late", Spec: "@hourly", Queue: q}); !errors.Is(err, ErrScheduler) {
		t.Fatalf("late: %v", err)
	}
	if err := sc.Run(ctx); !errors.Is(err, ErrScheduler) {
		t.Fatalf("second Run: %v", err)
	}
	if err := sc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	close(fired) // a fire after Shutdown returned would panic here
	for _, id := range ids {
		if st, err := q.Browse(ctx, emq.StatePending, 0, 100); err != nil || !slices.ContainsFunc(st, func(j emq.JobInfo) bool { return j.ID == id }) {
			t.Fatalf("job %s not pending: %v", id, err)
		}
	}
	if err := sc.Run(ctx); !errors.Is(err, ErrSchedulerClosed) {
		t.Fatalf("Run after Shutdown: %v", err)
	}
}

// TestSchedulerStartSkewed: two schedulers start a new schedule, the
// first on a clock ahead, the second behind; the second fires first. No
// slot between the second's first slot and the first's start is missed:
// the first scheduler to start gives the schedule its origin on the
// server, and the other catches up from it. (Before, each started from
// its own clock, and the slots between the two starts were never fired.)
func TestSchedulerStartSkewed(t *testing.T) {
	_, ctx, q := serverTest(t, "skew", time.Minute)
	const every = 20 * time.Millisecond
	reached, release := make(chan struct{}), make(chan struct{})
	var calls int
	aheadNow := func() time.Time {
		calls++         // only the scheduler's loop goroutine calls it after Register
		if calls == 3 { // the loop's first look, after the start
			close(reached)
			<-release
		}
		return time.Now().Add(500 * time.Millisecond)
	}
	firedA := make(chan struct{}, 1000)
	fired := make(chan struct{}, 1000)
	ahead := NewScheduler(SchedulerOptions{Now: aheadNow, OnFire: func(*Schedule, time.Time, string, emq.CronFired) { fired <- struct{}{} }})
	behind := NewScheduler(SchedulerOptions{
		Now:    func() time.Time { return time.Now().Add(-500 * time.Millisecond) },
		OnFire: func(*Schedule, time.Time, string, emq.CronFired) { firedA <- struct{}{} },
	})
	for _, sc := range []*Scheduler{ahead, behind} {
		if err := sc.Register(Schedule{Name: "s", Spec: "@every 20ms", Queue: q, CatchUp: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { ahead.Run(ctx) })
	<-reached
	wg.Go(func() { behind.Run(ctx) })
	<-firedA
	close(release)
	for range 10 { // the ahead scheduler's turn
		<-fired
	}
	ahead.Shutdown(ctx)
	behind.Shutdown(ctx)
	wg.Wait()

	var ids []string
	for _, set := range []emq.State{emq.StatePending, emq.StateDelayed} {
		page, err := q.Browse(ctx, set, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page {
			ids = append(ids, j.ID)
		}
	}
	var first time.Time
	for _, id := range ids {
		_, sf, _ := emq.ParseID(id)
		if at := emq.SnowflakeTime(sf); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	last, _, err := q.CronLast(ctx, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s := first; !s.After(last[0]); s = s.Add(every) {
		id, _ := emq.CronID("s", s)
		if !slices.Contains(ids, id) {
			t.Fatalf("slot %s missing (slots %s to %s)", s.Format("15:04:05.000"), first.Format("15:04:05.000"), last[0].Format("15:04:05.000"))
		}
		n++
	}
	if n != len(ids) {
		t.Fatalf("%d jobs for %d slots", len(ids), n)
	}
}

// TestSchedulerLongCatchUp: after a long stop the missed slots are caught
// up (at most CatchUp of them), 1,000 to a call, oldest first, each once.
func TestSchedulerLongCatchUp(t *testing.T) {
	srv, ctx, q := serverTest(t, "long", time.Minute)
	const every = 10 * time.Millisecond
	start := time.Now().Truncate(every).Add(-2500 * every)
	if _, err := q.CronStart(ctx, "s", start); err != nil {
		t.Fatal(err)
	}
	// Load the script first, so that the calls counted are the catch-up's.
	if _, err := q.CronFire(ctx, "other", nil, time.Minute, []time.Time{start}); err != nil {
		t.Fatal(err)
	}
	srv.ResetStats(t)
	frozen := start.Add(2500*every + every/2) // no slot comes while the test runs
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	sc := NewScheduler(SchedulerOptions{Now: func() time.Time { return frozen }, OnFire: func(_ *Schedule, slot time.Time, id string, _ emq.CronFired) {
		mu.Lock()
		defer mu.Unlock()
		if seen[id] {
			t.Errorf("slot %v fired twice", slot)
		}
		seen[id] = true
		if len(seen) == 2401 { // CatchUp missed slots and the latest
			close(done)
		}
	}})
	if err := sc.Register(Schedule{Name: "s", Spec: "@every 10ms", Queue: q, CatchUp: 2400}); err != nil {
		t.Fatal(err)
	}
	go sc.Run(ctx)
	<-done
	if err := sc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := srv.CommandCalls(t, "evalsha") + srv.CommandCalls(t, "eval"); calls != 3 {
		t.Fatalf("%d calls for 2,401 slots, want 3", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	// The oldest slots beyond CatchUp+1 before the first call were skipped.
	for k, want := range map[int]bool{1: false, 99: false, 100: true, 2500: true} {
		if id, _ := emq.CronID("s", start.Add(time.Duration(k)*every)); seen[id] != want {
			t.Fatalf("slot %d of 2,500 missed: fired %v, want %v", k, seen[id], want)
		}
	}
}
