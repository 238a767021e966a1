package resp

import (
	"errors"
	"strconv"
	"strings"
)

// Well-known error codes: the first word of a server error reply.
const (
	CodeErr       = "ERR"
	CodeNoScript  = "NOSCRIPT"
	CodeMoved     = "MOVED"
	CodeAsk       = "ASK"
	CodeWrongPass = "WRONGPASS"
	CodeNoAuth    = "NOAUTH"
	CodeNoProto   = "NOPROTO"
	CodeBusy      = "BUSY"
	CodeLoading   = "LOADING"
	CodeReadOnly  = "READONLY"
	CodeEMQKind   = "EMQKIND"
)

// ServerError is an error reply from the server. It is a value, not a fault:
// the connection that carried it is healthy. Msg is the server's text byte
// for byte, without the leading '-' or '!'.
type ServerError struct {
	Msg string
}

// Error returns the server's text unchanged.
func (e *ServerError) Error() string { return e.Msg }

// Code returns the error's code, the first space-separated word of the
// message ("NOSCRIPT", "ERR", "EMQKIND", …).
func (e *ServerError) Code() string {
	if i := strings.IndexByte(e.Msg, ' '); i >= 0 {
		return e.Msg[:i]
	}
	return e.Msg
}

// HasCode reports whether the error's code is code.
func (e *ServerError) HasCode(code string) bool { return e.Code() == code }

// IsCode reports whether err is, or wraps, a *ServerError with the code.
func IsCode(err error, code string) bool {
	var se *ServerError
	return errors.As(err, &se) && se.HasCode(code)
}

// ErrProtocol is matched by every *ProtocolError with errors.Is.
var ErrProtocol = errors.New("resp: protocol error")

// ErrIncomplete is returned by Parse when the bytes end before the frame
// does: more bytes are needed. It is not a protocol error.
var ErrIncomplete = errors.New("resp: incomplete frame, need more bytes")

// ProtocolError reports a stream that is not valid RESP, holds a line
// longer than Limits.MaxLine, or a length above the hard bounds
// (HardMaxBulk, HardMaxAggregate). The stream cannot be resynchronised
// after it: a connection that sees one must be closed. (A well-formed
// reply over the other Limits is skipped instead: see ReplyTooLargeError.)
type ProtocolError struct {
	// Msg says what was wrong.
	Msg string
	// Offset is the byte offset within the frame where it was found.
	Offset int
}

// Error describes the fault.
func (e *ProtocolError) Error() string {
	return "resp: protocol error at frame offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Is makes errors.Is(err, ErrProtocol) true for every ProtocolError.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// TypeError reports a reply of another type than the caller expected.
type TypeError struct {
	Want string
	Got  Type
}

// Error describes the mismatch.
func (e *TypeError) Error() string {
	return "resp: unexpected reply type: want " + e.Want + ", got " + e.Got.String()
}
