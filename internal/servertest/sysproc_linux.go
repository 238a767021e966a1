package servertest

import "syscall"

// sysProcAttr makes the kernel kill the server when the test process dies,
// so a test binary that panics or times out leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
