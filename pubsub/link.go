package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/resp"
)

// link is one subscriber connection. Commands written on it ((UN)SUBSCRIBE
// and the health check's PING) each owe a known number of replies: one
// confirmation per channel named, or one reply. They are queued in ops
// in the order they are written, and since the server answers in that
// order, the reader hands each confirmation or reply to the oldest op
// still owed one. Messages come between them at any point and go to the
// subscription.
//
// A link has two goroutines of its own, the reader and the health
// check, started by start and stopped by close. halt is closed at the
// first fault (a reader waiting for room in the queue gives up then),
// done when the reader has failed every op still owed replies. A link
// is never reused after a fault.
type link struct {
	// Set at dial, read-only after.
	nc       net.Conn
	rd       *resp.Reader
	protocol int
	wtimeout time.Duration
	sink     func(l *link, v resp.Value) bool // takes a message; false: stop reading
	kick     func()                           // wakes the reader if it waits for room
	hooks    []conn.Hook                      // see hooksOf
	log      *slog.Logger                     // Options.Logger, for the hooks' panics

	// Shared, guarded by mu.
	wmu sync.Mutex // one write at a time, ops queued in write order
	mu  sync.Mutex
	ops []*op
	err error // the first fault; set once

	progress atomic.Uint64 // bytes read
	stalled  atomic.Bool   // the reader waits for room in the queue
	owing    atomic.Int32  // ops still owed replies (set under mu)

	halt chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// op is a command's outstanding replies.
type op struct {
	confirm string // the confirmation word owed ("subscribe", …), or "" for one reply
	own     bool   // the health check's PING: the hooks do not see it
	owed    int
	done    chan error // buffered: the reader never waits for the caller

	// For the hooks, when there are any (see before).
	ctx   context.Context
	info  conn.CommandInfo
	start time.Time
}

// wait waits for the op's replies, or ctx's end.
func (o *op) wait(ctx context.Context) error {
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// counter counts the bytes read from the socket, for the health check.
type counter struct{ l *link }

func (c counter) Read(b []byte) (int, error) {
	n, err := c.l.nc.Read(b)
	c.l.progress.Add(uint64(n))
	return n, err
}

// dialLink connects and runs the handshake; start begins reading.
func dialLink(ctx context.Context, o Options, hooks []conn.Hook, sink func(*link, resp.Value) bool, kick func()) (*link, error) {
	cfg := dialConfig(o.Options)
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	nc, err := dial.Transport(ctx, cfg)
	if err != nil {
		var ce *dial.ConfigError
		if errors.As(err, &ce) {
			// conn.ErrBadOptions, as conn.Dial says it.
			return nil, fmt.Errorf("pubsub: %w: %s", conn.ErrBadOptions, ce.Error())
		}
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, fmt.Errorf("pubsub: %w", err) // it names the address
		}
		return nil, fmt.Errorf("pubsub: dial %s %s: %w", cfg.Network, cfg.Addr, err)
	}
	l := &link{nc: nc, wtimeout: o.WriteTimeout, sink: sink, kick: kick, hooks: hooks, log: o.Logger, halt: make(chan struct{}), done: make(chan struct{})}
	// The handshake under the default limits, the messages under o's (as
	// a conn.Conn does).
	l.rd = resp.NewReaderLimits(counter{l}, resp.Limits{}, o.ReadBufferSize)
	res, err := dial.Handshake(ctx, nc, l.rd, cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("pubsub: handshake with %s: %w", cfg.Addr, err)
	}
	l.rd.SetLimits(o.Limits)
	l.protocol = res.Protocol
	return l, nil
}

// start starts the reader and, unless ReadTimeout is negative, the
// health check.
func (l *link) start(o Options) {
	l.wg.Add(1)
	go l.readLoop()
	if o.ReadTimeout > 0 {
		l.wg.Add(1)
		go l.watch(o.PingInterval, o.ReadTimeout)
	}
}

// send writes one command and queues what it owes: one confirmation per
// name for (un)subscribe commands (confirm names the word), else one
// reply. On error nothing more is owed to the caller. Until the replies
// are in, the reader reads on even when the queue is full (see
// mustRead), so a consumer that changes the subscription itself never
// waits for its own reading. The hooks see the command start here, with
// ctx, and end once: when its replies are in, or at the link's fault.
func (l *link) send(ctx context.Context, confirm string, args ...string) (*op, error) {
	o := &op{confirm: confirm, owed: 1}
	if confirm != "" {
		o.owed = len(args) - 1
	}
	return l.sendOp(ctx, o, args)
}

// sendOp is send of o, the op of args. A BeforeCommand's panic refuses
// the command: nothing is written, and the error is the *conn.PanicError.
func (l *link) sendOp(ctx context.Context, o *op, args []string) (*op, error) {
	o.done = make(chan error, 1)
	b := resp.AppendCommand(nil, args...)
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if p := l.before(ctx, o, args[0], b); p != nil {
		l.after(o, resp.Value{}, p)
		return nil, p
	}
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		l.after(o, resp.Value{}, err)
		return nil, err
	}
	l.ops = append(l.ops, o)
	l.owing.Add(1)
	l.mu.Unlock()
	l.kick() // a reader waiting for room must read on, up to the reply
	if l.wtimeout > 0 {
		l.nc.SetWriteDeadline(time.Now().Add(l.wtimeout))
	}
	if _, err := l.nc.Write(b); err != nil {
		l.fault(err)
		return nil, l.failure()
	}
	return o, nil
}

