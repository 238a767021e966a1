package conn_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// The adversary's tests of issue 15's blocking-call fixes: many callers
// cancelled at random moments while a producer pushes at full rate, with
// fewer lent connections than callers. Every element pushed is counted:
// popped and returned to a caller, or still on the server; never both,
// never neither, never returned twice.

// tally records the elements callers were given.
type tally struct {
	mu       sync.Mutex
	got      map[string]int // element → times a caller was given it
	moved    map[string]int // BLMOVE's elements, by the caller's reply
	won      int            // cancelled calls whose reply won the race
	canceled int            // calls that returned ctx's error
	nullOK   int            // calls that returned no error and no element
	other    []error
}

func newTally() *tally { return &tally{got: map[string]int{}, moved: map[string]int{}} }

func (t *tally) add(m map[string]int, elem string, cancelled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m[elem]++
	if cancelled {
		t.won++
	}
}

func (t *tally) result(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == nil:
		t.nullOK++
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		t.canceled++
	default:
		t.other = append(t.other, err)
	}
}

// randomCancel returns a ctx cancelled after 0 to 3 ms, or right away.
func randomCancel(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	if d := time.Duration(rand.IntN(3000)) * time.Microsecond; d < 200*time.Microsecond {
		go cancel()
	} else {
		time.AfterFunc(d, cancel)
	}
	return ctx, cancel
}

// checkAccounting asserts that every element pushed was returned exactly
// once or is still on the server, and that what BLMOVE moved was returned.
func checkAccounting(t *testing.T, pushed []string, tl *tally, left, dst []string) {
	t.Helper()
	onServer := map[string]int{}
	for _, e := range left {
		onServer[e]++
	}
	inDst := map[string]int{}
	for _, e := range dst {
		inDst[e]++
	}
	lost, dup, movedForNobody := 0, 0, 0
	var examples []string
	for _, e := range pushed {
		n := tl.got[e] + tl.moved[e] + onServer[e]
		switch {
		case n == 0 && inDst[e] == 1:
			movedForNobody++
			examples = append(examples, e+": moved to the destination, never returned")
		case n == 0:
			lost++
			examples = append(examples, e+": neither returned nor on the server")
		case n > 1:
			dup++
			examples = append(examples, fmt.Sprintf("%s: returned %d, moved %d, on the server %d", e, tl.got[e], tl.moved[e], onServer[e]))
		}
		if tl.moved[e] != inDst[e] {
			examples = append(examples, fmt.Sprintf("%s: BLMOVE returned it %d times, in the destination %d times", e, tl.moved[e], inDst[e]))
		}
	}
	if len(examples) > 10 {
		examples = examples[:10]
	}
	require.Empty(t, tl.other, "errors other than ctx's")
	require.Zerof(t, lost+dup+movedForNobody, "%d lost, %d duplicated, %d moved for nobody: %v", lost, dup, movedForNobody, examples)
	require.Empty(t, examples)
}

// Many callers (more than BlockingConns) run BLPOP, BRPOP, BLMOVE and
// BZPOPMIN without timeouts, each cancelled at a random moment, while a
// producer pushes at full rate: no element is lost, moved for nobody or
// returned twice, and afterwards no command is still blocked.
func TestAdversaryCancelledPopsUnderLoad(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			s := startServer(t, servertest.Options{})
			ctx := testCtx(t)
			cl, err := conn.NewClient(ctx, conn.Options{Addr: s.Addr, Protocol: proto, BlockingConns: 3})
			require.NoError(t, err)
			defer cl.Close()
			prod, err := conn.NewClient(ctx, conn.Options{Addr: s.Addr})
			require.NoError(t, err)
			defer prod.Close()

			const callers, calls, elems = 12, 100, 1500
			tl := newTally()
			var pushed []string
			var zpushed []string
			producerDone := make(chan error, 1)
			go func() {
				for i := range elems {
					e := "e" + strconv.Itoa(i)
					pushed = append(pushed, e)
					var b pipeline.Batch
					b.Add("RPUSH", "q", e)
					if i%3 == 0 {
						m := "m" + strconv.Itoa(i)
						zpushed = append(zpushed, m)
						b.Add("ZADD", "z", strconv.Itoa(i), m)
					}
					if err := b.Exec(ctx, prod); err != nil {
						producerDone <- err
						return
					}
				}
				producerDone <- nil
			}()
			var wg sync.WaitGroup
			for g := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range calls {
						cctx, cancel := randomCancel(ctx)
						var args []any
						switch (g + i) % 4 {
						case 0:
							args = []any{"BLPOP", "q", "0"}
						case 1:
							args = []any{"BRPOP", "q", "0"}
						case 2:
							args = []any{"BLMOVE", "q", "dst", "LEFT", "RIGHT", "0"}
						case 3:
							args = []any{"BZPOPMIN", "z", "0"}
						}
						v, err := cl.Do(cctx, args...)
						cancelled := cctx.Err() != nil
						cancel()
						switch {
						case err != nil:
							tl.result(fmt.Errorf("%v (ctx ended: %v): %w", args, cancelled, err))
						case v.IsNull():
							tl.result(nil)
						case args[0] == "BLMOVE":
							tl.add(tl.moved, v.Text(), cancelled)
						default:
							tl.add(tl.got, v.Elems[1].Text(), cancelled)
						}
					}
				}()
			}
			wg.Wait()
			require.NoError(t, <-producerDone)
			waitFor(t, "no command blocked", func() bool {
				info, _ := s.Do("INFO", "clients")
				return strings.Contains(info, "blocked_clients:0\r\n")
			})
			left := listOf(t, s, "LRANGE", "q", "0", "-1")
			dst := listOf(t, s, "LRANGE", "dst", "0", "-1")
			zleft := listOf(t, s, "ZRANGE", "z", "0", "-1")
			t.Logf("%d calls: %d elements returned (%d after their ctx ended), %d moved, %d cancelled, %d empty replies without error; %d left",
				callers*calls, len(tl.got), tl.won, len(tl.moved), tl.canceled, tl.nullOK, len(left)+len(zleft))
			checkAccounting(t, append(pushed, zpushed...), tl, append(left, zleft...), dst)
			require.Zero(t, tl.nullOK, "a call without a timeout returned an empty reply and no error")
			// The pool still works.
			_, err = s.Do("RPUSH", "after-q", "after")
			require.NoError(t, err)
			v, err := cl.Do(ctx, "BLPOP", "after-q", "0")
			require.NoError(t, err)
			require.Equal(t, "after", v.Elems[1].Text())
		})
	}
}

// listOf runs a command whose reply is a list and splits it.
func listOf(t *testing.T, s *servertest.Server, args ...string) []string {
	t.Helper()
	out, err := s.Do(args...)
	require.NoError(t, err)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// A Dial whose ctx ends at a random moment either fails with an error
// matching ctx's or returns a connection that works: the handshake's
// cancellation must not leave a deadline in the past on the socket (its
// AfterFunc racing the deferred reset), which broke a later write with
// "i/o timeout", seen as ErrBroken on blocking calls whose ctx had not
// ended in TestAdversaryCancelledPopsUnderLoad; and a dial cut short by
// ctx said "i/o timeout" rather than context.Canceled. Several dialers
// at once, so that the race's window is hit.
func TestAdversaryDialCancelled(t *testing.T) {
	needServer(t)
	for _, proto := range []int{3, 2} {
		var mu sync.Mutex
		ok, broken, notCtx := 0, 0, 0
		var firstBroken, firstNotCtx error
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 150 {
					ctx, cancel := context.WithCancel(context.Background())
					if i%2 == 0 {
						go cancel()
					} else {
						time.AfterFunc(time.Duration(rand.IntN(1500))*time.Microsecond, cancel)
					}
					c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr, Protocol: proto, ClientName: "dialer"})
					cancel()
					if err != nil {
						if !errors.Is(err, context.Canceled) {
							mu.Lock()
							notCtx++
							firstNotCtx = err
							mu.Unlock()
						}
						continue
					}
					_, err = c.Do(testCtx(t), "PING")
					c.Close()
					mu.Lock()
					ok++
					if err != nil {
						broken++
						firstBroken = err
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		t.Logf("RESP%d: %d dials succeeded, %d of them broken at their first command; %d failed with an error not matching ctx's", proto, ok, broken, notCtx)
		require.Zerof(t, broken, "RESP%d: a dialled connection failed its first command: %v", proto, firstBroken)
		require.Zerof(t, notCtx, "RESP%d: a dial cut short by its ctx: %v", proto, firstNotCtx)
	}
}

// lateCancel wraps a real connection: its first Read that returns bytes
// (the handshake's reply) cancels the dial's ctx before returning, and a
// deadline in the past set after that is held back until the connection's
// first Write after the handshake: the order in which the handshake's
// cancellation AfterFunc, started by the cancel but scheduled late on a
// loaded machine, loses the race with the deadline's reset.
type lateCancel struct {
	net.Conn
	cancel  context.CancelFunc
	once    sync.Once
	armed   atomic.Bool
	wrote   chan struct{} // closed at the first Write after the cancel
	wroteMu sync.Once
	held    atomic.Bool // a deadline in the past was held back
}

func (c *lateCancel) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.once.Do(func() { c.armed.Store(true); c.cancel() })
	}
	return n, err
}

