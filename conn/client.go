package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Client owns a pipelining connection and replaces it after a fault.
//
// Calls made while there is no healthy connection (from a fault until a
// redial succeeds) fail at once with an error matching ErrNotConnected and
// wrapping the cause (when the fault was the server closing the idle
// connection, they wait for the next dial attempt first); the Client redials in the background with
// exponential backoff and jitter. A Client never re-sends a command by
// itself: a call that failed with ErrBroken may or may not have run, and
// only the caller knows whether it is safe to repeat.
//
// Blocking commands must not stall the shared pipeline: the Client sends
// each on a dedicated connection by itself, and the call returns once the
// server no longer holds it, having its reply, the connection's fault,
// or, when ctx ends first, having had it unblocked (see the package doc).
// WAIT and WAITAOF, which count the writes of their own connection, go on
// the shared connection and hold it up for up to their timeout; without a
// timeout they are refused. Dedicated lends a connection for WATCH and
// transactions sent over several calls.
type Client struct {
	opts  Options  // MinBackoff, MaxBackoff and BlockingConns defaulted
	hooks *hookSet // nil without Options.Hooks and Observer

	mu      sync.Mutex
	cur     *Conn // nil during an outage
	lastErr error
	failed  uint64        // dial attempts that failed
	changed chan struct{} // closed, and replaced, when cur or failed changes
	closed  bool
	idle    []*Conn            // dedicated connections not in use
	busy    map[*Conn]struct{} // dedicated connections in use

	patience time.Duration // how long stopBlocked tries (DialTimeout)

	slots  chan struct{}   // one token per dedicated connection allowed
	done   chan struct{}   // closed at Close
	life   context.Context // ends at Close: stops redials
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewClient dials the first connection (so a wrong address or password
// is reported at once) and starts the supervisor that redials after faults.
// Every field of opts applies, MinBackoff, MaxBackoff and BlockingConns
// among them.
func NewClient(ctx context.Context, opts Options) (*Client, error) {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	if opts.BlockingConns <= 0 {
		opts.BlockingConns = 4
	}
	c, err := Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	cl := &Client{
		opts:     opts,
		hooks:    newHookSet(opts),
		cur:      c,
		changed:  make(chan struct{}),
		slots:    make(chan struct{}, opts.BlockingConns),
		done:     make(chan struct{}),
		patience: opts.withDefaults().DialTimeout,
	}
	cl.life, cl.cancel = context.WithCancel(context.Background())
	cl.wg.Add(1)
	go cl.supervise(c)
	return cl, nil
}

// current returns the current connection, or an error matching
// ErrNotConnected during an outage and ErrClosed after Close.
func (cl *Client) current() (*Conn, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case cl.closed:
		return nil, ErrClosed
	case cl.cur == nil:
		return nil, notConnected(cl.lastErr)
	}
	return cl.cur, nil
}

// signal wakes the callers waiting in next; it is called with mu held.
func (cl *Client) signal() {
	close(cl.changed)
	cl.changed = make(chan struct{})
}

// next waits for the connection that replaces old, which failed before a
// call could be sent on it, until the supervisor's next dial attempt: it
// returns the new connection, or an error matching ErrNotConnected when
// that attempt failed, ctx.Err(), or ErrClosed.
func (cl *Client) next(ctx context.Context, old *Conn) (*Conn, error) {
	cl.mu.Lock()
	failed := cl.failed
	for {
		switch {
		case cl.closed:
			cl.mu.Unlock()
			return nil, ErrClosed
		case cl.cur != nil && cl.cur != old:
			c := cl.cur
			cl.mu.Unlock()
			return c, nil
		case cl.cur == nil && cl.failed != failed:
			err := notConnected(cl.lastErr)
			cl.mu.Unlock()
			return nil, err
		}
		ch := cl.changed
		cl.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		cl.mu.Lock()
	}
}

// Send sends on the current connection (see Conn.Send), or, when the
// submission holds a blocking command (WAIT and WAITAOF aside), on a
// dedicated connection of its own, and then returns only once the
// submission has ended (see Client).
//
// When the current connection turns out to have failed, or been closed
// by the server while idle, before anything was sent, Send waits for the
// supervisor's next dial attempt and sends on the new connection; when
// that attempt fails the error matches ErrNotConnected. So do the calls
// made meanwhile, until a dial fails, when the outage began with the
// server closing the idle connection.
//
// The hooks (Options.Hooks, Observer) see each submission once, here,
// whichever connection takes it.
func (cl *Client) Send(ctx context.Context, cmds Cmds, h Handler) error {
	if cl.hooks == nil && cmds.Plain() && cmds.Len() > 0 {
		return cl.send(ctx, cmds, h) // as Conn.Send: nothing to read or check
	}
	// Facts unknown: read from the bytes once, here (see factsFor);
	// given: checked.
	cmds, l, err := cl.hooks.factsFor(cmds)
	if err != nil {
		return err
	}
	err = cl.sendHooked(ctx, cmds, h)
	wire.Release(l)
	return err
}

// sendHooked is Send, with the facts known.
func (cl *Client) sendHooked(ctx context.Context, cmds Cmds, h Handler) error {
	if !cl.hooks.sees(cmds) {
		return cl.send(ctx, cmds, h)
	}
	if cmds.Len() <= 0 || h == nil {
		return errBadSubmission
	}
	o := cl.hooks.begin(ctx, cmds, h)
	if p := o.panic; p != nil {
		o.fail(p) // a Before hook panicked: nothing is sent
		return p
	}
	if err := cl.send(ctx, cmds, o); err != nil {
		o.fail(err)
		return err
	}
	return nil
}

// send is Send without the hooks.
func (cl *Client) send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	if r := route(cmds.Facts()); r.blocking > 0 || r.forever != "" {
		switch {
		case r.blocking > 0:
			if !h.Waits() {
				return cl.refused(cmds, &CommandError{Command: "blocking command", Reason: reasonNotWaiting})
			}
			// On the lent connection a WAIT blocks like the rest, and
			// CLIENT UNBLOCK ends it too: counted with them.
			return cl.sendDedicated(ctx, cmds, h, r.blocking+r.waits)
		case r.forever != "":
			return cl.refused(cmds, &CommandError{Command: r.forever, Reason: reasonWaitForever})
		}
	}
	c, err := cl.current()
	if err != nil && errors.Is(err, errPeerClosed) {
		// The server closed the idle shared connection, found before
		// anything was sent on it: the server is likely up, so this call
		// waits for the supervisor's next dial, as the caller who found
		// the close does, rather than failing at once.
		c, err = cl.next(ctx, nil)
	}
	if err != nil {
		return cl.refused(cmds, err)
	}
	err = c.send(ctx, cmds, h)
	var ns *notSentError
	if err == nil || !errors.As(err, &ns) {
		return err
	}
	// Nothing was sent on c: its replacement takes the submission.
	if c, err = cl.next(ctx, c); err != nil {
		return err
	}
	return c.send(ctx, cmds, h)
}

// refused returns err, the refusal of a submission no connection saw
// (Send reports it to the hooks).
func (cl *Client) refused(_ wire.Cmds, err error) error { return err }

// Done is closed when the Client is closed.
func (cl *Client) Done() <-chan struct{} { return cl.done }

// Err returns ErrClosed once the Client is closed, else nil: a Client
// outlives the faults of its connections.
func (cl *Client) Err() error {
	select {
	case <-cl.done:
		return ErrClosed
	default:
		return nil
	}
}

// supervise waits for the current connection to fail and redials.
func (cl *Client) supervise(c *Conn) {
	defer cl.wg.Done()
	for {
		select {
		case <-cl.life.Done():
			return
		case <-c.Done():
		}
		cl.mu.Lock()
		if cl.cur == c {
			cl.cur, cl.lastErr = nil, c.fault0()
			cl.signal()
		}
		cl.mu.Unlock()
		if c = cl.redial(); c == nil {
			return
		}
	}
}

// redial dials until it succeeds or the Client closes (then nil).
func (cl *Client) redial() *Conn {
	backoff := cl.opts.MinBackoff
	for {
		wait := time.Duration(rand.Int64N(int64(backoff)) + 1)
		select {
		case <-cl.life.Done():
			return nil
		case <-time.After(wait):
		}
		c, err := Dial(cl.life, cl.opts)
		if err == nil {
			cl.mu.Lock()
			if cl.closed {
				cl.mu.Unlock()
				c.Close()
				return nil
			}
			cl.cur = c
			cl.signal()
			cl.mu.Unlock()
			return c
		}
		cl.mu.Lock()
		cl.lastErr = err
		cl.failed++
		cl.signal()
		cl.mu.Unlock()
		backoff = min(2*backoff, cl.opts.MaxBackoff)
	}
}

// Dedicated lends fn a connection of its own, for what must not share
// the pipelined connection: WATCH and a transaction sent over several
// calls (MULTI, the commands, EXEC), or a run of blocking commands. At
// most BlockingConns dedicated connections exist (blocking commands sent
// through Do, DoFunc and pipeline.Batch use them too), and Dedicated
// waits for one, honouring ctx. The connection must not be used after fn
// returns. One that fn leaves with calls in flight, broken, or after
// WATCH or MULTI, or by panicking (the panic goes on, the slot is given
// back), is closed rather than reused. On it, blocking commands
// are fn's own business: one whose ctx ends is left to the server until
// the connection is closed, so an element may be popped for nobody
// meanwhile; WAIT there counts only that connection's writes.
func (cl *Client) Dedicated(ctx context.Context, fn func(c *Conn) error) error {
	c, err := cl.lend(ctx)
	if err != nil {
		return err
	}
	c.exclusive.Store(true)
	defer func() {
		if r := recover(); r != nil {
			// fn panicked: its slot is given back, and its connection,
			// in a state nobody knows (a transaction left open, calls
			// in flight), is closed.
			c.txUsed.Store(true)
			cl.giveBack(c)
			panic(r)
		}
	}()
	err = fn(c)
	cl.giveBack(c)
	return err
}

// lend takes a dedicated connection, waiting for a slot.
func (cl *Client) lend(ctx context.Context) (*Conn, error) {
	select {
	case cl.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c, err := cl.dedicated(ctx)
	if err != nil {
		<-cl.slots
		// Nothing was sent: like any call made while the server cannot
		// be reached, it matches ErrNotConnected; and ctx's error, when
		// ctx ended the dial or the handshake.
		if cerr := ctxEnded(ctx); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return nil, notConnected(err)
	}
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		c.Close()
		<-cl.slots
		return nil, ErrClosed
	}
	if cl.busy == nil {
		cl.busy = make(map[*Conn]struct{})
	}
	cl.busy[c] = struct{}{} // Close ends a call in progress on it
	cl.mu.Unlock()
	return c, nil
}

// giveBack returns a lent connection to the idle list, or closes it.
func (cl *Client) giveBack(c *Conn) {
	cl.mu.Lock()
	delete(cl.busy, c)
	reuse := !cl.closed && c.fault0() == nil && c.pending.Load() == 0 && !c.txUsed.Load()
	if reuse {
		c.exclusive.Store(false)
		cl.idle = append(cl.idle, c)
	}
	cl.mu.Unlock()
	if !reuse {
		c.Close()
	}
	<-cl.slots
}

func (cl *Client) dedicated(ctx context.Context) (*Conn, error) {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil, ErrClosed
	}
	for len(cl.idle) > 0 {
		c := cl.idle[len(cl.idle)-1]
		cl.idle = cl.idle[:len(cl.idle)-1]
		if !c.peerClosed() { // nor failed
			cl.mu.Unlock()
			return c, nil
		}
		cl.mu.Unlock()
		c.Close()
		cl.mu.Lock()
	}
	cl.mu.Unlock()
	// The liveness check allows for each blocking command's own timeout.
	c, err := Dial(ctx, cl.opts)
	if err == nil && c.id == 0 {
		// RESP2: HELLO did not tell the connection's CLIENT ID, which
		// stopBlocked needs. Only a server that refuses CLIENT ID gets a
		// connection without it (a caller who gives up then has the
		// connection closed instead); one that failed to ask (ctx ended,
		// a fault) is not lent, nor pooled without its id.
		var buf [16]byte
		id, ierr := c.doIntOwn(ctx, resp.Command(buf[:0], "CLIENT", "ID"))
		var se *resp.ServerError
		switch {
		case ierr == nil:
			c.id = id
		case !errors.As(ierr, &se):
			c.Close()
			return nil, ierr
		}
	}
	return c, err
}

// Close closes the connections, dedicated ones in use included, stops
// redialing and waits for every goroutine the Client started. Calls still
// waiting, blocking ones too, end with ErrClosed.
func (cl *Client) Close() error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	cl.signal()
	close(cl.done)
	cur, idle := cl.cur, cl.idle
	for c := range cl.busy {
		idle = append(idle, c) // their blocking calls end with ErrClosed
	}
	cl.cur, cl.idle, cl.busy = nil, nil, nil
	cl.mu.Unlock()
	cl.cancel()
	var errs []error
	if cur != nil {
		errs = append(errs, cur.Close())
	}
	for _, c := range idle {
		errs = append(errs, c.Close())
	}
	cl.wg.Wait()
	return errors.Join(errs...)
}

// routing is where a Client sends a submission with special commands.
type routing struct {
	blocking int    // blocking commands outside a transaction, WAIT and WAITAOF aside
	waits    int    // WAIT and WAITAOF outside a transaction
	forever  string // the name of a WAIT or WAITAOF without a timeout, if any
}

// The Infos of WAIT and WAITAOF, which a Client sends on its shared
// connection.
var (
	infoWait    = cmds.Lookup("wait")
	infoWaitaof = cmds.Lookup("waitaof")
)

// route counts a submission's blocking commands outside transactions.
func route(facts []cmds.Fact) routing {
	var r routing
	inMulti := false
	for i := range facts {
		f := &facts[i]
		switch {
		case f.Kind&(cmds.Blocking|cmds.TxMulti|cmds.TxEnd) == 0:
		case f.Kind&cmds.Blocking != 0:
			switch {
			case inMulti:
			case f.Info != nil && (f.Info == infoWait || f.Info == infoWaitaof):
				r.waits++
				if f.Timeout == 0 && r.forever == "" {
					r.forever = f.Info.Words[0]
				}
			default:
				r.blocking++
			}
		case f.Arg1 != (cmds.Span{}):
			// MULTI, EXEC or DISCARD with an argument: refused for its
			// arity, it neither opens nor ends a transaction (the guard's
			// inspect says the same).
		case f.Kind&cmds.TxMulti != 0:
			inMulti = true
		case f.Kind&cmds.TxEnd != 0:
			inMulti = false
		}
	}
	return r
}

// lent is the Handler of a blocking submission on a lent connection.
// Its Waits is false, so the connection's reader goroutine reads the
// replies and the caller's goroutine stays free to end the blocking
// commands when its ctx ends; and the caller's goroutine, never a
// Handler, gives the connection back (Conn.Close must not be called from
// a Handler).
type lent struct {
	h     wire.Handler
	done  chan struct{} // closed by Done
	err   error         // Done's, read after done is closed
	nulls int           // null replies, read after done is closed
}

func (d *lent) Reply(i int, v resp.Value) {
	if v.IsNull() {
		d.nulls++
	}
	d.h.Reply(i, v)
}
func (d *lent) Waits() bool    { return false }
func (d *lent) Done(err error) { d.err = err; close(d.done) }

// PanicFunc is the wrapped Handler's (see wire.Named).
func (d *lent) PanicFunc() string { return wire.PanicFunc(d.h) }

// sendDedicated sends a submission holding blocking commands on a lent
// connection, and returns once it has ended: with its replies; with the
// connection's fault; or, when ctx ends first, once the server no longer
// holds its blocking commands (see stopBlocked). The connection is back
// in the pool, or closed, before h is told.
func (cl *Client) sendDedicated(ctx context.Context, cmds wire.Cmds, h wire.Handler, blocking int) error {
	d := &lent{h: h, done: make(chan struct{})}
	var c *Conn
	for retried := false; ; retried = true {
		var err error
		if c, err = cl.lend(ctx); err != nil {
			return cl.refused(cmds, err)
		}
		err = c.send(ctx, cmds, d)
		if err == nil {
			break
		}
		cl.giveBack(c)
		var ns *notSentError
		if !errors.As(err, &ns) {
			return err
		}
		if retried {
			return notConnected(ns.fault)
		}
		// The server had closed the idle lent connection: nothing was
		// sent. Another connection takes it.
	}
	var err error
	select {
	case <-d.done:
		err = d.err
	case <-ctx.Done():
		err = cl.stopBlocked(ctx, c, d, blocking, cmds.Len())
	}
	cl.giveBack(c)
	h.Done(err)
	return nil
}

// stopBlocked ends the blocking commands of d, sent on c, after the
// caller's ctx ended, and waits for d's replies: the server must no
// longer hold them when the call returns, and nothing they popped may be
// dropped. It sends CLIENT UNBLOCK with c's CLIENT ID on the Client's
// shared connection (or, during an outage or a WAIT there, on a
// connection of its own)
// until every blocking command of the submission has been unblocked; a
// command unblocked so replies as if its timeout had passed, popping
// nothing. CLIENT UNBLOCK answering 0 means the command is not blocked
// at that moment: not yet arrived, already answered (its reply is on its
// way), or between commands of the submission; stopBlocked waits for the
// replies a moment and asks again.
//
// It returns ctx.Err() when the submission is only blocking commands and
// every one was unblocked (the replies are timeouts: nothing was popped);
// nil when one answered before it could be unblocked (the reply won the
// race and is the caller's), or when the submission has other commands
// (n, its count, is more than blocking): they ran, and what they popped
// (an LPOP beside the BLPOP) is the caller's too, unless every reply
// is empty; or the connection's fault. When the server cannot be told
// (c's CLIENT ID is unknown, no connection can be made, CLIENT UNBLOCK is
// refused, or the unblocking does not end within DialTimeout), it closes
// c instead and returns ctx.Err(): the server then ends the commands when
// it sees the close, which it may not have seen yet, and an element
// popped meanwhile is lost.
func (cl *Client) stopBlocked(ctx context.Context, c *Conn, d *lent, blocking, n int) error {
	outcome := func(unblocked int) error {
		switch {
		case d.err != nil:
			return d.err
		case unblocked >= blocking && n == blocking, d.nulls == n:
			// Every blocking command was unblocked, or every reply is
			// empty (one was unblocked by a CLIENT UNBLOCK whose answer
			// was lost with the shared connection): nothing was popped.
			return ctx.Err()
		}
		return nil
	}
	uctx, cancel := context.WithTimeout(cl.life, cl.patience)
	defer cancel()
	unblocked, pause := 0, time.Millisecond
unblocking:
	for c.id != 0 && uctx.Err() == nil {
		select {
		case <-d.done:
			return outcome(unblocked)
		default:
		}
		if unblocked >= blocking {
			// All unblocked: their replies and the rest are coming.
			select {
			case <-d.done:
				return outcome(unblocked)
			case <-uctx.Done():
				break unblocking
			}
		}
		n, err := cl.unblock(uctx, c.id)
		if err != nil {
			break
		}
		if n == 1 {
			unblocked++
			pause = time.Millisecond
			continue
		}
		t := time.NewTimer(pause)
		select {
		case <-d.done:
			t.Stop()
			return outcome(unblocked)
		case <-t.C:
		case <-uctx.Done():
			t.Stop()
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
	c.Close()
	<-d.done
	if d.err == nil {
		return outcome(unblocked) // the replies were all in before the close
	}
	return ctx.Err()
}

// unblock sends CLIENT UNBLOCK id on the shared connection, or on a
// connection of its own when the shared one is down, fails, or is held
// up by a WAIT (which would answer first, up to its timeout later). The
// hooks do not see it: the user never sent it.
func (cl *Client) unblock(ctx context.Context, id int64) (int64, error) {
	var buf [64]byte
	cmd := resp.Command(buf[:0], "CLIENT", "UNBLOCK", strconv.FormatInt(id, 10))
	if cur, err := cl.current(); err == nil && cur.blocked.Load() == 0 {
		n, err := cur.doIntOwn(ctx, cmd)
		var se *resp.ServerError
		if err == nil || errors.As(err, &se) || ctx.Err() != nil {
			return n, err
		}
	}
	c, err := Dial(ctx, cl.opts)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.doIntOwn(ctx, cmd)
}
