// Package dial opens a connection to Valkey or Redis and performs the
// handshake: the transport (TCP or a unix socket, optionally TLS), then
// HELLO 3 with AUTH and SETNAME folded in, falling back to RESP2 (AUTH,
// CLIENT SETNAME) when the server refuses HELLO, and SELECT. Package conn
// uses it for its pipelined connections and package pubsub for its
// subscriber connections, so both connect the same way.
//
// Errors are returned bare: the caller adds its own prefix. None of them
// holds the password.
package dial

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

// Defaults shared by every connection of the module.
const (
	DefaultNetwork      = "tcp"
	DefaultAddr         = "127.0.0.1:6379"
	DefaultProtocol     = 3
	DefaultDialTimeout  = 5 * time.Second
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
)

// Config is what the transport and the handshake need: the connection
// fields of conn.Options.
type Config struct {
	Network, Addr      string
	Username, Password string
	DB                 int
	ClientName         string
	Protocol           int // 3 (HELLO 3, RESP2 fallback) or 2 (RESP2 only)
	TLS                *tls.Config
	Timeout            time.Duration // dialing plus the handshake
	Dialer             func(ctx context.Context, network, addr string) (net.Conn, error)
}

// WithDefaults fills the zero fields with the defaults.
func (c Config) WithDefaults() Config {
	if c.Network == "" {
		c.Network = DefaultNetwork
	}
	if c.Addr == "" && c.Network == "tcp" {
		c.Addr = DefaultAddr
	}
	if c.Protocol == 0 {
		c.Protocol = DefaultProtocol
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultDialTimeout
	}
	return c
}

// ConfigError is the error of Transport given a Config no connection can
// be made with; nothing is dialed. It has no public identity of its own:
// the public packages map it to theirs (conn.ErrBadOptions), so that the
// error a user matches is owned by the package the user called.
type ConfigError struct {
	Field  string // the Config field, as conn.Options names it
	Reason string // what is wrong with it
}

// Error describes the field and what is wrong with it.
func (e *ConfigError) Error() string { return e.Field + " " + e.Reason }

// Transport dials the address and wraps the connection in TLS when
// c.TLS is set. TCP connections get TCP_NODELAY and keep-alives. A
// Protocol other than 2 or 3 (after WithDefaults) is refused with a
// *ConfigError before dialing.
func Transport(ctx context.Context, c Config) (net.Conn, error) {
	if c.Protocol != 2 && c.Protocol != 3 {
		return nil, &ConfigError{Field: "Protocol", Reason: strconv.Itoa(c.Protocol) + ": want 2, 3 or 0 (3)"}
	}
	dial := c.Dialer
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := callDialer(ctx, dial, c)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
	}
	if c.TLS == nil {
		return nc, nil
	}
	cfg := c.TLS.Clone()
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(c.Addr); err == nil {
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

// callDialer calls dial, a Config's Dialer (the user's) or net.Dialer's,
// with its panic recovered as the dial's error (PanicOf).
func callDialer(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), c Config) (nc net.Conn, err error) {
	defer func() {
		if r := recover(); r != nil {
			nc, err = nil, PanicOf("Dialer", r)
		}
	}()
	return dial(ctx, c.Network, c.Addr)
}

// PanicOf is the error of a panic, recovered, of r in the user's
// function fn. Package conn sets it (to make its *PanicError) in its
// init, before any dial.
var PanicOf = func(fn string, r any) error { return fmt.Errorf("%s panicked: %v", fn, r) }

// Result is what the handshake learnt.
type Result struct {
	// Protocol is 3, or 2 after a fallback (or when asked for).
	Protocol int
	// Hello is HELLO's reply (owned), or a Null value under RESP2.
	Hello resp.Value
}

// Bound bounds the exchange on nc that follows by ctx's deadline and
// cancellation (an ended ctx sets a deadline in the past, interrupting a
// blocked read or write), until the returned release is called: it
// clears the deadline only once the interrupt cannot come any more (an
// AfterFunc already started, ctx ending as the exchange finished, would
// otherwise leave a deadline in the past on a connection handed on as
// ready, failing a later write with "i/o timeout").
func Bound(ctx context.Context, nc net.Conn) (release func()) {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		nc.SetDeadline(time.Unix(1, 0))
		close(interrupted)
	})
	return func() {
		if !stop() {
			<-interrupted
		}
		nc.SetDeadline(time.Time{})
	}
}

// Handshake runs on a fresh connection before anyone else uses it: it
// writes to nc and reads the replies through rd (which reads nc), bounded
// by ctx's deadline and cancellation. Push frames met on the way are
// skipped. A server error (a failed authentication, say) is returned as
// the server's *resp.ServerError.
func Handshake(ctx context.Context, nc net.Conn, rd *resp.Reader, c Config) (Result, error) {
	defer Bound(ctx, nc)()
	if c.Protocol == 3 {
		b := appendHello(nil, c)
		n := 1
		if c.DB != 0 {
			b = resp.AppendCommand(b, "SELECT", strconv.Itoa(c.DB))
			n++
		}
		replies, err := roundTrip(nc, rd, b, n)
		if err != nil {
			return Result{}, err
		}
		herr := replies[0].Err()
		if herr == nil {
			if n == 2 {
				if err := replies[1].Err(); err != nil {
					return Result{}, err
				}
			}
			return Result{Protocol: 3, Hello: replies[0]}, nil
		}
		if !helloRefused(herr) {
			return Result{}, herr
		}
	}
	return handshake2(nc, rd, c)
}

// handshake2 is the RESP2 handshake.
func handshake2(nc net.Conn, rd *resp.Reader, c Config) (Result, error) {
	var b []byte
	n := 0
	if c.Password != "" {
		if c.Username != "" {
			b = resp.AppendCommand(b, "AUTH", c.Username, c.Password)
		} else {
			b = resp.AppendCommand(b, "AUTH", c.Password)
		}
		n++
	}
	if c.ClientName != "" {
		b = resp.AppendCommand(b, "CLIENT", "SETNAME", c.ClientName)
		n++
	}
	if c.DB != 0 {
		b = resp.AppendCommand(b, "SELECT", strconv.Itoa(c.DB))
		n++
	}
	res := Result{Protocol: 2, Hello: resp.Value{Type: resp.Null}}
	if n == 0 {
		return res, nil
	}
	replies, err := roundTrip(nc, rd, b, n)
	if err != nil {
		return Result{}, err
	}
	for _, r := range replies {
		if err := r.Err(); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

func appendHello(b []byte, c Config) []byte {
	n := 2
	if c.Password != "" {
		n += 3
	}
	if c.ClientName != "" {
		n += 2
	}
	b = resp.AppendArrayHeader(b, n)
	b = resp.AppendBulkString(b, "HELLO")
	b = resp.AppendBulkString(b, "3")
	if c.Password != "" {
		user := c.Username
		if user == "" {
			user = "default"
		}
		b = resp.AppendBulkString(b, "AUTH")
		b = resp.AppendBulkString(b, user)
		b = resp.AppendBulkString(b, c.Password)
	}
	if c.ClientName != "" {
		b = resp.AppendBulkString(b, "SETNAME")
		b = resp.AppendBulkString(b, c.ClientName)
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
func roundTrip(nc net.Conn, rd *resp.Reader, b []byte, n int) ([]resp.Value, error) {
	if _, err := nc.Write(b); err != nil {
		return nil, err
	}
	out := make([]resp.Value, 0, n)
	for len(out) < n {
		v, err := rd.Next()
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
