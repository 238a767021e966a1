package conn

import (
	"context"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Do sends an ad-hoc command and waits for its reply, which it returns
// as a Value that owns its memory (a copy: it allocates). A server error
// reply is returned as the Value and as a *resp.ServerError. When ctx
// ends first, Do returns ctx.Err() at once; a ctx already done sends
// nothing.
//
// The arguments are written without strconv at the call site:
//
//	c.Do(ctx, "ZADD", "board", 30.5, "ann")        // 30.5
//	c.Do(ctx, "INCRBY", "n", 5)                     // 5
//	c.Do(ctx, "BLPOP", "q", 1500*time.Millisecond)  // 1.5
//
// Strings and []byte go as they are; integers (every int and uint type)
// in decimal; floats as the server reads them (strconv 'f' format, the
// shortest that reads back exactly; +Inf and -Inf as "inf" and "-inf"; NaN
// is refused). A time.Duration is taken only as the timeout of a command
// whose timeout unit the server's command table gives (see cmds.Info:
// BLPOP's decimal seconds, XREAD BLOCK's milliseconds), rounded up;
// elsewhere (EXPIRE, SET EX, PEXPIRE…) the unit is the command's name or
// option, so a Duration is refused there: pass an integer. Bools and any
// other type are refused too (servers spell booleans 1/0, yes/no or
// true/false, by command). A refused argument is an error matching
// ErrBadArg that names its position, and nothing is sent.
func (c *Conn) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return do(ctx, c, args)
}

// do is Do through any Sender.
func do(ctx context.Context, s wire.Sender, args []any) (resp.Value, error) {
	return wire.Do(ctx, s, args...)
}

// DoFunc sends one command and waits for its reply. fn is called with the
// reply on the caller's goroutine; the reply is valid only during fn. A
// server error reply is returned as a *resp.ServerError and fn is not
// called. DoFunc allocates nothing in steady state:
//
//	var buf [64]byte
//	err := c.DoFunc(ctx, resp.Command(buf[:0], "GET", key), func(v resp.Value) error { … })
//
// When ctx ends first, DoFunc returns ctx.Err() at once; the command stays
// queued and its late reply is read and dropped. A ctx already done sends
// nothing. A panic in fn is the caller's own: fn runs once the connection
// is done with the reply, so the connection goes on (see PanicError).
func (c *Conn) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, c, cmd, fn)
}

// DoInt sends a command whose reply is an integer, and returns it.
func (c *Conn) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, c, cmd)
}

// Do is Conn.Do on the Client's connection (a blocking command on a
// dedicated one).
func (cl *Client) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return do(ctx, cl, args)
}

// DoFunc is Conn.DoFunc on the Client's connection (a blocking command on
// a dedicated one).
func (cl *Client) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, cl, cmd, fn)
}

// DoInt is Conn.DoInt on the Client's connection.
func (cl *Client) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, cl, cmd)
}
