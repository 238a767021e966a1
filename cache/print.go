package cache

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/echomq/echomq-go/internal/redact"
)

// Printing never shows a password, as in package conn: Options,
// ClusterOptions, *Cache and *ClusterCache implement fmt.Formatter, and
// every verb prints their String, which holds "password=REDACTED" in
// place of the password. (fmt walks a struct's fields, unexported ones
// too, without asking them how to print: a Cache holds its Options, and
// they the connection options.)

// String describes the options with the password redacted: the
// connection options, as conn.Options.String gives them, then the
// cache's own when they are set.
func (o Options) String() string {
	var b strings.Builder
	b.WriteString(o.Options.String())
	fmt.Fprintf(&b, " mode=%s", o.Mode)
	if len(o.Prefixes) > 0 {
		fmt.Fprintf(&b, " prefixes=%s", strings.Join(o.Prefixes, ","))
	}
	if o.MaxBytes != 0 {
		fmt.Fprintf(&b, " max_bytes=%d", o.MaxBytes)
	}
	if o.MaxEntryBytes != 0 {
		fmt.Fprintf(&b, " max_entry_bytes=%d", o.MaxEntryBytes)
	}
	return b.String()
}

// GoString is String, so that %#v does not print the password either.
func (o Options) GoString() string { return o.String() }

// Format prints String for any verb (%q quotes it; %x and %X give it in
// hex, as for a string), so that no verb shows the password.
func (o Options) Format(f fmt.State, verb rune) { redact.Format(f, verb, "cache.Options", o.String()) }

// String describes the cluster options with the password redacted.
func (o ClusterOptions) String() string {
	return "addrs=" + strings.Join(o.Addrs, ",") + " node={" + o.Options.String() + "}"
}

// GoString is String.
func (o ClusterOptions) GoString() string { return o.String() }

// Format prints String for any verb, as Options.Format does.
func (o ClusterOptions) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "cache.ClusterOptions", o.String())
}

// String describes the Cache by its options, password redacted, and its
// counters. A nil *Cache is "<nil>".
func (c *Cache) String() string {
	if c == nil {
		return "<nil>"
	}
	st := c.Stats()
	return fmt.Sprintf("cache.Cache{%s hits=%d misses=%d bytes=%d}", c.opts.String(), st.Hits, st.Misses, st.Bytes)
}

// GoString is String.
func (c *Cache) GoString() string { return c.String() }

// Format prints String for any verb, as Options.Format does.
func (c *Cache) Format(f fmt.State, verb rune) { redact.Format(f, verb, "*cache.Cache", c.String()) }

// String describes the ClusterCache by its options, password redacted.
// A nil *ClusterCache is "<nil>".
func (c *ClusterCache) String() string {
	if c == nil {
		return "<nil>"
	}
	return "cache.ClusterCache{" + c.opts.String() + "}"
}

// GoString is String.
func (c *ClusterCache) GoString() string { return c.String() }

// Format prints String for any verb, as Options.Format does.
func (c *ClusterCache) Format(f fmt.State, verb rune) {
	redact.Format(f, verb, "*cache.ClusterCache", c.String())
}

// LogValue is what log/slog logs for Options (slog.LogValuer): String,
// password redacted and no function printed (a JSON handler would fail
// on them), rather than the embedded or held conn.Options' group alone.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }
