package conn

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// Sender is the client interface: what kv, pipeline, dispatch and emq
// send through, and what a program should hold. A Conn, a Client and
// cluster.Client implement it, and so can any type outside this module:
// its methods use only public types. Send is the one primitive; Do, DoFunc
// and DoInt are built on it, and SendFunc supplies them for a type that
// has only Send (a fake for tests, or a wrapper around another Sender).
//
// DoFunc called through the interface cannot prove that fn stays on the
// caller's stack, so a callback that captures variables costs one
// allocation per call that way; on a *Conn, *Client or *cluster.Client
// it costs none.
type Sender interface {
	// Send queues a submission of counted commands; h gets their
	// replies in order (see Conn.Send). When Send returns an error,
	// nothing was sent and h is never called. cmds.Bytes() are the
	// caller's: copy them to keep them past the return.
	Send(ctx context.Context, cmds Cmds, h Handler) error
	// Do sends a command given as arguments of any of the kinds
	// AppendArg takes and waits for its reply (see Conn.Do).
	Do(ctx context.Context, args ...any) (resp.Value, error)
	// DoFunc sends one command and waits for its reply (see Conn.DoFunc).
	DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error
	// DoInt sends a command whose reply is an integer (see Conn.DoInt).
	DoInt(ctx context.Context, cmd resp.Cmd) (int64, error)
}

// Cmds is the submission, package submit's public type: Len commands
// encoded back to back in Bytes (RESP arrays of bulk strings) and Facts,
// what is known about each (its kind and timeout, its keys: see
// cmds.Fact), one per command, known where it was encoded. It has no
// exported fields: make one with CmdsOf or CmdsOfBatch (resp's counted
// commands) or, from bytes put together by hand (a fake, a proxy), with
// submit.New, which checks them once; range over its commands with its
// All method. Facts nil means unknown: the connection that receives the
// submission reads them from its bytes, once.
//
// The module's own encoders of raw commands (pipeline.Batch, DoFunc of a
// resp.Cmd, a Stream, dispatch) send a submission whose names are all
// cmds.Plain without facts, marked Plain (see Plain), to a Conn or Client
// without hooks, which sends it without reading it. Any other Sender (one
// with hooks, a cluster, a wrapper) is given the facts: a Cmds a user's
// code holds is never Plain.
type Cmds = submit.Cmds

// Handler receives the replies of one submission (package submit's
// public interface): Reply(i, v) for each command in order (v valid
// only during the call), then Done(err) exactly once, with nil after the
// last reply or with the error that ended the submission early. Waits
// reports whether the submitter waits for Done right after Send (then
// the connection may read the replies on its goroutine, and a Client
// sends a blocking command on a dedicated connection); a Handler must
// not block. Any type, outside this module too, may implement it. A
// panic in Reply or Done is recovered where it happens (the reader
// goroutine, or a caller reading its own replies) and never leaves the
// connection's roles held: a panic in Reply ends the submission, whose
// remaining replies are read and dropped, with Done(*PanicError); one in
// Done is logged to Options.Logger. Every other submission still gets
// its own replies (see PanicError).
type Handler = submit.Handler

// CmdsOf is the submission of one command (its build error, if any).
func CmdsOf(cmd resp.Cmd) (Cmds, error) { return wire.FromCmd(cmd) }

// CmdsOfBatch is the submission of every command in c.
func CmdsOfBatch(c *resp.Cmds) (Cmds, error) { return wire.FromCmds(c) }

// SendFunc is a Sender made of a Send function: Do, DoFunc and DoInt go
// through it. It is how a fake for tests or a wrapper around another
// Sender is written (see the package example).
type SendFunc func(ctx context.Context, cmds Cmds, h Handler) error

// Send calls f.
func (f SendFunc) Send(ctx context.Context, cmds Cmds, h Handler) error { return f(ctx, cmds, h) }

// Do is Conn.Do through f.
func (f SendFunc) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return do(ctx, f, args)
}

// DoFunc is Conn.DoFunc through f.
func (f SendFunc) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, f, cmd, fn)
}

// DoInt is Conn.DoInt through f.
func (f SendFunc) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, f, cmd)
}

var (
	_ Sender = (*Conn)(nil)
	_ Sender = (*Client)(nil)
	_ Sender = SendFunc(nil)
)

// entry is one submission waiting for its replies.
type entry struct {
	h     wire.Handler
	n     int
	at    uint64 // bytes received when it was queued: its replies come after
	block bool   // it holds a blocking command
	// slots: h's replies land in slots the reader fills itself (step's
	// bulk path), nil when h is not wire.Slotted.
	slots wire.Slotted
}

// Conn is one pipelining connection, safe for concurrent use. Commands from
// any number of goroutines are appended to one write buffer in the order
// their submissions are queued. One goroutine at a time holds the writer
// role and writes everything buffered in one call: the sender itself when
// the connection is idle, else the one already writing, handing over to
// the connection's writer goroutine under load. Likewise one goroutine at a
// time holds the reader role and completes submissions strictly in send
// order: a caller waiting for its own replies (Exchange) when nobody else
// reads, else the connection's reader goroutine. RESP3 push frames never
// take a submission's place.
//
// A fault (I/O error, protocol error, peer close, liveness timeout) fails
// every queued and in-flight submission exactly once with a *BrokenError
// and closes the connection; a Conn is never reused after a fault.
type Conn struct {
	// Set at dial, read-only after.
	nc       net.Conn
	opts     Options
	hooks    *hookSet // nil without Options.Hooks and Observer
	protocol int
	hello    resp.Value // HELLO's reply (owned), or Null under RESP2
	id       int64      // the server's CLIENT ID for it, 0 when unknown
	// exclusive: the Conn is lent to one caller (Client.Dedicated), who
	// may use WATCH and MULTI across calls; set before it is lent.
	exclusive atomic.Bool
	txUsed    atomic.Bool // a lent Conn saw WATCH or MULTI: not reused

	// Shared, guarded by mu.
	mu      sync.Mutex
	wbuf    []byte          // encoded commands not yet handed to the writer
	queue   []entry         // submissions in send order not yet taken by the reader
	err     error           // the first fault, or ErrClosed; set once
	writing bool            // someone holds the writer role
	reader  role            // who holds the reader role (see role; setRole)
	leadCtx context.Context // the leader's ctx, when it can end
	spaceCh chan struct{}

	// Shared, atomic.
	pending    atomic.Int64  // commands queued or in flight
	blocked    atomic.Int32  // blocking submissions outstanding (set under mu)
	blockUntil atomic.Int64  // when the last of their timeouts passes (unix ns; forever)
	progress   atomic.Uint64 // bytes read from the socket
	writes     atomic.Uint64 // socket writes

	// Writer role (guarded by mu).
	wake      chan struct{} // hands the writer role to writeLoop, or wakes it to exit
	spare     []byte
	wdeadline time.Time // when the write deadline was last moved

	// Idle check (under mu): the socket's unread byte count, and whether
	// the peer closed it, for plain TCP and unix sockets.
	raw       syscall.RawConn
	inq       func(fd uintptr)
	inqBytes  int
	inqClosed bool    // the peer closed the socket, nothing left to read
	peek      [1]byte // recv(MSG_PEEK)'s buffer

	onCancel func() // interruptLeader, made once

	// Reader role: only its holder touches these.
	rwake chan struct{} // hands the reader role to readLoop
	rd    *resp.Reader
	local []entry     // submissions taken from queue, in order
	li    int         // local[li] is the submission owed the next reply
	idx   int         // replies delivered to local[li]
	waits atomic.Bool // a sender may be waiting for room

	done chan struct{} // closed when the reader has failed every call
	wg   sync.WaitGroup
}

// progressReader counts the bytes read from the socket, for liveness and
// to tell a reply from a stray frame.
type progressReader struct{ c *Conn }

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.c.nc.Read(b)
	if n > 0 {
		p.c.progress.Add(uint64(n))
	}
	return n, err
}

func newConn(nc net.Conn, opts Options, rd *resp.Reader) *Conn {
	c := &Conn{
		nc:    nc,
		opts:  opts,
		hooks: newHookSet(opts),
		rd:    rd,
		wake:  make(chan struct{}, 1),
		rwake: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	rd.Reset(progressReader{c})
	c.onCancel = c.interruptLeader
	c.watchIdle()
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
func (c *Conn) Err() error { return c.fault0() }

// fault0 is c.err read under mu: what the package's own code asks, rather
// than going back up through Err.
func (c *Conn) fault0() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	return err
}

// Send queues a submission of counted commands: the plumbing under
// DoFunc, pipeline.Batch, pipeline.Stream and the dispatch executors,
// and what a Sender written outside the module (a fake, a wrapper: see
// the SendFunc examples) passes submissions on with; cmds and h are
// public types (package submit).
//
// Nothing is sent when ctx is already done, when a command changes the
// connection's reply model (a *CommandError matching ErrCommandRefused),
// when MaxPending commands are in flight and ctx ends before there is
// room, or when the connection had already failed, or the server had
// closed it while it was idle (then the error is the connection's fault,
// matching ErrBroken, or ErrClosed after Close; a Client sends the call
// on its next connection instead). When the connection is idle and cmds
// is small (64 KiB at most) the caller writes them itself, else the
// writer goroutine does. h receives the replies in order on the goroutine
// holding the reader role: the caller's own, when h.Waits() and nobody
// else reads (Send then returns once h is done or ctx ends), else the
// reader goroutine. cmds.Bytes() are the caller's again once Send
// returns: written from before it returns, or copied. When Send returns
// an error, h is never called.
func (c *Conn) Send(ctx context.Context, cmds Cmds, h Handler) error {
	if c.hooks == nil && cmds.Plain() && cmds.Len() > 0 {
		// The module's own plain submission (no facts, none needed: no
		// hooks to tell, no guarded command) goes straight to the
		// queue: the per-command path of DoFunc and raw batches.
		return c.send(ctx, cmds, h)
	}
	return c.sendChecked(ctx, cmds, h)
}

// sendChecked is Send for a submission whose facts are to be read or
// checked (factsFor), or that the hooks see.
func (c *Conn) sendChecked(ctx context.Context, cmds Cmds, h Handler) error {
	cmds, l, err := c.hooks.factsFor(cmds)
	if err != nil {
		return err
	}
	if c.hooks.sees(cmds) {
		err = c.sendHooked(ctx, cmds, h)
	} else {
		err = c.send(ctx, cmds, h)
	}
	wire.Release(l)
	return err
}

// ErrMalformed is matched (errors.Is) by the error of a submission whose
// bytes are not Len whole commands (arrays of bulk strings), found by
// submit.New or read when it came without its facts. Nothing is sent.
var ErrMalformed = submit.ErrMalformed

// send is Send without the hooks: a Client runs them itself, once per
// submission, whichever connection takes it.
func (c *Conn) send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	lead, err := c.submit(ctx, cmds, h)
	if err == nil && lead {
		c.lead(ctx, h)
	}
	return err
}

// sendHooked is Send with every command reported to the hooks. After
// submit, o belongs to the connection (its Done recycles it).
func (c *Conn) sendHooked(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	if cmds.Len() <= 0 || h == nil {
		return errBadSubmission
	}
	o := c.hooks.begin(ctx, cmds, h)
	if p := o.panic; p != nil {
		o.fail(p) // a Before hook panicked: nothing is sent
		return p
	}
	if err := c.send(ctx, cmds, o); err != nil {
		o.fail(err)
		return err
	}
	return nil
}

// maxInline is the largest submission a caller writes on its own
// goroutine. A larger write may block until the peer reads it, so the
// writer goroutine writes it: the caller stays free to give up when its
// ctx ends, and reads the replies meanwhile (when it leads; else the
// reader goroutine does), for a peer that stops reading until its
// replies are read (as simple servers and proxies do).
const maxInline = 64 << 10

