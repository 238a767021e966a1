package conn

import (
	"crypto/tls"
	"net"
)

// watchIdle prepares the idle check on plain TCP and unix sockets, and on
// the socket under a TLS connection. Over TLS only the peer's close is
// told, not the unread byte count: the socket's bytes are TLS records,
// not replies, and some answer nothing (session tickets, a close_notify
// alert), so bytes waiting prove nothing there and a stray frame is
// caught when it is read. The check only peeks at the socket: it never
// takes a byte from it, so the TLS layer reads every record it needs.
func (c *Conn) watchIdle() {
	nc, overTLS := c.nc, false
	if tc, ok := nc.(*tls.Conn); ok {
		nc, overTLS = tc.NetConn(), true
	}
	switch nc := nc.(type) {
	case *net.TCPConn:
		c.raw, _ = nc.SyscallConn()
	case *net.UnixConn:
		c.raw, _ = nc.SyscallConn()
	}
	switch {
	case c.raw == nil:
	case overTLS:
		c.inq = func(fd uintptr) { c.inqBytes, c.inqClosed = 0, socketShut(fd, &c.peek) }
	default:
		c.inq = func(fd uintptr) { c.inqBytes, c.inqClosed = socketState(fd, &c.peek) }
	}
}

// idleBytes returns how many bytes wait unread in the socket (0 when that
// cannot be told, as over TLS), and whether the peer has closed it: a
// server that closed an idle connection (its timeout, CLIENT KILL) has
// left an EOF to read, so a command written now would be lost
// unanswered. It is called with mu held, while nothing is owed.
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
	if c.reader != roleFree || c.err != nil {
		return c.err != nil
	}
	_, closed := c.idleBytes()
	return closed
}
