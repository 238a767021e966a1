package wire

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/echomq/echomq-go/resp"
)

// Collector gathers the replies of pipelined round trips into slots, for
// explicit batches (pipeline.Batch, dispatch.Batch). Replies are retained
// in an arena the Collector reuses, so a Collector that is reused collects
// with no allocation in steady state. It is not safe for concurrent use.
//
// A round trip abandoned by its context leaves its in-flight state to the
// connection's reader, which drops the late replies and recycles it; the
// Collector takes fresh state and can be used again at once, with the
// same number of slots.
type Collector struct {
	st   *collectState
	size int // slots readied by the last Begin
}

// collectState is the part the connection's reader writes to.
type collectState struct {
	SlottedMark
	state   atomic.Int32
	done    chan struct{}
	arena   resp.Arena
	replies []resp.Value
	index   []int // reply i goes to replies[index[i]]; empty: replies[i]
	err     error
}

var collectPool = sync.Pool{New: func() any { return &collectState{done: make(chan struct{}, 1)} }}

// Reply retains reply i in its slot, unless the round trip was abandoned.
func (st *collectState) Reply(i int, v resp.Value) {
	if st.state.Load() == abandoned {
		return
	}
	if len(st.index) > 0 {
		i = st.index[i]
	}
	st.replies[i] = st.arena.Retain(v)
}

// Done wakes the waiting round trip, or recycles the state when it left.
func (st *collectState) Done(err error) {
	st.err = err
	if st.state.CompareAndSwap(waiting, finished) {
		st.done <- struct{}{}
		return
	}
	st.clear()
	st.index, st.err = st.index[:0], nil
	collectPool.Put(st)
}

// Slotted is a Handler whose replies land in slots that the reader may
// fill itself, many replies at a time (conn's bulk path: resp.Reader's
// Scalars), rather than one Reply call each: the Collector's. Reply stays
// the way for every reply the bulk path does not take; Done ends it as
// for any Handler. Only a type that embeds SlottedMark implements it, so
// that no Handler outside this module, whatever its methods, has its
// Reply calls bypassed.
type Slotted interface {
	Handler
	// Slots returns the slots, reply i's being slots[i], and the arena
	// to retain them in; nil slots when every reply must go through
	// Reply (its round trip was abandoned, or an index maps its replies
	// to other slots).
	Slots() ([]resp.Value, *resp.Arena)
	slotted()
}

// SlottedMark, embedded, gives a type Slotted's unexported method.
type SlottedMark struct{}

func (SlottedMark) slotted() {}

// Slots is the Slotted method: the slots while the round trip is waited
// for and its replies go to slots by their order.
func (st *collectState) Slots() ([]resp.Value, *resp.Arena) {
	if len(st.index) > 0 || st.state.Load() == abandoned {
		return nil, nil
	}
	return st.replies, &st.arena
}

// Waits is true: Exchange waits for its round trip.
func (st *collectState) Waits() bool { return true }

func (st *collectState) clear() {
	st.arena.Reset()
	clear(st.replies)
	st.replies = st.replies[:0]
}

// errSlot is the error of an Exchange whose index names a slot that
// Begin did not ready: a bug in the caller, refused before sending.
var errSlot = errors.New("wire: reply slot out of range")

// Begin drops the previous replies and readies n empty slots.
func (c *Collector) Begin(n int) {
	c.size = n
	if c.st == nil {
		c.st = collectPool.Get().(*collectState)
	}
	c.st.ready(n)
}

func (st *collectState) ready(n int) {
	st.arena.Reset()
	if cap(st.replies) < n {
		st.replies = make([]resp.Value, n)
	}
	st.replies = st.replies[:n]
	clear(st.replies)
}

// Exchange sends cmds over s and waits for their replies: reply i lands
// in slot index[i], or slot i when index is nil. Slots not answered in
// this round trip keep what they held. On a fault or ctx's end it returns
// the error and every slot is dropped (Replies is empty).
func (c *Collector) Exchange(ctx context.Context, s Sender, cmds Cmds, index []int) error {
	if c.st == nil {
		// The last round trip was abandoned: start afresh, same size.
		c.Begin(max(c.size, cmds.Len()))
	}
	st := c.st
	if len(index) == 0 && cmds.Len() > len(st.replies) {
		return errSlot
	}
	for _, i := range index {
		if i < 0 || i >= len(st.replies) {
			return errSlot
		}
	}
	st.index = append(st.index[:0], index...)
	st.err = nil
	st.state.Store(waiting)
	if err := s.Send(ctx, cmds, st); err != nil {
		st.clear()
		return err
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		if st.state.CompareAndSwap(waiting, abandoned) {
			c.st = nil // the reader recycles it
			return ctx.Err()
		}
		<-st.done
	}
	if st.err != nil {
		st.clear()
		return st.err
	}
	return nil
}

// Replies returns the slots, valid until the next Begin or Reset.
func (c *Collector) Replies() []resp.Value {
	if c.st == nil {
		return nil
	}
	return c.st.replies
}

// Reset drops the replies, keeping the memory.
func (c *Collector) Reset() {
	if c.st != nil {
		c.st.clear()
	}
}
