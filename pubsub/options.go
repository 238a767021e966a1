package pubsub

import (
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/dial"
)

// Options configure a Subscription: where and how to connect and
// redial, as for a conn.Client, plus the message buffer and the health
// check.
type Options struct {
	// Options say where and how to connect (address, TLS, AUTH/ACL,
	// protocol, client name, timeouts) and redial: the same Options a
	// conn.Client is given. Protocol 3 (the default) receives messages
	// as RESP3 push frames, falling back to RESP2 subscriber mode when
	// the server refuses HELLO; Protocol 2 uses RESP2 only. ReadTimeout
	// is how long a health-check PING may go unanswered while the
	// subscription is reading (default 10 s; negative disables the
	// health check). MinBackoff and MaxBackoff bound the redial backoff
	// after a fault, which doubles after each failed attempt, with full
	// jitter (defaults 50 ms and 5 s). Hooks and Observer see the
	// subscription's commands ((P/S)SUBSCRIBE, (P/S)UNSUBSCRIBE, as
	// conn.Hook describes; not the handshake, nor the health check's
	// PING, which are housekeeping, nor messages, which Stats counts);
	// PUBLISH goes through a conn.Sender, whose hooks see it. A hook's
	// panic is recovered as a conn.Client's is (conn.PanicError): a
	// BeforeCommand's refuses its command, nothing sent, with the
	// *conn.PanicError; an AfterCommand's is logged to Logger (the
	// command ran). MaxPending, OnPush and BlockingConns do not apply.
	conn.Options
	// Buffer is how many messages wait for the consumer (Receive,
	// Messages). When it is full the subscription stops reading its
	// connection until the consumer takes one (except while a command
	// of its own waits for its reply): see "Slow consumers" in the
	// package doc. Default 4096.
	Buffer int
	// PingInterval is how long the connection may be silent before the
	// subscription sends a PING to check it. Default 10 s.
	PingInterval time.Duration
}

// Defaults.
const (
	defaultBuffer       = 4096
	defaultPingInterval = 10 * time.Second
	defaultMinBackoff   = 50 * time.Millisecond
	defaultMaxBackoff   = 5 * time.Second
)

func (o Options) withDefaults() Options {
	if o.Buffer <= 0 {
		o.Buffer = defaultBuffer
	}
	if o.PingInterval <= 0 {
		o.PingInterval = defaultPingInterval
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = dial.DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = dial.DefaultWriteTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = defaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(defaultMaxBackoff, o.MinBackoff)
	}
	return o
}

// dialConfig is the part of the options the transport and the handshake
// use, exactly as conn makes it (conn.Options.dialConfig);
// TestDialConfigCoversOptions keeps the two in step.
func dialConfig(o conn.Options) dial.Config {
	return dial.Config{
		Network: o.Network, Addr: o.Addr,
		Username: o.Username, Password: o.Password,
		DB: o.DB, ClientName: o.ClientName, Protocol: o.Protocol,
		TLS: o.TLS, Timeout: o.DialTimeout, Dialer: o.Dialer,
	}.WithDefaults()
}
