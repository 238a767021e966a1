package conn

import (
	"errors"
	"os"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// What every holder of the reader role (leader or background: see role)
// does: read a frame, deliver it, recover a Handler's panic, fail every
// call when the connection dies.

func interrupted(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// step reads one frame and delivers it: a push to OnPush, a reply to the
// submission owed it. It returns the Handler it completed, if any.
func (c *Conn) step() (wire.Handler, error) {
	start := c.progress.Load() - uint64(c.rd.Buffered()) // where the frame begins
	if c.li < len(c.local) && c.local[c.li].slots != nil && c.rd.Buffered() > 0 {
		if h, took := c.bulk(start); took {
			return h, nil
		}
	}
	v, err := c.rd.Next()
	if err != nil {
		return nil, err
	}
	if v.Type == resp.Push || v.Type == resp.TooLarge && skippedPush(v) {
		// A push over the Limits was skipped: OnPush is told, as a
		// TooLarge value; it answers no command either way.
		if c.opts.OnPush != nil {
			c.onPush(v)
		}
		return nil, nil
	}
	if c.li == len(c.local) && !c.take() {
		return nil, ErrUnsolicited
	}
	e := &c.local[c.li]
	if c.idx == 0 && start < e.at {
		// The frame was here before e was queued: it answers nothing.
		return nil, ErrUnsolicited
	}
	e.h.Reply(c.idx, v)
	c.idx++
	if c.idx < e.n {
		return nil, nil
	}
	return c.finish(e), nil
}

// bulk is step's path for a submission whose replies land in slots
// (wire.Slotted: a batch's): the scalar replies waiting whole in the
// buffer go straight into its slots, many in one call, with no Reply
// call each. start is where the next frame begins. It reports whether it
// took any; when it took none (a frame that is not a scalar, a push, a
// frame that was there before the submission was queued, or slots the
// Handler does not give), step reads the frame the usual way.
func (c *Conn) bulk(start uint64) (wire.Handler, bool) {
	e := &c.local[c.li]
	if c.idx == 0 && start < e.at {
		return nil, false // step reports it
	}
	slots, a := e.slots.Slots()
	if len(slots) < e.n {
		return nil, false
	}
	k := c.rd.Scalars(slots[c.idx:e.n], a)
	if k == 0 {
		return nil, false
	}
	c.idx += k
	if c.idx < e.n {
		return nil, true
	}
	return c.finish(e), true
}

// finish ends e, whose last reply was delivered, and moves to the next
// submission: it returns e's Handler. e is cleared only after Done, so
// that a panic in Done finds c.idx == e.n (see recoverStep).
func (c *Conn) finish(e *entry) wire.Handler {
	h := e.h
	if e.block {
		c.blockEnd()
	}
	c.release(e.n)
	h.Done(nil)
	*e = entry{}
	c.li++
	c.idx = 0
	return h
}

// recoverStep puts the reader back on its feet after a Handler's panic,
// r, ended step, and returns the Handler that the panic ended, if any,
// and the sunk Handler it made, if any. The frame step read was whole,
// so the connection stays in step with its replies:
//
//   - A panic in Reply (c.idx < e.n): the submission's Handler is
//     replaced by a sunk one, which drops the rest of its replies as
//     they are read, and then calls the Handler's Done with the
//     *PanicError. Every other submission gets its own replies.
//   - A panic in Done (c.idx == e.n): the submission had ended; the panic
//     is logged, as no call is left to return it.
//
// Any other panic is not a Handler's and goes on.
func (c *Conn) recoverStep(r any) (wire.Handler, *sunk) {
	if c.li >= len(c.local) || c.local[c.li].h == nil {
		panic(r)
	}
	e := &c.local[c.li]
	if o := hookedOf(e.h); o != nil && o.hk > 0 && c.idx < e.n {
		// A hook's AfterCommand panicked in e's Reply: Reply is
		// resumed, and e goes on as if it had returned, unless the
		// wrapped Handler's Reply panicked too (then as below).
		if r = o.resumeAfter(r); r == nil {
			c.idx++
			if c.idx < e.n {
				return nil, nil
			}
			h := e.h
			if e.block {
				c.blockEnd()
			}
			c.release(e.n)
			endWith(c.opts.Logger, h, nil)
			*e, c.li, c.idx = entry{}, c.li+1, 0
			return h, nil
		}
	}
	if c.idx == e.n {
		h := e.h
		*e, c.li, c.idx = entry{}, c.li+1, 0
		logPanic(c.opts.Logger, recovered(funcOf(h, "Handler.Done"), r))
		return h, nil
	}
	s := &sunk{h: e.h, p: recovered(funcOf(e.h, "Handler.Reply"), r), log: c.opts.Logger}
	e.h = s
	c.idx++
	if c.idx < e.n {
		return nil, s
	}
	// That was its last reply: it ends here, as at the end of step.
	if e.block {
		c.blockEnd()
	}
	c.release(e.n)
	s.Done(nil)
	*e, c.li, c.idx = entry{}, c.li+1, 0
	return s, s
}

// skippedPush reports whether v, a TooLarge value, stands for a push
// frame that the decoder skipped for breaking its Limits.
func skippedPush(v resp.Value) bool {
	var e *resp.ReplyTooLargeError
	return errors.As(v.Err(), &e) && e.Type == resp.Push
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

// die records the fault and fails every submission still owed replies,
// exactly once: only the holder of the reader role calls it.
func (c *Conn) die(err error) {
	c.fault(err)
	c.mu.Lock()
	c.setRole(roleDead)
	err = c.err
	rest := c.queue
	c.queue = nil
	c.wbuf = nil
	c.mu.Unlock()
	for _, list := range [][]entry{c.local[c.li:], rest} {
		for _, e := range list {
			c.pending.Add(-int64(e.n))
			endWith(c.opts.Logger, e.h, err)
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
		if p != last || c.pending.Load() == 0 || c.blockedNow() {
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