func (c *lateCancel) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if c.armed.Load() {
		c.wroteMu.Do(func() { close(c.wrote) })
	}
	return n, err
}

func (c *lateCancel) SetDeadline(t time.Time) error {
	if c.armed.Load() && !t.IsZero() && t.Before(time.Now()) {
		c.held.Store(true)
		select {
		case <-c.wrote:
		case <-time.After(200 * time.Millisecond): // the fixed Dial waits for this one
		}
	}
	return c.Conn.SetDeadline(t)
}

// A dial whose ctx ends right after the handshake's reply was read: the
// connection returned, if any, works (no deadline in the past left on it).
func TestAdversaryDialCancelAfterHandshakeReply(t *testing.T) {
	needServer(t)
	for _, proto := range []int{3, 2} {
		ctx, cancel := context.WithCancel(context.Background())
		lc := &lateCancel{cancel: cancel, wrote: make(chan struct{})}
		c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr, Protocol: proto, ClientName: "late", Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			lc.Conn = nc
			return lc, nil
		}})
		cancel()
		t.Logf("RESP%d: dial: %v; the ctx ended after a read: %v", proto, err, lc.armed.Load())
		if err != nil {
			require.ErrorIs(t, err, context.Canceled, "RESP%d", proto)
			continue
		}
		for i := range 3 {
			_, err = c.Do(testCtx(t), "PING")
			require.NoError(t, err, "RESP%d: command %d on a connection whose dial's ctx ended after the handshake (a deadline in the past held: %v)", proto, i, lc.held.Load())
			time.Sleep(10 * time.Millisecond) // a late AfterFunc lands (the bug's order)
		}
		c.Close()
	}
}

// Under RESP2 the lent connection's CLIENT ID comes from CLIENT ID, which
// the caller's ctx may cut short: such a connection must not be lent, nor
// pooled, without its id, or the next caller who gives up on it has it
// closed instead of unblocked, and an element is popped for nobody (seen
// as lost elements in TestAdversaryCancelledPopsUnderLoad/RESP2).
func TestAdversaryLentConnKnowsItsID(t *testing.T) {
	needServer(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Protocol: 2, BlockingConns: 4})
	require.NoError(t, err)
	defer cl.Close()
	unknown := 0
	for i := range 1000 {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Duration(rand.IntN(400))*time.Microsecond, cancel)
		_, err := cl.Do(cctx, "BLPOP", "id-q-"+strconv.Itoa(i), "0")
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		for _, id := range cl.IdleIDs() {
			if id == 0 {
				unknown++
			}
		}
	}
	require.Zero(t, unknown, "idle lent connections without their CLIENT ID, over 1000 cancelled calls")
}

