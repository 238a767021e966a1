package conn

import (
	"fmt"
	"log/slog"

	"github.com/echomq/echomq-go/internal/redact"
	"github.com/echomq/echomq-go/resp"
)

// Printing never shows a password. fmt prints a struct by walking its
// fields, unexported ones too, without calling their String methods; and
// for verbs other than v, s, q, x and X (%d, %t, …) it walks even a type
// that has a String method. So Options, *Conn and *Client implement
// fmt.Formatter: every verb prints their String, which holds
// "password=REDACTED" in place of the password.
//
// What fmt reaches without asking the value is beyond any method: an
// Options held by value in an unexported field of the caller's struct,
// and a *Conn or *Client held in an unexported field and printed with a verb a pointer does not take (%s, %q, %t: fmt then
// prints the pointed-to struct raw, and a Conn holds its Options by
// value). Print the value itself, or hold it in an exported field.

// Format prints String for any verb (%q quotes it; %x and %X give it in
// hex, as for a string), so that no verb shows the password: %d or %t
// would otherwise print every field, the password among them.
func (o Options) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "conn.Options", o.String())
}

// String describes the connection by its options, password redacted:
// "conn.Conn{tcp://127.0.0.1:6379 password=REDACTED db=0 protocol=3 …}".
// A nil *Conn is "<nil>".
func (c *Conn) String() string {
	if c == nil {
		return "<nil>"
	}
	return "conn.Conn{" + c.opts.String() + "}"
}

// Format prints String for any verb (%q quotes it), so that %+v and %#v,
// which would otherwise print every field of the Conn, its options among
// them, show no password.
func (c *Conn) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*conn.Conn", c.String())
}

// String describes the client by its options, password redacted:
// "conn.Client{tcp://127.0.0.1:6379 password=REDACTED db=0 …}". A nil
// *Client is "<nil>".
func (cl *Client) String() string {
	if cl == nil {
		return "<nil>"
	}
	return "conn.Client{" + cl.opts.String() + "}"
}

// Format prints String for any verb, as Conn.Format does.
func (cl *Client) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*conn.Client", cl.String())
}

// LogValue is what log/slog logs for Options (slog.LogValuer): a group
// of the settings, defaults filled in as String has them, the password
// as "REDACTED" when one is set, and each function or logger set (OnPush,
// Dialer, Observer, Hooks, Logger) named, not printed: a JSON handler
// would otherwise fail on them (and print nothing else), and a text
// handler print the password.
func (o Options) LogValue() slog.Value {
	d := o.withDefaults()
	as := []slog.Attr{slog.String("network", d.Network), slog.String("addr", d.Addr)}
	if o.Username != "" {
		as = append(as, slog.String("user", o.Username))
	}
	if o.Password != "" {
		as = append(as, slog.String("password", "REDACTED"))
	}
	as = append(as, slog.Int("db", o.DB), slog.Int("protocol", d.Protocol), slog.Bool("tls", o.TLS != nil))
	if o.ClientName != "" {
		as = append(as, slog.String("client_name", o.ClientName))
	}
	as = append(as,
		slog.Duration("dial_timeout", d.DialTimeout), slog.Duration("read_timeout", d.ReadTimeout),
		slog.Duration("write_timeout", d.WriteTimeout), slog.Int("max_pending", d.MaxPending),
		slog.Int("max_arg", d.MaxArg))
	if o.Limits != (resp.Limits{}) {
		as = append(as, slog.String("limits", fmt.Sprintf("%+v", o.Limits)))
	}
	if o.ReadBufferSize != 0 {
		as = append(as, slog.Int("read_buffer_size", o.ReadBufferSize))
	}
	if o.MinBackoff != 0 {
		as = append(as, slog.Duration("min_backoff", o.MinBackoff))
	}
	if o.MaxBackoff != 0 {
		as = append(as, slog.Duration("max_backoff", o.MaxBackoff))
	}
	if o.BlockingConns != 0 {
		as = append(as, slog.Int("blocking_conns", o.BlockingConns))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"on_push", o.OnPush != nil}, {"dialer", o.Dialer != nil}, {"observer", o.Observer != nil}, {"logger", o.Logger != nil}} {
		if f.set {
			as = append(as, slog.String(f.name, "set"))
		}
	}
	if len(o.Hooks) > 0 {
		as = append(as, slog.Int("hooks", len(o.Hooks)))
	}
	return slog.GroupValue(as...)
}
