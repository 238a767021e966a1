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
//
// Both are raw system calls (syscall.RawSyscall): neither can block (the
// recv is MSG_DONTWAIT, the ioctl only reads a count), so the scheduler
// need not be told, which saves the runtime's entersyscall and
// exitsyscall, and the wake of its monitor thread they may make, on
// every idle send.
func socketState(fd uintptr, peek *[1]byte) (waiting int, closed bool) {
	r, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&peek[0])), 1,
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
	if _, _, errno := syscall.RawSyscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 || n < 1 {
		return 1, false
	}
	return int(n), false
}

// socketShut tells whether the peer of the socket under a TLS connection
// has closed it: an EOF or a reset with nothing left to read, as
// socketState tells them; or, when bytes wait (TLS records, which may
// answer nothing: a session ticket, the close_notify alert a server
// sends before it closes), the peer's end of the stream seen behind
// them (poll's POLLRDHUP, or POLLHUP or POLLERR). After it nothing more
// can arrive, so a command written now would be lost unanswered. Bytes
// waiting without it tell nothing: the connection is taken as open. The
// socket is only peeked at and polled: no byte is taken from it. The
// ppoll's zero timeout returns at once: a raw system call, as above.
func socketShut(fd uintptr, peek *[1]byte) bool {
	if waiting, closed := socketState(fd, peek); closed || waiting == 0 {
		return closed
	}
	p := pollFd{fd: int32(fd), events: pollRdHup}
	var ts syscall.Timespec // return at once
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1,
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno == 0 && n == 1 && p.revents&(pollRdHup|pollHup|pollErr) != 0
}

// pollFd is struct pollfd, for ppoll.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// poll's event bits (POLLRDHUP is 0x2000 on every Linux port Go has).
const (
	pollErr   = 0x8
	pollHup   = 0x10
	pollRdHup = 0x2000
)
