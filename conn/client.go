package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// ClientOptions configure a Client: the connection's Options plus how it
// redials and how many dedicated connections blocking commands may use.
type ClientOptions struct {
	Options
	// MinBackoff and MaxBackoff bound the redial backoff, which doubles
	// after each failed attempt with full jitter. Defaults 50 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// BlockingConns is the most dedicated connections for blocking
	// commands (BLPOP, BZPOPMIN, XREAD … BLOCK, WAIT). Default 4.
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
// Blocking commands must not stall the shared pipeline: run them with
// Blocking, on a dedicated connection.
type Client struct {
	opts ClientOptions

	mu      sync.Mutex
	cur     *Conn // nil during an outage
	lastErr error
	closed  bool
	idle    []*Conn            // dedicated connections not in use
	busy    map[*Conn]struct{} // dedicated connections in use

	slots  chan struct{}   // one token per dedicated connection allowed
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
	}
	cl.life, cl.cancel = context.WithCancel(context.Background())
	cl.wg.Add(1)
	go cl.supervise(c)
	return cl, nil
}

// Conn returns the current connection, or an error matching
// ErrNotConnected during an outage and ErrClosed after Close.
func (cl *Client) Conn() (*Conn, error) {
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

// Send sends on the current connection (see Conn.Send).
func (cl *Client) Send(ctx context.Context, cmds []byte, n int, h Handler) error {
	c, err := cl.Conn()
	if err != nil {
		return err
	}
	return c.Send(ctx, cmds, n, h)
}

// Exchange sends on the current connection, reading inline when it can
// (see Conn.Exchange).
func (cl *Client) Exchange(ctx context.Context, cmds []byte, n int, h Handler) error {
	c, err := cl.Conn()
	if err != nil {
		return err
	}
	return c.Exchange(ctx, cmds, n, h)
}

// DoFunc is Conn.DoFunc on the current connection.
func (cl *Client) DoFunc(ctx context.Context, cmd []byte, fn func(resp.Value) error) error {
	return DoFunc(ctx, cl, cmd, fn)
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

// Blocking runs fn on a dedicated connection, for commands that block
// (BLPOP, BZPOPMIN, XREAD … BLOCK, WAIT) and must not stall the shared
// pipeline. Dedicated connections have no liveness timeout; at most
// BlockingConns exist, and Blocking waits for one (honouring ctx). A
// connection that fn leaves with calls in flight (fn gave up on a
// blocking command) is closed rather than reused.
func (cl *Client) Blocking(ctx context.Context, fn func(c *Conn) error) error {
	select {
	case cl.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-cl.slots }()
	c, err := cl.dedicated(ctx)
	if err != nil {
		return err
	}
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		c.Close()
		return ErrClosed
	}
	if cl.busy == nil {
		cl.busy = make(map[*Conn]struct{})
	}
	cl.busy[c] = struct{}{} // Close ends a blocking call in progress
	cl.mu.Unlock()
	err = fn(c)
	cl.mu.Lock()
	delete(cl.busy, c)
	reuse := !cl.closed && c.Err() == nil && c.pending.Load() == 0
	if reuse {
		cl.idle = append(cl.idle, c)
	}
	cl.mu.Unlock()
	if !reuse {
		c.Close()
	}
	return err
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
	o := cl.opts.Options
	o.ReadTimeout = -1
	return Dial(ctx, o)
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
