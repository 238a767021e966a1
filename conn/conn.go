package conn

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// A Handler receives the replies of one submission. Its methods run on the
// connection's reader goroutine and must not block.
type Handler interface {
	// Reply is called with reply i (from 0) of the submission, in the order
	// the commands were sent. v is valid only during the call.
	Reply(i int, v resp.Value)
	// Done is called exactly once per submission: with nil after the last
	// Reply, or with the error that failed the connection (the replies
	// not delivered by then are lost).
	Done(err error)
}

// Sender is what layers above a connection use: a Conn and a Client both
// send encoded commands this way.
type Sender interface {
	// Send queues n encoded commands for writing; h gets their n replies.
	Send(ctx context.Context, cmds []byte, n int, h Handler) error
}

// entry is one submission waiting for its replies.
type entry struct {
	h Handler
	n int
}

// Conn is one pipelining connection, safe for concurrent use. Commands from
// any number of goroutines are appended to one write buffer and written
// together by a writer goroutine, which flushes whenever the buffer is not
// empty; one reader goroutine completes submissions strictly in send order.
// RESP3 push frames never take a submission's place.
//
// A fault (I/O error, protocol error, peer close, liveness timeout) fails
// every queued and in-flight submission exactly once with a *BrokenError
// and closes the connection; a Conn is never reused after a fault.
type Conn struct {
	// Set at dial, read-only after.
	nc       net.Conn
	opts     Options
	protocol int
	hello    resp.Value // HELLO's reply (owned), or Null under RESP2

	// Shared, guarded by mu.
	mu      sync.Mutex
	wbuf    []byte  // encoded commands not yet handed to the writer
	queue   []entry // submissions in send order not yet taken by the reader
	err     error   // the first fault, or ErrClosed; set once
	writing bool    // someone holds the writer role
	spaceCh chan struct{}

	// Shared, atomic.
	pending  atomic.Int64  // commands queued or in flight
	progress atomic.Uint64 // socket reads that returned bytes
	writes   atomic.Uint64 // socket writes

	// Writer role (guarded by mu).
	wake  chan struct{} // hands the writer role to writeLoop, or wakes it to exit
	spare []byte

	// Reader.
	rd    *resp.Reader
	local []entry     // submissions taken from queue, in order
	li    int         // local[li] is the submission owed the next reply
	idx   int         // replies delivered to local[li]
	waits atomic.Bool // a sender may be waiting for room

	done chan struct{} // closed when the reader has failed every call
	wg   sync.WaitGroup
}

// progressReader counts socket reads that return bytes, for liveness.
type progressReader struct{ c *Conn }

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.c.nc.Read(b)
	if n > 0 {
		p.c.progress.Add(1)
	}
	return n, err
}

