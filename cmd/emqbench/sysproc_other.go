//go:build unix && !linux

package main

import "syscall"

// sysProcAttr puts the server in its own process group, so a Ctrl-C at the
// terminal reaches emqbench alone, which then stops the server itself.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
