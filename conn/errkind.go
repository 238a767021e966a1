package conn

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/resp"
)

// ErrorKind names what ended a command, in a word of low cardinality,
// for metrics labels and trace attributes: the server's error code when
// the reply was an error (its first word when it has a code's shape, 1 to
// 32 capital letters or underscores: NOSCRIPT, WRONGTYPE, EMQARG; else
// "ERR"), or the kind of failure: "too_large", "not_connected",
// "closed", "not_sent" (a Conn that had failed, or that the server
// closed while idle, sent nothing: see ErrNotSent), "timeout",
// "broken", "refused", "canceled" (ctx ended,
// cancelled or past its deadline), "other". nil is "".
func ErrorKind(err error) string {
	var se *resp.ServerError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		if code := se.Code(); validCode(code) {
			return code
		}
		return "ERR"
	case errors.Is(err, resp.ErrReplyTooLarge):
		return "too_large"
	case errors.Is(err, ErrNotConnected):
		return "not_connected"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, ErrNotSent):
		return "not_sent"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrBroken):
		return "broken"
	case errors.Is(err, ErrCommandRefused):
		return "refused"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "other"
}

// validCode reports whether code has a server error code's shape: 1 to
// 32 capital letters or underscores (anything else would make a label of
// unbounded variety).
func validCode(code string) bool {
	if code == "" || len(code) > 32 {
		return false
	}
	for i := range len(code) {
		if b := code[i]; (b < 'A' || b > 'Z') && b != '_' {
			return false
		}
	}
	return true
}