// Fifty blocking calls wait (eight on lent connections, the rest for a
// slot) when the server is killed: every one returns, with ErrBroken
// (it was sent) or ErrNotConnected (it was not: its lent connection's
// dial failed, which used to return the bare dial error), none with a
// reply; after a restart
// every slot lends again and a BLPOP works.
func TestAdversaryServerKilledUnderFiftyBlocked(t *testing.T) {
	s := startServer(t, servertest.Options{})
	ctx := testCtx(t)
	const slots, callers = 8, 50
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr: s.Addr, DialTimeout: 2 * time.Second,
		BlockingConns: slots,
		MinBackoff:    time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	defer cl.Close()
	ended := make(chan error, callers)
	for i := range callers {
		go func() {
			_, err := cl.Do(ctx, "BLPOP", "k"+strconv.Itoa(i%5), "0")
			ended <- err
		}()
	}
	waitFor(t, "eight BLPOPs blocked", func() bool {
		info, _ := s.Do("INFO", "clients")
		return strings.Contains(info, "blocked_clients:"+strconv.Itoa(slots)+"\r\n")
	})
	s.Kill()
	classes := map[string]int{}
	for i := range callers {
		select {
		case err := <-ended:
			require.Error(t, err, "call %d returned a reply from a killed server", i)
			require.True(t, errors.Is(err, conn.ErrBroken) || errors.Is(err, conn.ErrNotConnected),
				"a blocking call through a kill ended with %v: neither ErrBroken (it was sent) nor ErrNotConnected (it was not)", err)
			classes[errClass(err)]++
		case <-time.After(waitLong):
			t.Fatalf("%d of %d blocking calls never returned after the server was killed", callers-i, callers)
		}
	}
	t.Logf("50 blocking calls through a kill: %v", classes)
	require.GreaterOrEqual(t, classes["ErrBroken"], slots, "the blocked calls: %v", classes)
	require.NoError(t, s.Restart())
	var wg sync.WaitGroup
	var held sync.WaitGroup
	held.Add(slots)
	release := make(chan struct{})
	errs := make(chan error, slots)
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			for range 200 { // the first dials may meet the restart
				lent := false
				err = cl.Dedicated(ctx, func(c *conn.Conn) error {
					lent = true
					held.Done()
					<-release
					_, err := c.Do(ctx, "PING")
					return err
				})
				if lent || ctx.Err() != nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			errs <- err
		}()
	}
	held.Wait() // all eight slots lent at once
	close(release)
	wg.Wait()
	for range slots {
		require.NoError(t, <-errs)
	}
	_, err = s.Do("RPUSH", "k0", "after")
	require.NoError(t, err)
	v, err := cl.Do(ctx, "BLPOP", "k0", "0")
	require.NoError(t, err)
	require.Equal(t, "after", v.Elems[1].Text())
}

// Blocking calls cancelled at random moments while every connection
// (the shared one and the lent ones) is cut now and then by a proxy:
// every call returns; no element is returned twice; an element may be
// lost only by a call that ended with ErrBroken (its connection broke
// with the command on the server: it may have popped), never by a
// cancelled one.
func TestAdversaryCancelWhileCut(t *testing.T) {
	s := startServer(t, servertest.Options{})
	p := newProxy(t, s.Addr)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr:          p.Addr(),
		BlockingConns: 3,
		MinBackoff:    time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	defer cl.Close()
	const callers, calls, elems = 8, 40, 300
	var pushed []string
	produced := make(chan error, 1)
	go func() {
		for i := range elems {
			e := "e" + strconv.Itoa(i)
			if _, err := s.Do("RPUSH", "q", e); err != nil {
				produced <- err
				return
			}
			pushed = append(pushed, e)
			if i%25 == 0 {
				p.CutAll()
			}
		}
		produced <- nil
	}()
	var mu sync.Mutex
	got := map[string]int{}
	classes := map[string]int{}
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				cctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(time.Duration(rand.IntN(8000))*time.Microsecond, cancel)
				v, err := cl.Do(cctx, "BLPOP", "q", "0")
				cancel()
				mu.Lock()
				switch {
				case errors.Is(err, context.Canceled):
					classes["ctx"]++
				case err != nil:
					classes[errClass(err)]++
				case v.IsNull():
					classes["null"]++
				default:
					got[v.Elems[1].Text()]++
				}
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatal("blocking calls did not all return")
	}
	require.NoError(t, <-produced)
	waitFor(t, "no command blocked", func() bool {
		info, _ := s.Do("INFO", "clients")
		return strings.Contains(info, "blocked_clients:0\r\n")
	})
	left := map[string]bool{}
	for _, e := range listOf(t, s, "LRANGE", "q", "0", "-1") {
		left[e] = true
	}
	lost := 0
	for _, e := range pushed {
		n := got[e]
		require.LessOrEqual(t, n, 1, "%s returned %d times", e, n)
		if left[e] {
			require.Zero(t, n, "%s returned and still in the list", e)
			continue
		}
		if n == 0 {
			lost++
		}
	}
	t.Logf("%d calls through %d cuts: %d elements returned, %d lost, errors %v", callers*calls, elems/25, len(got), lost, classes)
	require.Zero(t, classes["null"], "a BLPOP without a timeout returned no element and no error")
	require.LessOrEqual(t, lost, classes["ErrBroken"], "elements lost beyond the calls whose connection broke (%v)", classes)
}

