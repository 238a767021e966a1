package conn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

func TestErrorKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&resp.ServerError{Msg: "WRONGTYPE Operation against a key"}, "WRONGTYPE"},
		{fmt.Errorf("wrapped: %w", &resp.ServerError{Msg: "NOSCRIPT No matching script"}), "NOSCRIPT"},
		{&resp.ServerError{Msg: "wrong number of arguments"}, "ERR"},
		{&resp.ReplyTooLargeError{}, "too_large"},
		{conn.ErrNotConnected, "not_connected"},
		{conn.ErrClosed, "closed"},
		{conn.ErrTimeout, "timeout"},
		{fmt.Errorf("x: %w", conn.ErrBroken), "broken"},
		{fmt.Errorf("x: %w: %w", conn.ErrNotSent, &conn.BrokenError{Cause: conn.ErrTimeout}), "not_sent"},
		{&conn.CommandError{Command: "MONITOR", Reason: "r"}, "refused"},
		{context.Canceled, "canceled"},
		{context.DeadlineExceeded, "canceled"},
		{errors.New("something else"), "other"},
	} {
		if got := conn.ErrorKind(c.err); got != c.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
