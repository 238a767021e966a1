package kv

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/cmdbuf"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Value is what a helper accepts as a value (SET's value, a list
// element, a set member, a hash field's value): text or bytes as they
// are, integers in decimal, a float64 in the shortest form that reads
// back the same (+inf and -inf as the server spells them).
type Value interface {
	string | []byte | int | int64 | int32 | uint | uint64 | uint32 | float64
}

// ErrInvalid is matched (errors.Is) by the error of a helper given
// arguments the server would refuse or misread (NX with XX, a negative
// TTL, an odd number of field-value arguments). Nothing is sent.
var ErrInvalid = errors.New("kv: invalid arguments")

// invalid is ErrInvalid with a reason.
func invalid(reason string) error { return &invalidError{reason} }

type invalidError struct{ reason string }

func (e *invalidError) Error() string        { return "kv: invalid arguments: " + e.reason }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// arg appends v as one argument.
func arg[V Value](b resp.CmdBuilder, v V) resp.CmdBuilder {
	switch x := any(v).(type) {
	case string:
		return b.Arg(x)
	case []byte:
		return b.ArgBytes(x)
	case int:
		return b.ArgInt(int64(x))
	case int64:
		return b.ArgInt(x)
	case int32:
		return b.ArgInt(int64(x))
	case uint:
		return argUint(b, uint64(x))
	case uint64:
		return argUint(b, x)
	case uint32:
		return b.ArgInt(int64(x))
	case float64:
		return argFloat(b, x)
	}
	panic("kv: unreachable")
}

func argUint(b resp.CmdBuilder, u uint64) resp.CmdBuilder {
	if u <= math.MaxInt64 {
		return b.ArgInt(int64(u))
	}
	var tmp [20]byte
	return b.ArgBytes(strconv.AppendUint(tmp[:0], u, 10))
}

// argFloat appends f as the server reads it back exactly.
func argFloat(b resp.CmdBuilder, f float64) resp.CmdBuilder {
	switch {
	case math.IsInf(f, 1):
		return b.Arg("+inf")
	case math.IsInf(f, -1):
		return b.Arg("-inf")
	}
	var tmp [32]byte
	return b.ArgBytes(strconv.AppendFloat(tmp[:0], f, 'g', -1, 64))
}

// argMillis appends d in milliseconds, rounded up (as package cmds
// writes durations): a positive duration is never sent shorter than
// asked, nor as 0.
func argMillis(b resp.CmdBuilder, d time.Duration) resp.CmdBuilder {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return b.ArgInt(int64(ms))
}

// seconds reports whether d is a whole number of seconds.
func seconds(d time.Duration) bool { return d%time.Second == 0 }

// command starts a command of n arguments in a pooled buffer; run sends
// it and gives the buffer back.
func command(n int, name string) (*cmdbuf.Buf, resp.CmdBuilder) {
	buf := cmdbuf.Get()
	return buf, resp.BuildCommand(buf.B, n).Arg(name)
}

// run sends the command and hands its reply to fn, on the caller's
// goroutine (the reply is valid only during fn; a server error reply is
// returned as a *resp.ServerError and fn is not called). It allocates
// nothing: fn does not escape.
func run(ctx context.Context, s conn.Sender, buf bufT, b resp.CmdBuilder, fn func(resp.Value) error) error {
	c := b.Cmd()
	err := wire.DoFunc(ctx, s, c, fn)
	cmdbuf.Put(buf, c.Bytes())
	return err
}

// bufT is a pooled command buffer.
type bufT = *cmdbuf.Buf

// format returns v as one argument's text, as arg writes it.
func format[V Value](v V) string {
	switch x := any(v).(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case int:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "+inf"
		case math.IsInf(x, -1):
			return "-inf"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	panic("kv: unreachable")
}