// A cancelled submission that pops with a plain command besides its
// blocking one ([LPOP has; BLPOP empty 0]): the BLPOP is unblocked, but
// the LPOP ran and popped: the call returns the replies, not ctx's error,
// or that element is popped for nobody. Likewise with a RPOPLPUSH and a
// non-blocking XREADGROUP beside the blocking command.
func TestAdversaryCancelledBatchWithPlainPop(t *testing.T) {
	needServer(t)
	srv.Flush(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, BlockingConns: 1})
	require.NoError(t, err)
	defer cl.Close()
	for i := range 10 {
		elem := "plain-" + strconv.Itoa(i)
		_, err := srv.Do("RPUSH", "has", elem)
		require.NoError(t, err)
		bctx, cancel := context.WithCancel(ctx)
		var b pipeline.Batch
		b.Add("LPOP", "has")
		b.Add("SET", "marker", elem)
		b.Add("BLPOP", "empty", "0")
		ended := make(chan error, 1)
		go func() { ended <- b.Exec(bctx, cl) }()
		waitBlocked(t, 1)
		cancel()
		err = <-ended
		require.NoError(t, err, "round %d: the LPOP popped %s, but the call returned ctx's error: the element is popped for nobody", i, elem)
		require.Equal(t, elem, b.Reply(0).Text())
		require.True(t, b.Reply(2).IsNull(), "the unblocked BLPOP: %v", b.Reply(2))
		waitBlocked(t, 0)
	}
}

// A Dedicated whose fn panics (a handler's panic that an HTTP server
// recovers, say) gives its slot back: with one slot, after three such
// panics, Dedicated and a blocking call still run. The panicking fn's
// connection, in an unknown state, is closed rather than reused.
func TestAdversaryDedicatedPanicGivesSlotBack(t *testing.T) {
	needServer(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, BlockingConns: 1})
	require.NoError(t, err)
	defer cl.Close()
	for i := range 3 {
		func() {
			defer func() { require.Equal(t, "boom", recover(), "round %d", i) }()
			cl.Dedicated(ctx, func(c *conn.Conn) error {
				if _, err := c.Do(ctx, "MULTI"); err != nil {
					return err
				}
				panic("boom") // a transaction left open
			})
		}()
	}
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = cl.Dedicated(bctx, func(c *conn.Conn) error {
		v, err := c.Do(bctx, "PING")
		if err == nil && v.Text() != "PONG" {
			err = fmt.Errorf("PING = %v: the connection the panic left in MULTI was reused", v)
		}
		return err
	})
	require.NoError(t, err, "Dedicated after fn panicked")
	v, err := cl.Do(bctx, "BLPOP", "panic-q", "0.01")
	require.NoError(t, err, "a blocking call after Dedicated's fn panicked")
	require.True(t, v.IsNull())
}

