package main

import (
	"context"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// coldStart is a conn.Sender for the script_loads check that makes a cold
// start certain rather than likely: it holds the first want submissions
// until all of them have arrived (or wait has passed), then sends them to
// the connection as one submission, so that every one of their commands
// reaches the server in the same write, before any reply, and so before
// any SCRIPT LOAD. Later submissions pass straight through.
type coldStart struct {
	c    conn.Sender
	want int

	mu      sync.Mutex
	held    []heldSend
	sent    int           // submissions sent together when the barrier opened
	buf     []byte        // the held commands, back to back
	n       int           // how many; -1 once the barrier has opened
	release chan struct{} // closed when the held submissions were sent
	err     error         // the combined Send's error, for every holder
	timer   *time.Timer
}

// heldSend is one submission waiting at the barrier.
type heldSend struct {
	h wire.Handler
	n int
}

// newColdStart holds the first want submissions to c for at most wait.
func newColdStart(c conn.Sender, want int, wait time.Duration) *coldStart {
	cs := &coldStart{c: c, want: want, release: make(chan struct{})}
	cs.timer = time.AfterFunc(wait, cs.flush)
	return cs
}

// Send holds the submission until the barrier opens, or passes it through
// once it has.
func (cs *coldStart) Send(ctx context.Context, cmds submit.Cmds, h submit.Handler) error {
	cs.mu.Lock()
	if cs.n < 0 { // the barrier has opened
		cs.mu.Unlock()
		return cs.c.Send(ctx, cmds, h)
	}
	cs.held = append(cs.held, heldSend{h: h, n: cmds.Len()})
	cs.buf = append(cs.buf, cmds.Bytes()...)
	cs.n += cmds.Len()
	// No facts: the combined submission's facts are read
	// from its bytes, once, by the Sender it goes to.
	full := len(cs.held) == cs.want
	cs.mu.Unlock()
	if full {
		cs.flush()
	}
	// ctx is not honoured while held: a held submission cannot be taken
	// back from the combined one, and a Send that fails must never call
	// its handler. The barrier's own timer bounds the wait.
	<-cs.release
	return cs.err
}

// Do, DoFunc and DoInt send through Send, so they are held too.
func (cs *coldStart) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return wire.Do(ctx, cs, args...)
}

func (cs *coldStart) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, cs, cmd, fn)
}

func (cs *coldStart) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, cs, cmd)
}

// RegisterScript passes a script's source on to a sender that loads
// scripts by itself (a cluster client), so the barrier hides nothing.
func (cs *coldStart) RegisterScript(sha, src string) {
	if r, ok := cs.c.(wire.ScriptRegistry); ok {
		r.RegisterScript(sha, src)
	}
}

// together returns how many submissions went out together when the
// barrier opened.
func (cs *coldStart) together() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.sent
}

// flush sends what is held as one submission, once.
func (cs *coldStart) flush() {
	cs.mu.Lock()
	if cs.n < 0 {
		cs.mu.Unlock()
		return
	}
	held, buf, n := cs.held, cs.buf, cs.n
	cs.held, cs.n = nil, -1
	cs.sent = len(held)
	cs.mu.Unlock()
	cs.timer.Stop()
	if n > 0 {
		// submit.New: put together here, its bytes are checked once.
		cmds, err := submit.New(buf, n)
		if err == nil {
			err = cs.c.Send(context.Background(), cmds, &fanOut{subs: held})
		}
		cs.err = err
	}
	close(cs.release)
}

// fanOut hands the replies of one combined submission back to the
// handlers of the submissions it was made of, in order.
type fanOut struct {
	subs []heldSend
	cur  int // the submission owed the next reply
	idx  int // replies delivered to it
}

// Reply delivers reply i to its own submission, and completes that
// submission after its last reply.
func (f *fanOut) Reply(_ int, v resp.Value) {
	s := f.subs[f.cur]
	s.h.Reply(f.idx, v)
	f.idx++
	if f.idx == s.n {
		f.cur, f.idx = f.cur+1, 0
		s.h.Done(nil)
	}
}

// Waits is false: the barrier's flush does not wait for the replies.
func (f *fanOut) Waits() bool { return false }

// Done fails the submissions not completed yet, if the connection failed.
func (f *fanOut) Done(err error) {
	for _, s := range f.subs[f.cur:] {
		s.h.Done(err)
	}
}
