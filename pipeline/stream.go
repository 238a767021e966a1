package pipeline

import (
	"context"
	"errors"
	"sync"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// ReplyFunc receives the outcome of command seq (numbered from 0 in the
// order added) of a Stream: its reply v with err nil (v may be a server
// error reply), or err when the connection failed before the reply came.
// It runs on the goroutine that reads the connection's replies (never two
// at once), v is valid only during the call, and it must not block or wait
// on the same connection. A panic in it is recovered by the connection:
// the stream fails with a *conn.PanicError naming "Stream.ReplyFunc"
// (matching ErrStreamFailed), the reply it panicked on was that command's
// outcome, and the other commands of its chunk are told the PanicError.
type ReplyFunc func(seq int64, v resp.Value, err error)

// StreamOptions configure a Stream.
type StreamOptions struct {
	// Window is the most commands in flight; Add waits beyond it.
	// Default 4096.
	Window int
	// Chunk is how many commands are gathered before they are handed to
	// the connection as one submission. Default 128.
	Chunk int
}

// Stream pushes a long run of commands (a million or more) through one
// connection with a bounded window in flight, delivering every reply in
// order to a ReplyFunc, without holding the run in memory. Commands are
// gathered into chunks, so the connection sees few large writes.
//
// A Stream is used by one goroutine; call Wait at the end. Use the
// *Stream NewStream returns: a Stream copied by value (go vet's
// copylocks check reports it) would share its gathered commands and its
// window with the original; it is refused with ErrStreamCopied and sends
// nothing.
type Stream struct {
	self   *Stream // the address NewStream made it at
	s      conn.Sender
	fn     ReplyFunc
	window int
	chunk  int

	cmds  resp.Cmds  // gathered, not yet sent
	facts wire.Facts // their facts, but for a run of plain ones (plain)
	probe wire.Facts // the fact of the command being added
	one   resp.Cmds  // its encoding, made with its fact (probe.Strings)
	// plain: s reads no facts of a plain submission (wire.WantsFacts),
	// so a chunk of commands plain by their names goes without facts.
	plain bool
	next  int64 // sequence number of the first command in cmds

	mu       sync.Mutex
	inflight int
	room     chan struct{} // signalled (never closed) when room is freed: one waiter, the Stream's goroutine
	err      error         // the first fault
	free     []*chunk
}

// NewStream starts a stream over s delivering replies to fn.
func NewStream(s conn.Sender, fn ReplyFunc, opts StreamOptions) *Stream {
	if opts.Window <= 0 {
		opts.Window = 4096
	}
	if opts.Chunk <= 0 {
		opts.Chunk = 128
	}
	opts.Chunk = min(opts.Chunk, opts.Window)
	st := &Stream{s: s, fn: fn, window: opts.Window, chunk: opts.Chunk, plain: !wire.WantsFacts(s),
		room: make(chan struct{}, 1)}
	st.self = st
	return st
}

// ErrStreamCopied is the error of every method of a Stream that is not
// the one NewStream returned (a copy by value, a zero Stream): nothing
// is added or sent.
var ErrStreamCopied = errors.New("pipeline: Stream copied by value (or not made by NewStream): use the *Stream NewStream returned")

// chunk is the Handler of one submission of a Stream.
type chunk struct {
	st        *Stream
	base      int64
	n, copied int
}

// Waits is false: the stream goes on adding while replies come.
func (c *chunk) Waits() bool { return false }

// Reply delivers reply i. It is counted first: a ReplyFunc that panics
// has had the reply as its command's one outcome, and the rest of the
// chunk gets the *conn.PanicError (see Done).
func (c *chunk) Reply(i int, v resp.Value) {
	c.copied = i + 1
	c.st.fn(c.base+int64(i), v, nil)
}

// Done reports the replies that will never come, frees the window and
// recycles the chunk.
func (c *chunk) Done(err error) { c.end(err, true) }

// PanicFunc names the ReplyFunc as the function that panicked, in a
// *conn.PanicError (see wire.Named).
func (c *chunk) PanicFunc() string { return "Stream.ReplyFunc" }

// end reports the replies that will never come (with err), records err
// as the stream's fault when it is one, frees the window and recycles
// the chunk.
func (c *chunk) end(err error, fault bool) {
	if err != nil {
		// Deferred, so the window is freed and the fault kept even when
		// the ReplyFunc panics here: the stream still ends. Only a chunk
		// that fails pays for the defer.
		defer c.free(err, fault)
		for i := c.copied; i < c.n; i++ {
			c.st.fn(c.base+int64(i), resp.Value{}, err)
		}
		return
	}
	c.free(nil, fault)
}

// free records err as the stream's fault when it is one, frees the
// window and recycles the chunk.
func (c *chunk) free(err error, fault bool) {
	st := c.st
	st.mu.Lock()
	if fault && err != nil && st.err == nil {
		st.err = err
	}
	st.inflight -= c.n
	select {
	case st.room <- struct{}{}:
	default: // a signal is pending already
	}
	st.free = append(st.free, c)
	st.mu.Unlock()
}

// Add appends a command given as strings; it is sent when the chunk is
// full. It waits while the window is full, until ctx ends. A command of no
// arguments is refused with ErrEmptyCommand and takes no sequence number.
//
// Add waits for room before the command takes its sequence number: when
// ctx ends first (or had ended), Add returns ctx's error and the command
// is not queued, so adding it again sends it once. Once queued, a
// command's outcome is its ReplyFunc's; Add may still return the error of
// the chunk it sent (a refusal, the connection's fault), which that
// chunk's commands are told too.
func (st *Stream) Add(ctx context.Context, args ...string) error {
	if st.self != st {
		return ErrStreamCopied
	}
	if len(args) == 0 {
		return ErrEmptyCommand
	}
	if err := st.roomForNext(ctx); err != nil {
		return err
	}
	if st.plainRun(cmds.Plain(args[0])) {
		st.cmds.Add(args...)
		return st.added(ctx)
	}
	st.probe.Reset()
	st.one.Reset()
	st.probe.Strings(&st.one, args)
	return st.add(ctx, func() { st.cmds.AddCmds(&st.one) })
}

// plainRun reports whether a command whose name is plain (cmds.Plain)
// joins the chunk without a fact: the Sender reads none and the chunk
// has none so far, so the connection's guard has nothing to look at.
func (st *Stream) plainRun(plain bool) bool {
	return plain && st.plain && st.facts.Len() == 0
}

// add appends the command whose fact is in probe, encoded by enc.
func (st *Stream) add(ctx context.Context, enc func()) error {
	f := st.probe.List()[0]
	if f.Kind&cmds.Guarded != 0 {
		// In a chunk of its own (see AddCmd).
		if err := st.Flush(ctx); err != nil {
			return err
		}
		if err := st.roomFor(ctx, 1); err != nil {
			return err // not queued
		}
		enc()
		st.facts.Add(f)
		return st.Flush(ctx)
	}
	if st.facts.Len() < st.cmds.Len() {
		st.facts.Sync(&st.cmds) // the plain run before it: read back
	}
	enc()
	st.facts.Add(f)
	return st.added(ctx)
}

// roomFor waits, before a command takes its sequence number, until the
// chunk of n commands it will be sent in fits the window, so that the
// Flush after it does not wait; it returns ctx's error, and the command
// is then not queued, when ctx ends first (or had ended).
func (st *Stream) roomFor(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	if err := st.waitLocked(ctx, func() bool { return st.inflight > 0 && st.inflight+n > st.window && st.err == nil }); err != nil {
		return err
	}
	st.mu.Unlock()
	return nil
}

// roomForNext is roomFor for a command joining the gathered ones: it
// waits only when the command completes a chunk, which is then sent.
func (st *Stream) roomForNext(ctx context.Context) error {
	if n := st.cmds.Len() + 1; n >= st.chunk {
		return st.roomFor(ctx, n)
	}
	return ctx.Err()
}

func (st *Stream) added(ctx context.Context) error {
	if st.cmds.Len() >= st.chunk {
		return st.Flush(ctx)
	}
	return nil
}

// AddCmd appends a command built on its own (resp.Command,
// resp.BuildCommand). One that cannot be sent (cmd.Err) is refused and
// takes no sequence number. A command a connection guards (blocking,
// subscribing, transactions: see conn's guard) is sent in a chunk of its
// own, so that if the connection refuses it, no other command shares its
// fate; one refused for what it carries (an argument over the
// connection's Options.MaxArg) is refused alone too, the others of its
// chunk then sent one by one. Its facts are read from its bytes, once,
// here.
func (st *Stream) AddCmd(ctx context.Context, cmd resp.Cmd) error {
	if st.self != st {
		return ErrStreamCopied
	}
	if err := cmd.Err(); err != nil {
		return err
	}
	if err := st.roomForNext(ctx); err != nil {
		return err
	}
	if st.plainRun(cmds.Plain(wire.NameOf(cmd.Bytes()))) {
		st.cmds.AddCmd(cmd)
		return st.added(ctx)
	}
	st.probe.Reset()
	if err := st.probe.Encoded(cmd.Bytes(), 1); err != nil {
		return err
	}
	return st.add(ctx, func() { st.cmds.AddCmd(cmd) })
}

// ErrStreamFailed is matched by the error Flush, Add and Wait return once
// a chunk of the stream has failed; the ReplyFunc has then been told which
// commands failed.
var ErrStreamFailed = errors.New("pipeline: stream failed")

// Flush hands the gathered commands to the connection now.
func (st *Stream) Flush(ctx context.Context) error {
	if st.self != st {
		return ErrStreamCopied
	}
	if st.cmds.Len() == 0 {
		return st.Err()
	}
	n := st.cmds.Len()
	st.mu.Lock()
	full := func() bool { return st.inflight > 0 && st.inflight+n > st.window && st.err == nil }
	if err := st.waitLocked(ctx, full); err != nil {
		return err
	}
	if st.err != nil {
		err := st.err
		st.mu.Unlock()
		return errors.Join(ErrStreamFailed, err)
	}
	var c *chunk
	if k := len(st.free); k > 0 {
		c = st.free[k-1]
		st.free = st.free[:k-1]
	} else {
		c = &chunk{st: st}
	}
	st.inflight += n
	st.mu.Unlock()
	c.base, c.n, c.copied = st.next, n, 0
	var w wire.Cmds
	var err error
	if st.plain && st.facts.Len() == 0 {
		w, err = wire.PlainCmds(&st.cmds) // every command plain by name
	} else {
		w, err = st.facts.Sync(&st.cmds)
	}
	if err == nil {
		err = st.s.Send(ctx, w, c)
		if err != nil && n > 1 && errors.Is(err, conn.ErrCommandRefused) {
			// Nothing was sent, and no command of a chunk of several is
			// guarded (those go alone): one was refused for what it
			// carries (an argument over the connection's MaxArg), which
			// is its outcome alone. Each goes on its own.
			err = st.each(ctx, c, w)
			st.next += int64(n)
			st.cmds.Reset()
			st.facts.Reset()
			return err
		}
	}
	st.next += int64(n)
	st.cmds.Reset()
	st.facts.Reset()
	if err != nil {
		// Never sent: each command still gets its one outcome, in order,
		// after the chunks before it have had theirs.
		st.drainTo(n)
		if errors.Is(err, conn.ErrCommandRefused) {
			// A refusal is the command's outcome, not a fault: the stream
			// goes on.
			c.end(err, false)
			return err
		}
		c.Done(err)
		return errors.Join(ErrStreamFailed, err)
	}
	return nil
}

// each sends the commands of w, the submission of chunk c that was
// refused whole, one by one, each with a chunk of its own (c the first):
// each gets its own outcome, in order. It returns the first refusal, or
// the fault that ended the rest (joined with ErrStreamFailed).
func (st *Stream) each(ctx context.Context, c *chunk, w wire.Cmds) error {
	k, l, err := wire.Known(w) // the commands' sizes
	defer wire.Release(l)
	n, base := w.Len(), c.base // c may be reused once it has ended
	var first error
	at := uint32(0)
	for i := range n {
		ci := c
		if i > 0 {
			st.mu.Lock()
			if j := len(st.free); j > 0 {
				ci = st.free[j-1]
				st.free = st.free[:j-1]
			} else {
				ci = &chunk{st: st}
			}
			st.mu.Unlock()
		}
		ci.base, ci.n, ci.copied = base+int64(i), 1, 0
		if err == nil {
			size := k.Facts()[i].Size
			err = st.s.Send(ctx, wire.Make(k.Bytes()[at:at+size], 1, k.Facts()[i:i+1]), ci)
			at += size
			if err == nil {
				continue
			}
		}
		st.drainTo(n - i) // the commands before it have had their outcomes
		if errors.Is(err, conn.ErrCommandRefused) {
			ci.end(err, false)
			if first == nil {
				first = err
			}
			err = nil
			continue
		}
		ci.n = n - i // this one and the rest: never sent
		ci.Done(err)
		return errors.Join(ErrStreamFailed, err)
	}
	return first
}

// drainTo waits until at most n commands are in flight. The connection
// ends every submitted chunk (with replies or its fault), so it returns.
func (st *Stream) drainTo(n int) {
	st.mu.Lock()
	st.waitLocked(context.Background(), func() bool { return st.inflight > n })
	st.mu.Unlock()
}

// waitLocked waits, with mu held, while busy() holds, for chunks to end.
// On ctx's end it returns ctx.Err() with mu unlocked.
func (st *Stream) waitLocked(ctx context.Context, busy func() bool) error {
	for busy() {
		// A signal may be stale (room freed before this wait): busy is
		// checked again, so it only costs a turn of the loop.
		st.mu.Unlock()
		select {
		case <-st.room:
		case <-ctx.Done():
			return ctx.Err()
		}
		st.mu.Lock()
	}
	return nil
}

// Err returns the first fault the stream saw, or nil.
func (st *Stream) Err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return errors.Join(ErrStreamFailed, st.err)
	}
	return nil
}

// Sent returns how many commands were handed to the connection.
func (st *Stream) Sent() int64 { return st.next }

// Wait flushes what is gathered and waits until every reply has been
// delivered, or ctx ends. It returns the first fault, if any. The Stream
// may be used again after Wait: sequence numbers continue.
func (st *Stream) Wait(ctx context.Context) error {
	if st.self != st {
		return ErrStreamCopied
	}
	if err := st.Flush(ctx); err != nil && !errors.Is(err, ErrStreamFailed) {
		return err
	}
	st.mu.Lock()
	if err := st.waitLocked(ctx, func() bool { return st.inflight > 0 }); err != nil {
		return err
	}
	st.mu.Unlock()
	return st.Err()
}

// Close waits like Wait; the Stream must not be used after Close.
func (st *Stream) Close(ctx context.Context) error {
	return st.Wait(ctx)
}