// A BLPOP cancelled while a WAIT holds up the Client's shared connection
// (its only replica frozen): the CLIENT UNBLOCK that ends the BLPOP must
// not queue behind the WAIT, so the cancelled call returns before the
// WAIT does, its connection unblocked (not closed), and an element pushed
// right after stays in the list.
func TestAdversaryCancelBehindWait(t *testing.T) {
	primary := startServer(t, servertest.Options{})
	replica := startServer(t, servertest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)}})
	waitFor(t, "the replica in sync", func() bool {
		info, _ := replica.Do("INFO", "replication")
		return strings.Contains(info, "master_link_status:up")
	})
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: primary.Addr, ClientName: "behind-wait"})
	require.NoError(t, err)
	defer cl.Close()
	_, err = cl.Do(ctx, "BLPOP", "warm", "0.01") // a lent connection, pooled
	require.NoError(t, err)

	bctx, cancel := context.WithCancel(ctx)
	order := make(chan string, 2)
	blpop := make(chan error, 1)
	go func() {
		_, err := cl.Do(bctx, "BLPOP", "wq", "0")
		blpop <- err
		order <- "BLPOP"
	}()
	waitFor(t, "BLPOP blocked", func() bool {
		info, _ := primary.Do("INFO", "clients")
		return strings.Contains(info, "blocked_clients:1\r\n")
	})
	pid := replica.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	_, err = cl.Do(ctx, "SET", "w", "1")
	require.NoError(t, err)
	go func() {
		cl.DoInt(ctx, resp.Command(nil, "WAIT", "1", "2000"))
		order <- "WAIT"
	}()
	waitFor(t, "WAIT blocked", func() bool {
		info, _ := primary.Do("INFO", "clients")
		return strings.Contains(info, "blocked_clients:2\r\n")
	})
	cancel()
	first := <-order
	require.ErrorIs(t, <-blpop, context.Canceled)
	_, err = primary.Do("RPUSH", "wq", "kept")
	require.NoError(t, err)
	n, err := primary.Do("LLEN", "wq")
	require.NoError(t, err)
	require.Equal(t, "1", n, "the element pushed after the cancelled BLPOP returned")
	require.Equal(t, "BLPOP", first, "the cancelled BLPOP returned only after the WAIT ahead of its CLIENT UNBLOCK")
	require.Equal(t, "WAIT", <-order)
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
}

// After the server closed every idle connection (CLIENT KILL), a burst
// of concurrent calls, plain and blocking, all succeed: nothing was sent
// on the closed connections, so each call goes on the next one. Five
// rounds.
func TestAdversaryBurstAfterIdleClose(t *testing.T) {
	s := startServer(t, servertest.Options{})
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr: s.Addr, ClientName: "burst",
		BlockingConns: 4,
		MinBackoff:    time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	defer cl.Close()
	const plain, blocking = 40, 8
	for round := range 5 {
		// Lent connections idle in the pool too.
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); cl.Do(ctx, "BLPOP", "none", "0.01") }()
		}
		wg.Wait()
		_, err := s.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		require.NoError(t, err)
		waitFor(t, "the server to close the idle connections", func() bool {
			list, _ := s.Do("CLIENT", "LIST")
			return !strings.Contains(list, "name=burst ")
		})
		errs := make(chan error, plain+blocking)
		for i := range plain {
			go func() {
				got, err := echo(ctx, cl, "b"+strconv.Itoa(i))
				if err == nil && got != "b"+strconv.Itoa(i) {
					err = fmt.Errorf("ECHO b%d = %q", i, got)
				}
				errs <- err
			}()
		}
		for range blocking {
			go func() {
				_, err := cl.Do(ctx, "BLPOP", "none", "0.01")
				errs <- err
			}()
		}
		failed := map[string]int{}
		for range plain + blocking {
			if err := <-errs; err != nil {
				failed[err.Error()]++
			}
		}
		require.Empty(t, failed, "round %d: calls after the server closed the idle connections", round)
	}
}

