package jobs

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/echomq/echomq-go/internal/redact"
)

// Printing never shows a password, as in package conn: ClientConfig,
// ServerConfig, *Client and *Server implement fmt.Formatter, and every
// verb prints their String, in which the subscription's conn.Options
// hold "password=REDACTED". (fmt walks a struct's fields, unexported
// ones too, without asking them how to print: a Client holds its
// ClientConfig, and it the connection options.)

// String describes the configuration, the password redacted.
func (c ClientConfig) String() string { return "pubsub={" + c.PubSub.String() + "}" }

// GoString is String, so that %#v does not print the password either.
func (c ClientConfig) GoString() string { return c.String() }

// Format prints String for any verb.
func (c ClientConfig) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "jobs.ClientConfig", c.String())
}

// LogValue is what log/slog logs for a ClientConfig: String.
func (c ClientConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// String describes the configuration, the password redacted: the queues
// and their weights, the mode, and the subscription's options.
func (c ServerConfig) String() string {
	var b strings.Builder
	b.WriteString("queues=")
	for i, q := range slices.Sorted(maps.Keys(c.Queues)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", q, c.Queues[q])
	}
	if c.Strict {
		fmt.Fprintf(&b, " strict floor=%g", c.StrictFloor)
	}
	if c.Concurrency != 0 {
		fmt.Fprintf(&b, " concurrency=%d", c.Concurrency)
	}
	b.WriteString(" pubsub={" + c.PubSub.String() + "}")
	return b.String()
}

// GoString is String.
func (c ServerConfig) GoString() string { return c.String() }

// Format prints String for any verb.
func (c ServerConfig) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "jobs.ServerConfig", c.String())
}

// LogValue is what log/slog logs for a ServerConfig: String (no
// function is printed, no password shown).
func (c ServerConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// String describes the Client by its configuration, password redacted.
// A nil *Client is "<nil>".
func (c *Client) String() string {
	if c == nil {
		return "<nil>"
	}
	return "jobs.Client{" + c.cfg.String() + "}"
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// Format prints String for any verb.
func (c *Client) Format(f fmt.State, verb rune) { redact.Format(f, verb, "*jobs.Client", c.String()) }

// String describes the Server by its configuration, password redacted.
// A nil *Server is "<nil>".
func (s *Server) String() string {
	if s == nil {
		return "<nil>"
	}
	return "jobs.Server{" + s.cfg.String() + "}"
}

// GoString is String.
func (s *Server) GoString() string { return s.String() }

// Format prints String for any verb.
func (s *Server) Format(f fmt.State, verb rune) { redact.Format(f, verb, "*jobs.Server", s.String()) }