func newConn(nc net.Conn, opts Options, rd *resp.Reader) *Conn {
	c := &Conn{
		nc:   nc,
		opts: opts,
		rd:   rd,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	rd.Reset(progressReader{c})
	return c
}

func (c *Conn) start() {
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	if c.opts.ReadTimeout > 0 {
		c.wg.Add(1)
		go c.watchdog()
	}
}

// Protocol returns the RESP version in use: 3, or 2 after a fallback.
func (c *Conn) Protocol() int { return c.protocol }

// Hello returns the server's HELLO reply (a map with server, version,
// proto, id, mode, role, modules), or a Null value under RESP2.
func (c *Conn) Hello() resp.Value { return c.hello }

// Writes returns how many write calls the connection made to its socket.
// Many commands sent together share one write.
func (c *Conn) Writes() uint64 { return c.writes.Load() }

// Done is closed once the connection has failed or been closed and every
// call on it has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns the fault that ended the connection, ErrClosed after Close,
// or nil while it is healthy.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Send queues n encoded commands (cmds holds exactly n RESP commands);
// when no write is in progress it writes them itself before returning,
// else the active writer takes them. h receives the n replies, in order, on the reader
// goroutine. cmds is copied: the caller may reuse it when Send returns.
//
// Send waits while MaxPending commands are in flight, until there is room
// or ctx ends. When Send returns an error, h is never called.
func (c *Conn) Send(ctx context.Context, cmds []byte, n int, h Handler) error {
	if n <= 0 {
		return errors.New("conn: Send of no commands")
	}
	c.mu.Lock()
	for !c.hasRoom(n) {
		if c.err != nil {
			break
		}
		if c.spaceCh == nil {
			c.spaceCh = make(chan struct{})
		}
		c.waits.Store(true)
		if c.hasRoom(n) { // the reader may have freed room before it saw waits
			break
		}
		ch := c.spaceCh
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
	}
	if err := c.err; err != nil {
		c.mu.Unlock()
		return err
	}
	c.pending.Add(int64(n))
	c.wbuf = append(c.wbuf, cmds...)
	c.queue = append(c.queue, entry{h: h, n: n})
	if c.writing {
		// The active writer takes these bytes before it lets go.
		c.mu.Unlock()
		return nil
	}
	// Nobody is writing: write inline, saving a goroutine hand-off.
	c.writing = true
	buf := c.swap()
	c.mu.Unlock()
	if !c.write(buf) {
		return nil // the fault fails h through the reader
	}
	c.mu.Lock()
	c.spare = buf[:0]
	if len(c.wbuf) == 0 || c.err != nil {
		c.writing = false
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	// More arrived meanwhile: hand the writer role to the writer goroutine.
	// A full channel means a fault already woke it; it will exit.
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// swap takes the pending bytes, giving the spare buffer to later senders.
// It is called with mu held by the holder of the writer role.
func (c *Conn) swap() []byte {
	buf := c.wbuf
	c.wbuf, c.spare = c.spare[:0], nil
	return buf
}

// write writes buf to the socket; on error it records the fault and
// reports false.
func (c *Conn) write(buf []byte) bool {
	if c.opts.WriteTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
	}
	_, err := c.nc.Write(buf)
	c.writes.Add(1)
	if err != nil {
		c.fault(err)
		return false
	}
	return true
}

// hasRoom reports whether n more commands fit under MaxPending. One
// submission is always let through an empty connection, however large.
func (c *Conn) hasRoom(n int) bool {
	p := c.pending.Load()
	return p == 0 || p+int64(n) <= int64(c.opts.MaxPending)
}

// Close closes the connection: calls still waiting end with ErrClosed.
// It waits for the connection's goroutines to stop.
func (c *Conn) Close() error {
	c.fault(ErrClosed)
	c.wg.Wait()
	return nil
}

// fault records the first fault and closes the socket, which stops the
// reader; the reader fails every call. It is safe from any goroutine.
func (c *Conn) fault(err error) {
	c.mu.Lock()
	if c.err == nil {
		if err != ErrClosed {
			err = &BrokenError{Cause: err}
		}
		c.err = err
	}
	c.mu.Unlock()
	c.nc.Close()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop takes the writer role when a sender hands it over, and writes
// until nothing is left. Senders write inline when nobody holds the role,
// so this goroutine works only under load.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	for range c.wake {
		for {
			c.mu.Lock()
			if c.err != nil {
				c.mu.Unlock()
				return
			}
			if len(c.wbuf) == 0 {
				c.writing = false
				c.mu.Unlock()
				break
			}
			buf := c.swap()
			c.mu.Unlock()
			if !c.write(buf) {
				return
			}
			if cap(buf) > 4<<20 {
				buf = nil // do not keep a huge buffer for good
			}
			c.mu.Lock()
			c.spare = buf[:0]
			c.mu.Unlock()
		}
	}
}

// readLoop decodes replies and completes submissions in order. It is the
// only goroutine that completes them, so a fault fails each exactly once.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		v, err := c.rd.Next()
		if err != nil {
			c.fault(err)
			c.failAll()
			return
		}
		if v.Type == resp.Push {
			if c.opts.OnPush != nil {
				c.opts.OnPush(v)
			}
			continue
		}
		if c.li == len(c.local) && !c.take() {
			c.fault(ErrUnsolicited)
			c.failAll()
			return
		}
		e := &c.local[c.li]
		e.h.Reply(c.idx, v)
		c.idx++
		if c.idx == e.n {
			h, n := e.h, e.n
			*e = entry{}
			c.li++
			c.idx = 0
			c.release(n)
			h.Done(nil)
		}
	}
}

// take swaps the reader's exhausted local list with the shared queue; the
// two arrays are reused, so taking allocates nothing in steady state.
func (c *Conn) take() bool {
	c.mu.Lock()
	c.local, c.queue = c.queue, c.local[:0]
	c.mu.Unlock()
	c.li = 0
	return len(c.local) > 0
}

// release frees room for n commands and wakes senders waiting for it.
func (c *Conn) release(n int) {
	c.pending.Add(-int64(n))
	if !c.waits.Load() {
		return
	}
	c.mu.Lock()
	if ch := c.spaceCh; ch != nil {
		c.spaceCh = nil
		c.waits.Store(false)
		close(ch)
	}
	c.mu.Unlock()
}

// failAll ends every submission still owed replies with the fault, once,
// and marks the connection done.
func (c *Conn) failAll() {
	c.mu.Lock()
	err := c.err
	rest := c.queue
	c.queue = nil
	c.wbuf = nil
	c.mu.Unlock()
	for _, list := range [][]entry{c.local[c.li:], rest} {
		for _, e := range list {
			c.pending.Add(-int64(e.n))
			e.h.Done(err)
		}
	}
	c.local, c.li = nil, 0
	c.waits.Store(true)
	c.release(0)
	close(c.done)
}

// watchdog fails the connection when replies are owed and no byte has
// arrived for ReadTimeout. It costs the hot path one atomic add per read.
func (c *Conn) watchdog() {
	defer c.wg.Done()
	tick := max(c.opts.ReadTimeout/4, time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	last := c.progress.Load()
	var idle time.Duration
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		p := c.progress.Load()
		if p != last || c.pending.Load() == 0 {
			last, idle = p, 0
			continue
		}
		idle += tick
		if idle >= c.opts.ReadTimeout {
			c.fault(ErrTimeout)
			return
		}
	}
}
