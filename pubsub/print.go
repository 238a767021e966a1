package pubsub

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Printing never shows a password, as in package conn: Options and
// *Subscription implement fmt.Formatter, and every verb prints their
// String, which holds "password=REDACTED" in place of the password.

// String describes the options with the password redacted: the
// connection options, as conn.Options.String gives them, then the
// subscription's own when they are set.
func (o Options) String() string {
	var b strings.Builder
	b.WriteString(o.Options.String())
	if o.Buffer != 0 {
		fmt.Fprintf(&b, " buffer=%d", o.Buffer)
	}
	if o.PingInterval != 0 {
		fmt.Fprintf(&b, " ping_interval=%v", o.PingInterval)
	}
	return b.String()
}

// GoString is String, so that %#v does not print the password either.
func (o Options) GoString() string { return o.String() }

// Format prints String for any verb (%q quoted).
func (o Options) Format(f fmt.State, verb rune) { format(f, verb, o.String()) }

// String describes the subscription by its options, password redacted,
// and its state: "pubsub.Subscription{tcp://… connected=true}".
func (s *Subscription) String() string {
	if s == nil {
		return "<nil>"
	}
	st := s.Stats()
	return fmt.Sprintf("pubsub.Subscription{%s connected=%t received=%d reconnects=%d}",
		s.opts.String(), st.Connected, st.Received, st.Reconnects)
}

// GoString is String.
func (s *Subscription) GoString() string { return s.String() }

// Format prints String for any verb (%q quoted).
func (s *Subscription) Format(f fmt.State, verb rune) { format(f, verb, s.String()) }

func format(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s)
		return
	}
	io.WriteString(f, s)
}

// LogValue is what log/slog logs for Options (slog.LogValuer): String,
// password redacted and no function printed (a JSON handler would fail
// on them), rather than the embedded or held conn.Options' group alone.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }
