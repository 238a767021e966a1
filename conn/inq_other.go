//go:build !linux

package conn

// socketState is not available here: the idle check is off, a stray
// frame is caught only when it is read, and a connection the server
// closed while idle is found broken only by the call that reads its EOF.
func socketState(fd uintptr, peek *[1]byte) (waiting int, closed bool) { return 0, false }

// socketShut is not available here either (see socketState).
func socketShut(fd uintptr, peek *[1]byte) bool { return false }
