package conn

import "net"

// watchIdle prepares the idle check on plain TCP and unix sockets. Over
// TLS the check is off: a server may send TLS records (session tickets)
// that are not replies, and there a stray frame is caught when it is read.
func (c *Conn) watchIdle() {
	switch nc := c.nc.(type) {
	case *net.TCPConn:
		c.raw, _ = nc.SyscallConn()
	case *net.UnixConn:
		c.raw, _ = nc.SyscallConn()
	}
	if c.raw != nil {
		c.inq = func(fd uintptr) { c.inqBytes, c.inqClosed = socketState(fd, &c.peek) }
	}
}

// idleBytes returns how many bytes wait unread in the socket (0 when that
// cannot be told), and whether the peer has closed it: a server that
// closed an idle connection (its timeout, CLIENT KILL) has left an EOF
// to read, so a command written now would be lost unanswered. It is
// called with mu held, while nothing is owed.
func (c *Conn) idleBytes() (int, bool) {
	if c.raw == nil {
		return 0, false
	}
	c.inqBytes, c.inqClosed = 0, false
	if c.raw.Control(c.inq) != nil {
		return 0, false
	}
	return c.inqBytes, c.inqClosed
}

// peerClosed reports whether an idle connection (nothing owed, nobody
// reading) was closed by its peer, by the same check; a connection in
// use reports false.
func (c *Conn) peerClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reading != roleFree || c.err != nil {
		return c.err != nil
	}
	_, closed := c.idleBytes()
	return closed
}