// mustRead reports whether replies are owed, which the reader must read
// however full the queue is.
func (l *link) mustRead() bool { return l.owing.Load() > 0 }

// failure returns the fault that ended the link.
func (l *link) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// readLoop reads frames until the connection fails: messages go to the
// sink, confirmations and replies to the oldest op owed one.
func (l *link) readLoop() {
	defer l.wg.Done()
	for {
		v, err := l.rd.Next()
		if err == nil {
			err = l.dispatch(v)
		}
		if err != nil {
			l.die(err)
			return
		}
	}
}

// dispatch delivers one frame.
func (l *link) dispatch(v resp.Value) error {
	if v.Type == resp.TooLarge && l.skippedMessage(v) {
		// A message over the Limits, skipped by the decoder: the sink
		// reports its loss; the connection goes on.
		if !l.sink(l, v) {
			return conn.ErrClosed
		}
		return nil
	}
	switch f, word := classify(v, l.protocol); f {
	case frameMessage:
		if !l.sink(l, v) {
			return conn.ErrClosed
		}
	case frameConfirm:
		return l.answer(word, v, nil)
	case frameReply:
		return l.answer("", v, v.Err())
	}
	return nil
}

// skippedMessage reports whether v, a TooLarge value, stands for a
// message: a push under RESP3, an array in subscriber mode under RESP2.
// Anything else skipped was the reply to a command, which fails it.
func (l *link) skippedMessage(v resp.Value) bool {
	var e *resp.ReplyTooLargeError
	if !errors.As(v.Err(), &e) {
		return false
	}
	return e.Type == resp.Push || l.protocol == 2 && e.Type == resp.Array
}

// answer gives a confirmation (word) or a reply (v; err is its server
// error) to the oldest op owed one. A server error ends the op however
// many confirmations it was owed: the server refused the whole command.
func (l *link) answer(word string, v resp.Value, err error) error {
	l.mu.Lock()
	if len(l.ops) == 0 {
		l.mu.Unlock()
		if word != "" {
			// The server dropped us from a channel by itself (a sharded
			// channel whose slot moved): a later reconnect restores it.
			return nil
		}
		return conn.ErrUnsolicited
	}
	o := l.ops[0]
	switch {
	case err != nil:
		o.owed = 0
	case word != o.confirm:
		l.mu.Unlock()
		return fmt.Errorf("%w: %q where %q was owed", conn.ErrUnsolicited, word, o.confirm)
	default:
		o.owed--
	}
	ended := o.owed == 0
	if ended {
		l.ops[0] = nil
		l.ops = l.ops[1:]
		l.owing.Add(-1)
	}
	l.mu.Unlock()
	if ended {
		l.after(o, v, err) // before the caller learns of it
		o.done <- err
	}
	return nil
}

// fault records the first fault and closes the socket, which stops the
// reader; the reader then fails every op.
func (l *link) fault(err error) {
	l.mu.Lock()
	if l.err == nil {
		if err != conn.ErrClosed {
			err = &conn.BrokenError{Cause: err}
		}
		l.err = err
		close(l.halt)
	}
	l.mu.Unlock()
	l.nc.Close()
}

// die runs once, on the reader's way out: it fails every op still owed
// replies with the first fault.
func (l *link) die(err error) {
	l.fault(err)
	l.mu.Lock()
	ops, err := l.ops, l.err
	l.ops = nil
	l.mu.Unlock()
	for _, o := range ops {
		l.after(o, resp.Value{}, err)
		o.done <- err
	}
	close(l.done)
}

// close ends the link and waits for its goroutines.
func (l *link) close() {
	l.fault(conn.ErrClosed)
	l.wg.Wait()
}

// watch is the health check: when nothing has arrived for pingEvery it
// sends a PING, and when the PING's reply has not arrived timeout later
// it fails the link with conn.ErrTimeout. Time the reader spends waiting
// for a slow consumer does not count: it is not reading then.
func (l *link) watch(pingEvery, timeout time.Duration) {
	defer l.wg.Done()
	tick := max(min(pingEvery, timeout)/4, time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	last := l.progress.Load()
	var idle time.Duration
	pinged := time.Duration(-1) // idle time when the PING went out
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		}
		if p := l.progress.Load(); p != last || l.stalled.Load() {
			last, idle, pinged = p, 0, -1
			continue
		}
		idle += tick
		switch {
		case pinged < 0 && idle >= pingEvery:
			if _, err := l.sendOp(context.Background(), &op{owed: 1, own: true}, []string{"PING"}); err != nil {
				return
			}
			pinged = idle
		case pinged >= 0 && idle-pinged >= timeout:
			l.fault(conn.ErrTimeout)
			return
		}
	}
}
