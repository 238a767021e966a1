package conn

import (
	"syscall"
	"unsafe"
)

// socketState tells how many bytes wait in a socket's receive queue, and
// whether the peer has closed it (an orderly close, EOF, or a reset)
// with nothing left to read. One recv(MSG_PEEK|MSG_DONTWAIT) of one byte
// answers the common case, nothing waiting; only when bytes wait does an
// ioctl(TIOCINQ) count them. An error that tells neither reports an open
// socket with nothing waiting.
func socketState(fd uintptr, peek *[1]byte) (waiting int, closed bool) {
	r, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&peek[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == syscall.ECONNRESET:
		return 0, true
	case errno != 0:
		return 0, false // EAGAIN: nothing waits
	case r == 0:
		return 0, true // EOF
	}
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 || n < 1 {
		return 1, false
	}
	return int(n), false
}
