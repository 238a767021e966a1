package conn

import "errors"

// ErrClosed is returned for calls on a connection or client that was closed
// by its owner.
var ErrClosed = errors.New("conn: closed")

// ErrBroken is matched (errors.Is) by every error that failed a call
// because its connection broke: an I/O error, a protocol error, the peer
// closing, or a liveness timeout. The call's command may or may not have
// run on the server.
var ErrBroken = errors.New("conn: connection broken")

// ErrTimeout is matched by the error of calls failed because replies were
// owed and nothing arrived for Options.ReadTimeout.
var ErrTimeout = errors.New("conn: no reply within the read timeout")

// ErrUnsolicited is matched when the server sent a reply that no command
// was waiting for: the stream cannot be trusted and the connection fails.
var ErrUnsolicited = errors.New("conn: reply with no command waiting for it")

// ErrNotConnected is returned by a Client's calls while it has no healthy
// connection (during a redial after a fault).
var ErrNotConnected = errors.New("conn: not connected")

// BrokenError is the error every pending call gets when its connection
// fails. It wraps the first fault, and matches ErrBroken.
type BrokenError struct {
	// Cause is the fault that broke the connection.
	Cause error
}

// Error describes the fault.
func (e *BrokenError) Error() string { return "conn: connection broken: " + e.Cause.Error() }

// Unwrap returns the cause, so errors.Is/As see through to it.
func (e *BrokenError) Unwrap() error { return e.Cause }

// Is makes errors.Is(err, ErrBroken) true.
func (e *BrokenError) Is(target error) bool { return target == ErrBroken }
