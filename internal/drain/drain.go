// Package drain retires a connection without cutting the calls in
// flight on it: a Gate counts the calls a connection carries, refuses new
// ones once retired, and reports when the last one has ended, so that the
// connection is closed only then and every call written on it ends with
// its real reply.
package drain

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Grace bounds how long a retired connection waits for its calls: past
// it the connection is closed anyway and the calls still in flight end
// with its close. A node that left the topology answers what it was sent
// within a round trip (a reply, MOVED or -READONLY; a blocked call is
// unblocked by the role change), so the grace is only for a node that
// hangs.
const Grace = 10 * time.Second

// Gate counts the calls in flight on one connection. Its zero value is
// open. Enter and Leave are two atomic operations each, no lock.
type Gate struct {
	n       atomic.Int64
	retired atomic.Bool
	init    sync.Once
	once    sync.Once
	empty   chan struct{} // made by Retire, closed once retired and drained
}

// Enter counts a call in before it is sent. False: the gate is retired,
// the call must go elsewhere (nothing was counted).
func (g *Gate) Enter() bool {
	g.n.Add(1)
	if g.retired.Load() {
		g.Leave()
		return false
	}
	return true
}

// Leave counts a call out once it has ended (or was not sent after all).
func (g *Gate) Leave() {
	if g.n.Add(-1) == 0 && g.retired.Load() {
		g.drained()
	}
}

// Retire refuses new calls from now on and returns a channel closed once
// every call counted in has left (at once when none is in flight).
// Calling it again returns the same channel.
//
// Enter's add comes before its check of retired, Retire's store before
// its load of the count (sequentially consistent atomics): either Retire
// sees the call counted, and the call's Leave closes the channel, or the
// call sees the gate retired and backs out.
func (g *Gate) Retire() <-chan struct{} {
	g.init.Do(func() { g.empty = make(chan struct{}) })
	g.retired.Store(true)
	if g.n.Load() == 0 {
		g.drained()
	}
	return g.empty
}

// Retired reports whether Retire was called.
func (g *Gate) Retired() bool { return g.retired.Load() }

func (g *Gate) drained() { g.once.Do(func() { close(g.empty) }) }

// Wait waits until the gate, retired, has drained, grace has passed, or
// stop is closed, whichever comes first, and reports whether it drained.
func (g *Gate) Wait(grace time.Duration, stop <-chan struct{}) bool {
	empty := g.Retire()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-empty:
		return true
	case <-t.C:
	case <-stop:
	}
	select {
	case <-empty:
		return true
	default:
		return false
	}
}

// Track returns h counted out of g when it is done: the Handler to send
// on g's connection after g.Enter. Its wrappers are recycled (no
// allocation per call once warm).
func Track(h wire.Handler, g *Gate) wire.Handler {
	t := trackers.Get().(*tracked)
	t.h, t.g = h, g
	return t
}

var trackers = sync.Pool{New: func() any { return new(tracked) }}

// tracked is a Handler that leaves its gate when done.
type tracked struct {
	h wire.Handler
	g *Gate
}

func (t *tracked) Reply(i int, v resp.Value) { t.h.Reply(i, v) }
func (t *tracked) Waits() bool               { return t.h.Waits() }
func (t *tracked) PanicFunc() string         { return wire.PanicFunc(t.h) }

// Done leaves the gate, recycles the wrapper, then ends h.
func (t *tracked) Done(err error) {
	h, g := t.h, t.g
	t.h, t.g = nil, nil
	trackers.Put(t)
	g.Leave()
	h.Done(err)
}

// Untrack recycles a wrapper whose Send failed (its Done never comes)
// and leaves its gate.
func Untrack(h wire.Handler) {
	if t, ok := h.(*tracked); ok {
		g := t.g
		t.h, t.g = nil, nil
		trackers.Put(t)
		g.Leave()
	}
}
