package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/resp"
)

// Dial connects, performs the handshake and returns a ready Conn.
//
// The handshake is one batch: HELLO 3 with AUTH and SETNAME folded in, and
// SELECT when DB is set. When the server refuses HELLO (an old server, or
// HELLO renamed away) it falls back to RESP2 with AUTH, CLIENT SETNAME and
// SELECT, again in one batch. An authentication failure is returned as the
// server's error; the password never appears in it.
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	opts = opts.withDefaults()
	cfg := opts.dialConfig()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	nc, err := dial.Transport(ctx, cfg)
	if err != nil {
		if err = badOptions(err); errors.Is(err, ErrBadOptions) {
			return nil, err
		}
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, fmt.Errorf("conn: %w", err) // it names the address
		}
		return nil, fmt.Errorf("conn: dial %s %s: %w", opts.Network, opts.Addr, err)
	}
	// The handshake's replies (HELLO's map) are read under the default
	// limits: Options.Limits bound the commands' replies, and a small
	// MaxAggregate must not refuse the connection itself.
	c := newConn(nc, opts, resp.NewReaderLimits(nil, resp.Limits{}, opts.ReadBufferSize))
	res, err := dial.Handshake(ctx, nc, c.rd, cfg)
	if err != nil {
		nc.Close()
		if cerr := ctxEnded(ctx); cerr != nil {
			// ctx ended the handshake (the error says "i/o timeout"):
			// the caller matches ctx's error.
			return nil, fmt.Errorf("conn: handshake with %s: %w: %w", opts.Addr, cerr, err)
		}
		return nil, fmt.Errorf("conn: handshake with %s: %w", opts.Addr, err)
	}
	c.rd.SetLimits(opts.Limits)
	c.protocol, c.hello = res.Protocol, res.Hello
	if id, ok := res.Hello.Lookup("id"); ok && id.Type == resp.Integer {
		c.id = id.Int
	}
	c.start()
	return c, nil
}

// dialConfig is the part of the options the transport and the handshake
// use (package pubsub makes the same from Options: see its dialConfig).
func (o Options) dialConfig() dial.Config {
	return dial.Config{
		Network: o.Network, Addr: o.Addr,
		Username: o.Username, Password: o.Password,
		DB: o.DB, ClientName: o.ClientName, Protocol: o.Protocol,
		TLS: o.TLS, Timeout: o.DialTimeout, Dialer: o.Dialer,
	}.WithDefaults()
}

// ctxEnded returns ctx's error, or context.DeadlineExceeded once its
// deadline has passed: a socket deadline set from it may fire (and fail
// a read with "i/o timeout") before ctx's own timer marks it done.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}
