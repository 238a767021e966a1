package conn

import "time"

// The background role (see role): the connection's reader goroutine
// reads replies owed to callers who do not read themselves, and every
// frame when OnPush wants pushes as they come.

// readLoop reads whenever it holds the reader role: replies owed by
// submissions whose callers are not reading themselves, and everything
// when an OnPush handler wants pushes as they come.
func (c *Conn) readLoop() {
	defer c.wg.Done()
	if c.opts.OnPush != nil {
		c.mu.Lock()
		if c.reader == roleFree {
			c.setRole(roleBackground)
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
				c.setRole(roleFree)
				c.mu.Unlock()
				return true, false
			}
			c.mu.Unlock()
		}
		if _, err := c.step(); err != nil {
			if interrupted(err) && c.fault0() == nil {
				// A leader's late interrupt: not ours to obey.
				c.nc.SetReadDeadline(time.Time{})
				continue
			}
			c.die(err)
			return false, false
		}
	}
}
