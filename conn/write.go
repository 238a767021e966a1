package conn

import (
	"runtime"
	"time"
)

// swap takes the buffered bytes, giving the spare buffer to later senders.
// It is called with mu held by the holder of the writer role.
func (c *Conn) swap() []byte {
	buf := c.wbuf
	c.wbuf, c.spare = c.spare[:0], nil
	return buf
}

// writeInline writes buf, a sender's own bytes, on its goroutine, then
// lets go of the writer role, or hands it to the writer goroutine when
// more arrived meanwhile (buffered in wbuf, behind buf).
func (c *Conn) writeInline(buf []byte) {
	if !c.write(buf) {
		return // the fault fails every call through the reader
	}
	c.mu.Lock()
	if len(c.wbuf) == 0 || c.err != nil {
		c.writing = false
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.wakeWriter()
}

// wakeWriter hands the writer role to the writer goroutine. A full channel
// means it is already awake (or a fault woke it and it will exit).
func (c *Conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// write writes buf to the socket; on error it records the fault and
// reports false.
func (c *Conn) write(buf []byte) bool {
	if t := c.opts.WriteTimeout; t > 0 {
		// Moving the deadline is a timer operation; do it only when it
		// has come within 7/8 of the timeout, which keeps every write's
		// bound between 7/8 and all of WriteTimeout.
		if now := time.Now(); now.Sub(c.wdeadline) > t/8 {
			c.nc.SetWriteDeadline(now.Add(t))
			c.wdeadline = now
		}
	}
	_, err := c.nc.Write(buf)
	c.writes.Add(1)
	if err != nil {
		c.fault(err)
		return false
	}
	return true
}

// writeLoop takes the writer role when a sender hands it over, and writes
// until nothing is left. Senders write inline when nobody holds the role,
// so this goroutine works only under load.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	for range c.wake {
		// Senders that are runnable now append before the write.
		runtime.Gosched()
		for {
			c.mu.Lock()
			if c.err != nil {
				c.mu.Unlock()
				return
			}
			if len(c.wbuf) == 0 {
				c.writing = false
				c.mu.Unlock()
				break
			}
			buf := c.swap()
			c.mu.Unlock()
			if !c.write(buf) {
				return
			}
			if cap(buf) > 4<<20 {
				buf = nil // do not keep a huge buffer for good
			}
			c.mu.Lock()
			c.spare = buf[:0]
			c.mu.Unlock()
		}
	}
}
