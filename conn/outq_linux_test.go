package conn_test

import (
	"net"
	"syscall"
	"time"
	"unsafe"
)

// waitDelivered waits until every byte written on c has been acknowledged
// by the other end, that is, sits in its socket's receive queue (the send
// queue, ioctl TIOCOUTQ alias SIOCOUTQ, is empty), or until waitLong. It
// reports whether that happened. A test uses it to know that a frame has
// landed at the client, where a sleep would only make it likely.
func waitDelivered(c net.Conn) bool {
	sc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return false
	}
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		n, errno := int32(-1), syscall.Errno(0)
		if err := sc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
		}); err != nil || errno != 0 {
			return false
		}
		if n == 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
