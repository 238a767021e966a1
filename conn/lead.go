package conn

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
)

// The leader role (see role): a caller that waits for its own replies
// reads them on its goroutine while nobody else reads, saving two
// goroutine switches per round trip.

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
	if stop != nil {
		c.mu.Lock()
		c.leadCtx = nil // an interrupt still on its way finds no leader
		c.mu.Unlock()
		if !stop() {
			// The interrupt ran, or ran into leadCtx == nil: make sure
			// no deadline is left.
			c.nc.SetReadDeadline(time.Time{})
		}
	}
	c.mu.Lock()
	if c.pending.Load() == 0 && c.err == nil {
		c.setRole(roleFree)
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
		if interrupted(err) && c.fault0() == nil {
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
	if c.reader == roleLeader && c.leadCtx != nil && c.leadCtx.Err() != nil {
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	c.mu.Unlock()
}
