package conn

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Who holds the reader role (Conn.reading).
const (
	roleFree       = iota // nothing owed, nobody reads
	roleLeader            // a caller reads for its own replies
	roleBackground        // the reader goroutine reads
	roleDead              // the connection failed; every call has ended
)

// handToReader gives the free reader role to the reader goroutine. It is
// called with mu held.
func (c *Conn) handToReader() {
	c.reading = roleBackground
	select {
	case c.rwake <- struct{}{}:
	default:
	}
}

// readLoop reads whenever it holds the reader role: replies owed by
// submissions whose callers are not reading themselves, and everything
// when an OnPush handler wants pushes as they come.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	if c.opts.OnPush != nil {
		c.mu.Lock()
		if c.reading == roleFree {
			c.reading = roleBackground
		}
		c.mu.Unlock()
		c.readBackground()
		return
	}
	for {
		select {
		case <-c.rwake:
		case <-c.done:
			return
		}
		if !c.readBackground() {
			return
		}
	}
}

// readBackground reads while replies are owed (always, with OnPush). It
// reports false once the connection is dead. A Handler's panic ends a
// read session (recoverStep), and the next one goes on reading: the
// recover costs one defer per session, never one per reply.
func (c *Conn) readBackground() bool {
	for {
		if alive, again := c.readSession(); !again {
			return alive
		}
	}
}

// readSession is readBackground until a Handler panics (again).
func (c *Conn) readSession() (alive, again bool) {
	defer func() {
		if r := recover(); r != nil {
			c.recoverStep(r)
			again = true
		}
	}()
	for {
		if c.pending.Load() == 0 && c.opts.OnPush == nil {
			c.mu.Lock()
			if c.pending.Load() == 0 && c.err == nil {
				c.reading = roleFree
				c.mu.Unlock()
				return true, false
			}
			c.mu.Unlock()
		}
		if _, err := c.step(); err != nil {
			if interrupted(err) && c.Err() == nil {
				// A leader's late interrupt: not ours to obey.
				c.nc.SetReadDeadline(time.Time{})
				continue
			}
			c.die(err)
			return false, false
		}
	}
}

// lead reads on the caller's goroutine until h is done or ctx ends, then
// lets go of the reader role: to nobody when nothing is owed, else to the
// reader goroutine. A Handler's panic, h's or another submission's read
// on the way, is recovered (recoverStep) and the leader reads on: the
// panic never leaves the role held.
func (c *Conn) lead(ctx context.Context, h wire.Handler) {
	var stop func() bool
	if ctx.Done() != nil {
		c.mu.Lock()
		c.leadCtx = ctx
		c.mu.Unlock()
		stop = context.AfterFunc(ctx, c.onCancel) // no closure to allocate
	}
	want := h
	for {
		dead, again := c.leadSession(ctx, &want)
		if dead {
			if stop != nil {
				stop()
			}
			return
		}
		if !again {
			break
		}
	}
	c.mu.Lock()
	c.leadCtx = nil // an interrupt still on its way finds no leader
	c.mu.Unlock()
	if stop != nil && !stop() {
		// The interrupt ran, or ran into leadCtx == nil: make sure no
		// deadline is left.
		c.nc.SetReadDeadline(time.Time{})
	}
	c.mu.Lock()
	if c.pending.Load() == 0 && c.err == nil {
		c.reading = roleFree
	} else {
		c.handToReader()
	}
	c.mu.Unlock()
}

// leadSession is lead's reading until *want is done or ctx ends (again
// false), the connection dies (dead), or a Handler panics (again, unless
// the panic ended *want). When *want panicked in Reply, *want becomes the
// sunk Handler that stands for it.
func (c *Conn) leadSession(ctx context.Context, want *wire.Handler) (dead, again bool) {
	defer func() {
		if r := recover(); r != nil {
			done, s := c.recoverStep(r)
			if s != nil && s.h == *want {
				*want = s
			}
			again = done == nil || done != *want
		}
	}()
	for {
		done, err := c.step()
		if err == nil {
			if done == *want {
				return false, false
			}
			continue
		}
		if interrupted(err) && c.Err() == nil {
			if ctx.Err() != nil {
				return false, false // our caller gave up; the reader goroutine goes on
			}
			c.nc.SetReadDeadline(time.Time{})
			continue
		}
		c.die(err)
		return true, false
	}
}

// interruptLeader wakes the leader blocked in a read when its ctx has
// ended. It is registered with context.AfterFunc for every leader with a
// cancellable ctx, as one method value made at dial, so a late call (its
// leader gone) finds leadCtx nil or not done and does nothing.
func (c *Conn) interruptLeader() {
	c.mu.Lock()
	if c.reading == roleLeader && c.leadCtx != nil && c.leadCtx.Err() != nil {
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	c.mu.Unlock()
}

func interrupted(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// step reads one frame and delivers it: a push to OnPush, a reply to the
// submission owed it. It returns the Handler it completed, if any.
func (c *Conn) step() (wire.Handler, error) {
	start := c.progress.Load() - uint64(c.rd.Buffered()) // where the frame begins
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
	// e is cleared only after Done, so that a panic in Done finds
	// c.idx == e.n (see recoverStep).
	h := e.h
	if e.block {
		c.blockEnd()
	}
	c.release(e.n)
	h.Done(nil)
	*e = entry{}
	c.li++
	c.idx = 0
	return h, nil
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
	c.reading = roleDead
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
