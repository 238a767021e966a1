package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

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
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	nc, err := dialTransport(ctx, opts)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, fmt.Errorf("conn: %w", err) // it names the address
		}
		return nil, fmt.Errorf("conn: dial %s %s: %w", opts.Network, opts.Addr, err)
	}
	c := newConn(nc, opts, resp.NewReaderLimits(nil, opts.Limits, opts.ReadBufferSize))
	if err := c.handshake(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("conn: handshake with %s: %w", opts.Addr, err)
	}
	c.start()
	return c, nil
}

func dialTransport(ctx context.Context, opts Options) (net.Conn, error) {
	dial := opts.Dialer
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, opts.Network, opts.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
	}
	if opts.TLS == nil {
		return nc, nil
	}
	cfg := opts.TLS.Clone()
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(opts.Addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("tls: %w", err)
	}
	return tc, nil
}

// handshake runs before the reader and writer start: it writes and reads
// on the socket directly, bounded by ctx's deadline.
func (c *Conn) handshake(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
		defer c.nc.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	o := c.opts
	if o.Protocol == 3 {
		var b []byte
		b = appendHello(b, o)
		n := 1
		if o.DB != 0 {
			b = resp.AppendCommand(b, "SELECT", strconv.Itoa(o.DB))
			n++
		}
		replies, err := c.roundTrip(b, n)
		if err != nil {
			return err
		}
		herr := replies[0].Err()
		if herr == nil {
			c.protocol, c.hello = 3, replies[0]
			if n == 2 {
				return replies[1].Err()
			}
			return nil
		}
		if !helloRefused(herr) {
			return herr
		}
	}
	return c.handshake2()
}

// handshake2 is the RESP2 handshake.
func (c *Conn) handshake2() error {
	o := c.opts
	var b []byte
	n := 0
	if o.Password != "" {
		if o.Username != "" {
			b = resp.AppendCommand(b, "AUTH", o.Username, o.Password)
		} else {
			b = resp.AppendCommand(b, "AUTH", o.Password)
		}
		n++
	}
	if o.ClientName != "" {
		b = resp.AppendCommand(b, "CLIENT", "SETNAME", o.ClientName)
		n++
	}
	if o.DB != 0 {
		b = resp.AppendCommand(b, "SELECT", strconv.Itoa(o.DB))
		n++
	}
	c.protocol, c.hello = 2, resp.Value{Type: resp.Null}
	if n == 0 {
		return nil
	}
	replies, err := c.roundTrip(b, n)
	if err != nil {
		return err
	}
	for _, r := range replies {
		if err := r.Err(); err != nil {
			return err
		}
	}
	return nil
}

func appendHello(b []byte, o Options) []byte {
	n := 2
	if o.Password != "" {
		n += 3
	}
	if o.ClientName != "" {
		n += 2
	}
	b = resp.AppendArrayHeader(b, n)
	b = resp.AppendBulkString(b, "HELLO")
	b = resp.AppendBulkString(b, "3")
	if o.Password != "" {
		user := o.Username
		if user == "" {
			user = "default"
		}
		b = resp.AppendBulkString(b, "AUTH")
		b = resp.AppendBulkString(b, user)
		b = resp.AppendBulkString(b, o.Password)
	}
	if o.ClientName != "" {
		b = resp.AppendBulkString(b, "SETNAME")
		b = resp.AppendBulkString(b, o.ClientName)
	}
	return b
}

// helloRefused reports whether HELLO's error means "no HELLO here" (so
// RESP2 is the way) rather than a failed authentication.
func helloRefused(err error) bool {
	var se *resp.ServerError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case resp.CodeNoProto:
		return true
	case resp.CodeErr:
		return len(se.Msg) >= 19 && se.Msg[:19] == "ERR unknown command"
	}
	return false
}

// roundTrip writes b and reads n replies, retaining them.
func (c *Conn) roundTrip(b []byte, n int) ([]resp.Value, error) {
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	out := make([]resp.Value, 0, n)
	for len(out) < n {
		v, err := c.rd.Next()
		if err != nil {
			return nil, err
		}
		if v.Type == resp.Push {
			continue
		}
		out = append(out, v.Clone())
	}
	return out, nil
}
