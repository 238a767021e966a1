package conn

import (
	"syscall"
	"unsafe"
)

// socketInq returns the bytes waiting in a socket's receive queue
// (ioctl TIOCINQ, alias FIONREAD), or 0 on error.
func socketInq(fd uintptr) int {
	var n int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return 0
	}
	return int(n)
}