// submit queues the commands, takes the reader role when asked and free,
// and writes inline when nobody is writing.
func (c *Conn) submit(ctx context.Context, w wire.Cmds, h wire.Handler) (lead bool, err error) {
	cmds, n := w.Bytes(), w.Len()
	if n <= 0 || h == nil {
		return false, errBadSubmission
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err() // a done ctx sends nothing
	default:
	}
	var block time.Duration
	blocking := false
	if w.Facts() != nil { // without facts (Plain) nothing is guarded
		if blocking, block, err = c.inspect(w); err != nil {
			return false, err
		}
	}
	if max := c.opts.MaxArg; max >= 0 && len(cmds) > max { // checkArgs' own test, in line: it is not inlined
		if err = checkArgs(w, max); err != nil {
			return false, err
		}
	}
	slots, _ := h.(wire.Slotted)
	c.mu.Lock()
	if err := c.waitRoom(ctx, n); err != nil {
		return false, err
	}
	at := c.progress.Load()
	if c.reader == roleFree || (c.opts.OnPush != nil && c.pending.Load() == 0) {
		// Nothing is owed: bytes already waiting in the socket answer
		// nothing, and this submission's replies come after them. With
		// OnPush the reader goroutine may be reading at this moment;
		// progress is loaded first, so a read in between only makes
		// the count smaller, never larger than where the replies start.
		waiting, closed := c.idleBytes()
		if closed {
			// The server closed the idle connection (its timeout,
			// CLIENT KILL): nothing is sent, and the caller is told so.
			c.mu.Unlock()
			c.fault(errPeerClosed)
			return false, sentNothing(c.fault0())
		}
		at += uint64(waiting)
	}
	c.pending.Add(int64(n))
	// Idle (nobody writing, nothing else owed) and small: the caller
	// writes cmds itself, straight from its bytes, before Send returns;
	// else they are copied for the writer role's holder.
	direct := !c.writing && c.pending.Load() == int64(n) && len(cmds) <= maxInline
	if !direct {
		c.wbuf = append(c.wbuf, cmds...)
	}
	c.queue = append(c.queue, entry{h: h, n: n, at: at, block: blocking, slots: slots})
	if blocking {
		c.blockStart(block)
	}
	if c.reader == roleFree {
		if h.Waits() && c.opts.OnPush == nil {
			c.setRole(roleLeader)
			lead = true
		} else {
			c.handToReader()
		}
	}
	switch {
	case direct:
		// Idle: write inline, saving a goroutine hand-off and a copy.
		c.writing = true
		c.mu.Unlock()
		c.writeInline(cmds)
	case c.writing:
		// The active writer takes these bytes before it lets go.
		c.mu.Unlock()
	default:
		// Busy, or a large write: let the writer goroutine gather more
		// before it writes, or write what may block.
		c.writing = true
		c.mu.Unlock()
		c.wakeWriter()
	}
	return lead, nil
}

// waitRoom waits, with mu held, until n more commands fit under
// MaxPending. On error it returns with mu unlocked.
func (c *Conn) waitRoom(ctx context.Context, n int) error {
	for !c.hasRoom(n) && c.err == nil {
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
		return sentNothing(err)
	}
	return nil
}

// hasRoom reports whether n more commands fit under MaxPending. One
// submission is always let through an empty connection, however large.
func (c *Conn) hasRoom(n int) bool {
	p := c.pending.Load()
	return p == 0 || p+int64(n) <= int64(c.opts.MaxPending)
}

// Close closes the connection: calls still waiting end with ErrClosed.
// It waits for the connection's goroutines to stop. Close must not be
// called from a Handler or an OnPush callback.
func (c *Conn) Close() error {
	c.fault(ErrClosed)
	c.wg.Wait()
	return nil
}

// fault records the first fault and closes the socket, which stops
// whoever reads; the holder of the reader role fails every call. When
// nobody holds it, the reader goroutine is handed it to do so.
func (c *Conn) fault(err error) {
	c.mu.Lock()
	if c.err == nil {
		if err != ErrClosed {
			err = &BrokenError{Cause: err}
		}
		c.err = err
	}
	if c.reader == roleFree {
		c.handToReader()
	}
	c.mu.Unlock()
	c.nc.Close()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
