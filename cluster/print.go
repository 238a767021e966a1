package cluster

import (
	"fmt"
	"github.com/echomq/echomq-go/internal/redact"
	"log/slog"
	"strings"
)

// Printing never shows a password, as in package conn: Options and
// *Client implement fmt.Formatter, and every verb prints their String,
// which holds "password=REDACTED" in place of the password. (fmt walks a
// struct's fields, unexported ones too, without asking them how to print:
// a Client holds its Options, and they the connection options.)

// String describes the options with the password redacted: the seeds,
// then the connection options as conn.Options.String gives them,
// then the Client's own when they are set.
func (o Options) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seeds=%s node={%s}", strings.Join(o.Seeds, ","), o.Node.String())
	if o.MaxRedirects != 0 {
		fmt.Fprintf(&b, " max_redirects=%d", o.MaxRedirects)
	}
	if o.RefreshInterval != 0 {
		fmt.Fprintf(&b, " refresh_interval=%v", o.RefreshInterval)
	}
	if o.RetryBackoff != 0 {
		fmt.Fprintf(&b, " retry_backoff=%v", o.RetryBackoff)
	}
	if o.RetryTimeout != 0 {
		fmt.Fprintf(&b, " retry_timeout=%v", o.RetryTimeout)
	}
	return b.String()
}

// GoString is String, so that %#v does not print the password either.
func (o Options) GoString() string { return o.String() }

// Format prints String for any verb (%q quotes it; %x and %X give it in
// hex, as for a string), so that no verb shows the password.
func (o Options) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "cluster.Options", o.String())
}

// String describes the Client by its options, password redacted, and
// the primaries it knows: "cluster.Client{seeds=… node={…} primaries=…}".
// A nil *Client is "<nil>".
func (cl *Client) String() string {
	if cl == nil {
		return "<nil>"
	}
	var primaries []string
	if t := cl.topo.Load(); t != nil {
		primaries = t.addrs
	}
	return "cluster.Client{" + cl.opts.String() + " primaries=" + strings.Join(primaries, ",") + "}"
}

// GoString is String.
func (cl *Client) GoString() string { return cl.String() }

// Format prints String for any verb, as Options.Format does.
func (cl *Client) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*cluster.Client", cl.String())
}

// LogValue is what log/slog logs for Options (slog.LogValuer): String,
// password redacted and no function printed (a JSON handler would fail
// on them), rather than the embedded or held conn.Options' group alone.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }
