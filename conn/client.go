package conn

import (
	"context"
	"errors"
	"fmt"
	"github.com/echomq/echomq-go/resp"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/internal/cmdinfo"
	"github.com/echomq/echomq-go/internal/wire"
)

// ClientOptions configure a Client: the connection's Options plus how it
// redials and how many dedicated connections blocking commands may use.
type ClientOptions struct {
	Options
	// MinBackoff and MaxBackoff bound the redial backoff, which doubles
	// after each failed attempt with full jitter. Defaults 50 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// BlockingConns is the most dedicated connections, lent to blocking
	// commands (BLPOP, BZPOPMIN, XREAD … BLOCK, WAIT, …) and to
	// Dedicated. Default 4.
	BlockingConns int
}

// Client owns a pipelining connection and replaces it after a fault.
//
// Calls made while there is no healthy connection (from a fault until a
// redial succeeds) fail at once with an error matching ErrNotConnected and
// wrapping the cause; the Client redials in the background with
// exponential backoff and jitter. A Client never re-sends a command by
// itself: a call that failed with ErrBroken may or may not have run, and
// only the caller knows whether it is safe to repeat.
//
// Blocking commands must not stall the shared pipeline: the Client sends
// each on a dedicated connection by itself. Dedicated lends a connection
// for WATCH and transactions sent over several calls.
type Client struct {
	opts ClientOptions

	mu      sync.Mutex
	cur     *Conn // nil during an outage
	lastErr error
	closed  bool
	idle    []*Conn            // dedicated connections not in use
	busy    map[*Conn]struct{} // dedicated connections in use

	slots  chan struct{}   // one token per dedicated connection allowed
	done   chan struct{}   // closed at Close
	life   context.Context // ends at Close: stops redials
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewClient dials the first connection (so a wrong address or password
// is reported at once) and starts the supervisor that redials after faults.
func NewClient(ctx context.Context, opts ClientOptions) (*Client, error) {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	if opts.BlockingConns <= 0 {
		opts.BlockingConns = 4
	}
	c, err := Dial(ctx, opts.Options)
	if err != nil {
		return nil, err
	}
	cl := &Client{
		opts:  opts,
		cur:   c,
		slots: make(chan struct{}, opts.BlockingConns),
		done:  make(chan struct{}),
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
		return nil, fmt.Errorf("%w: %w", ErrNotConnected, cl.lastErr)
	}
	return cl.cur, nil
}

// Send sends on the current connection (see Conn.Send), or, when the
// submission holds a blocking command, on a dedicated connection of its
// own, which is closed if the caller gives up before the reply.
func (cl *Client) Send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	if cmds.Special && blocks(cmds.B) {
		if !h.Waits() {
			return cl.refused(cmds, &CommandError{Command: "blocking command", Reason: reasonNotWaiting})
		}
		return cl.sendDedicated(ctx, cmds, h)
	}
	c, err := cl.current()
	if err != nil {
		return cl.refused(cmds, err)
	}
	return c.Send(ctx, cmds, h)
}

// refused returns err, the refusal of a submission no connection saw,
// after reporting it to the Observer, if any.
func (cl *Client) refused(cmds wire.Cmds, err error) error {
	if obs := cl.opts.Observer; obs != nil {
		observeRefused(obs, cmds, err)
	}
	return err
}

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
			cl.cur, cl.lastErr = nil, c.Err()
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
		c, err := Dial(cl.life, cl.opts.Options)
		if err == nil {
			cl.mu.Lock()
			if cl.closed {
				cl.mu.Unlock()
				c.Close()
				return nil
			}
			cl.cur = c
			cl.mu.Unlock()
			return c
		}
		cl.mu.Lock()
		cl.lastErr = err
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
// WATCH or MULTI, is closed rather than reused.
func (cl *Client) Dedicated(ctx context.Context, fn func(c *Conn) error) error {
	c, err := cl.lend(ctx)
	if err != nil {
		return err
	}
	c.exclusive.Store(true)
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
		return nil, err
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
	reuse := !cl.closed && c.Err() == nil && c.pending.Load() == 0 && !c.txUsed.Load()
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
		if c.Err() == nil {
			cl.mu.Unlock()
			return c, nil
		}
		c.Close()
	}
	cl.mu.Unlock()
	// The liveness check allows for each blocking command's own timeout.
	return Dial(ctx, cl.opts.Options)
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

// blocks reports whether a submission holds a blocking command outside a
// transaction.
func blocks(b []byte) bool {
	found, inMulti := false, false
	cmdinfo.Each(b, func(info cmdinfo.Info) error {
		switch info.Kind {
		case cmdinfo.Blocking:
			found = found || !inMulti
		case cmdinfo.Multi:
			inMulti = true
		case cmdinfo.EndTx:
			inMulti = false
		}
		return nil
	})
	return found
}

// lent is the Handler of a blocking submission on a dedicated
// connection: it gives the connection back when the replies are in, and
// closes it when the caller gives up first, so the server never hands a
// popped element to nobody.
type lent struct {
	cl    *Client
	c     *Conn
	h     wire.Handler
	ctx   context.Context // the caller's
	state atomic.Int32    // 0 waiting, 1 done, 2 abandoned
	stop  func() bool
}

func (d *lent) Reply(i int, v resp.Value) { d.h.Reply(i, v) }
func (d *lent) Waits() bool               { return true }

// Done gives the connection back (or closes it, when abandoned) before
// telling the caller, so a caller's next blocking call finds it free.
// When the caller gave up, the connection's end is the caller's own
// doing: the caller is told ctx's error, whichever of the two it sees
// first.
func (d *lent) Done(err error) {
	if d.state.CompareAndSwap(0, 1) {
		if d.stop != nil {
			d.stop()
		}
		d.cl.giveBack(d.c)
	} else if err != nil && d.state.Load() == 2 {
		// The connection failed because abandon closed it: the caller
		// gave up, and that is the outcome it must see, not ErrClosed,
		// whichever of the two its wait notices first.
		err = d.ctx.Err()
	}
	d.h.Done(err)
}

// abandon runs when the caller's ctx ends first: closing the connection
// ends the blocking command on the server.
func (d *lent) abandon() {
	if d.state.CompareAndSwap(0, 2) {
		d.cl.wg.Add(1)
		go func() {
			defer d.cl.wg.Done()
			d.c.Close()
			d.cl.giveBack(d.c)
		}()
	}
}

// sendDedicated sends a blocking submission on a lent connection.
func (cl *Client) sendDedicated(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	c, err := cl.lend(ctx)
	if err != nil {
		return cl.refused(cmds, err)
	}
	d := &lent{cl: cl, c: c, h: h, ctx: ctx}
	if ctx.Done() != nil {
		d.stop = context.AfterFunc(ctx, d.abandon)
	}
	if err := c.Send(ctx, cmds, d); err != nil {
		if d.state.CompareAndSwap(0, 1) {
			if d.stop != nil {
				d.stop()
			}
			cl.giveBack(c)
		}
		return err
	}
	return nil
}
