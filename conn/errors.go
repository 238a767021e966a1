package conn

import (
	"errors"
	"fmt"

	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/resp"
)

// ErrClosed is returned for calls on a connection or client that was closed
// by its owner.
var ErrClosed = errors.New("conn: closed")

// ErrBroken is matched (errors.Is) by every error that failed a call
// because its connection broke: an I/O error, a protocol error, the peer
// closing, or a liveness timeout. The call's command may or may not have
// run on the server, unless the error matches ErrNotSent too.
var ErrBroken = errors.New("conn: connection broken")

// ErrTimeout is matched by the error of calls failed because replies were
// owed and nothing arrived for Options.ReadTimeout.
var ErrTimeout = errors.New("conn: no reply within the read timeout")

// ErrUnsolicited is matched when the server sent a reply that no command
// was waiting for: the stream cannot be trusted and the connection fails.
var ErrUnsolicited = errors.New("conn: reply with no command waiting for it")

// ErrNotConnected is matched by the error of a Client's call made while
// it has no healthy connection: during a redial after a fault, or when
// the connection it was to go on turned out to have failed (or been
// closed by the server while idle) and the redial failed. Nothing was
// sent, so it is safe to repeat. So is the error of a blocking call or
// Dedicated whose dedicated connection could not be dialed, its ctx
// ending the dial or the handshake included (then it matches ctx's error
// too). It wraps the cause, but never matches ErrBroken.
var ErrNotConnected = errors.New("conn: not connected")

// ErrNotSent is matched (errors.Is) by the error of a call that a Conn
// did not send because the Conn had already failed, or because the
// server had closed it while it was idle (then the error matches
// ErrIdleClosed too): the command did not run, so it is safe to send it
// again, on another connection. The error also matches ErrBroken and
// wraps the Conn's fault (a *BrokenError), for the Conn is done. A
// Client sends such a call on its next connection itself; its calls sent
// nowhere match ErrNotConnected.
var ErrNotSent = errors.New("conn: nothing was sent")

// ErrIdleClosed is matched by the fault of a connection that the server
// closed while it was idle (its timeout, CLIENT KILL), found before a
// call was sent on it: on TCP and unix sockets under Linux, over TLS
// too. The call that found it, and every later call on the Conn, get an
// error matching ErrNotSent, ErrIdleClosed and ErrBroken.
var ErrIdleClosed = errors.New("conn: closed by the server while idle")

// errPeerClosed is the fault of a connection found closed by the server
// while it was idle.
var errPeerClosed = ErrIdleClosed

// notSentError is the error of a call on a Conn that had already failed,
// or was found closed by the server while idle, before the call could be
// sent. It matches ErrNotSent and unwraps to the fault (the
// *BrokenError); it tells a Client that nothing was sent, so the Client
// sends the call on the next connection instead.
type notSentError struct{ fault error }

func (e *notSentError) Error() string        { return e.fault.Error() + " (nothing was sent)" }
func (e *notSentError) Unwrap() error        { return e.fault }
func (e *notSentError) Is(target error) bool { return target == ErrNotSent }

// sentNothing wraps the fault of a call refused by a failed Conn.
func sentNothing(fault error) error {
	if fault == ErrClosed {
		return ErrClosed
	}
	return &notSentError{fault}
}

// notConnected is a Client's error for a call not sent for want of a
// healthy connection: it matches ErrNotConnected and wraps the fault's
// cause (not the *BrokenError, which would say the call may have run),
// or is ErrClosed.
func notConnected(fault error) error {
	switch {
	case fault == nil:
		return ErrNotConnected
	case errors.Is(fault, ErrClosed):
		return ErrClosed
	}
	var be *BrokenError
	if errors.As(fault, &be) {
		fault = be.Cause
	}
	return fmt.Errorf("%w: %w", ErrNotConnected, fault)
}

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

// ErrBadArg is matched (errors.Is) by the error of a Do given an argument
// it cannot write (a type it does not take, a NaN, a time.Duration where
// the command takes none); nothing is sent.
var ErrBadArg = resp.ErrBadArg

// ErrBadOptions is matched (errors.Is) by the error of Dial, NewClient
// and Connect (and pubsub.Subscribe) given Options no connection can be
// made with: a Protocol other than 0, 2 or 3. Nothing is dialed. It is
// this package's own error: the transport's *dial.ConfigError is mapped
// to it (badOptions), with the field at fault.
var ErrBadOptions = errors.New("conn: bad options")

// badOptions is err, the transport's error, as the caller is told it: a
// *dial.ConfigError (Options no connection can be made with) wraps
// ErrBadOptions and says which field is at fault; any other error is
// returned as it is.
func badOptions(err error) error {
	var ce *dial.ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %s", ErrBadOptions, ce.Error())
	}
	return err
}
