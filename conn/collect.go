package conn

import (
	"context"
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
// Collector itself can be used again at once.
type Collector struct {
	st *collectState
}

// collectState is the part the connection's reader writes to.
type collectState struct {
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

func (st *collectState) clear() {
	st.arena.Reset()
	clear(st.replies)
	st.replies = st.replies[:0]
}

// Begin drops the previous replies and readies n empty slots.
func (c *Collector) Begin(n int) {
	if c.st == nil {
		c.st = collectPool.Get().(*collectState)
	}
	st := c.st
	st.arena.Reset()
	if cap(st.replies) < n {
		st.replies = make([]resp.Value, n)
	}
	st.replies = st.replies[:n]
	clear(st.replies)
}

// Exchange sends k encoded commands over s (reading inline when it can,
// see Exchange) and waits for their replies: reply i lands in slot
// index[i], or slot i when index is nil. Slots not answered in this round
// trip keep what they held. On a fault or ctx's end it returns the error
// and every slot is dropped (Replies is empty).
func (c *Collector) Exchange(ctx context.Context, s Sender, cmds []byte, k int, index []int) error {
	if c.st == nil {
		c.Begin(k)
	}
	st := c.st
	st.index = append(st.index[:0], index...)
	st.err = nil
	st.state.Store(waiting)
	if err := Exchange(ctx, s, cmds, k, st); err != nil {
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
