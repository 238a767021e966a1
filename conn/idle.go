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
		c.inq = func(fd uintptr) { c.inqBytes = socketInq(fd) }
	}
}

// idleBytes returns how many bytes wait unread in the socket, or 0 when
// that cannot be told. It is called with mu held, while nothing is owed.
func (c *Conn) idleBytes() int {
	if c.raw == nil {
		return 0
	}
	c.inqBytes = 0
	if c.raw.Control(c.inq) != nil {
		return 0
	}
	return c.inqBytes
}