// A batch that holds a BLPOP goes on a lent connection, where a WAIT
// without a timeout is not refused ([SET; WAIT 1 0; BLPOP]); cancelled,
// both the WAIT and the BLPOP are unblocked (CLIENT UNBLOCK ends a WAIT
// too), the call returns with the replies, the connection is kept, and
// an element pushed right after stays. The WAIT used to be left out of
// the count of commands to unblock, so the BLPOP was never unblocked and
// the connection was closed after DialTimeout instead.
func TestAdversaryCancelledBatchWithWaitForever(t *testing.T) {
	s := startServer(t, servertest.Options{}) // no replica: WAIT 1 0 waits for ever
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: s.Addr, DialTimeout: 3 * time.Second, BlockingConns: 1})
	require.NoError(t, err)
	defer cl.Close()
	blocked := func(n string) func() bool {
		return func() bool {
			info, _ := s.Do("INFO", "clients")
			return strings.Contains(info, "blocked_clients:"+n+"\r\n")
		}
	}
	for round := range 3 {
		bctx, cancel := context.WithCancel(ctx)
		var b pipeline.Batch
		b.Add("SET", "wf", "1")
		b.Add("WAIT", "1", "0")
		b.Add("BLPOP", "wf-q", "0")
		ended := make(chan error, 1)
		go func() { ended <- b.Exec(bctx, cl) }()
		waitFor(t, "the WAIT blocked", blocked("1"))
		cancel()
		err := <-ended
		require.NoError(t, err, "round %d", round)
		require.EqualValues(t, 0, b.Reply(1).Int, "the unblocked WAIT")
		require.True(t, b.Reply(2).IsNull(), "round %d: the unblocked BLPOP: %v", round, b.Reply(2))
		waitFor(t, "nothing blocked", blocked("0"))
		_, err = s.Do("RPUSH", "wf-q", "kept")
		require.NoError(t, err)
		n, err := s.Do("LLEN", "wf-q")
		require.NoError(t, err)
		require.Equal(t, "1", n)
		_, err = s.Do("DEL", "wf-q")
		require.NoError(t, err)
	}
	list, err := s.Do("CLIENT", "LIST")
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(list, " cmd=blpop "), "the lent connection was closed rather than unblocked:\n%s", list)
}

// cutAfterUnblock wraps a real connection: the first CLIENT UNBLOCK
// written through any of them is sent, then that connection is closed
// before its reply can be read, as a cut of the shared connection right
// after the server ran the command would do.
type cutAfterUnblock struct {
	net.Conn
	once *sync.Once
	ran  chan struct{}
}

func (c *cutAfterUnblock) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && strings.Contains(string(b), "UNBLOCK") {
		c.once.Do(func() {
			close(c.ran)
			time.Sleep(50 * time.Millisecond) // the server runs it
			c.Conn.Close()
		})
	}
	return n, err
}

// A BLPOP cancelled whose CLIENT UNBLOCK ran but whose answer was lost
// with the shared connection: the Client asks again on a connection of
// its own (0: nothing blocked any more), the BLPOP's reply is the empty
// one of an unblocked command, and the call returns ctx's error, not an
// empty reply with no error (a BLPOP without a timeout that "timed
// out"), which it did (seen on Valkey in TestAdversaryCancelWhileCut).
func TestAdversaryUnblockAnswerLost(t *testing.T) {
	needServer(t)
	srv.Flush(t)
	ctx := testCtx(t)
	once := &sync.Once{}
	ran := make(chan struct{})
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr: srv.Addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cutAfterUnblock{Conn: nc, once: once, ran: ran}, nil
		},
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	defer cl.Close()
	bctx, cancel := context.WithCancel(ctx)
	ended := make(chan error, 1)
	var v resp.Value
	go func() {
		var err error
		v, err = cl.Do(bctx, "BLPOP", "lost-ans", "0")
		ended <- err
	}()
	waitBlocked(t, 1)
	cancel()
	err = <-ended
	<-ran
	require.ErrorIs(t, err, context.Canceled, "the cancelled BLPOP returned %v", v)
	waitBlocked(t, 0)
	_, err = srv.Do("RPUSH", "lost-ans", "kept")
	require.NoError(t, err)
	n, err := srv.Do("LLEN", "lost-ans")
	require.NoError(t, err)
	require.Equal(t, "1", n)
}
