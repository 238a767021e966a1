package main

import "syscall"

// sysProcAttr puts the server in its own process group, so a Ctrl-C at the
// terminal reaches emqbench alone (which then stops the server itself),
// and makes the kernel kill the server should emqbench die without
// cleaning up (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
