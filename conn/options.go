package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/resp"
)

// Options configure a Client (NewClient, Connect) or a single connection
// (Dial). The zero value, with Addr set, connects over TCP with RESP3
// (falling back to RESP2), no auth, database 0. MinBackoff, MaxBackoff
// and BlockingConns are the Client's: a Conn from Dial ignores them.
type Options struct {
	// Network is "tcp" (default) or "unix".
	Network string
	// Addr is host:port for tcp (default "127.0.0.1:6379"), a socket path
	// for unix.
	Addr string
	// Username and Password authenticate (ACL user, or the default user
	// when Username is empty). The password never appears in an error, a
	// log line, String, or fmt's output of Options, *Conn or *Client in
	// any verb (see their Format methods).
	Username string
	Password string
	// DB is selected after connecting when non-zero.
	DB int
	// ClientName is set with HELLO SETNAME / CLIENT SETNAME when non-empty.
	ClientName string
	// Protocol is 3 (default: HELLO 3, falling back to RESP2 when the
	// server refuses HELLO) or 2 (RESP2 only, no HELLO); any other value
	// is an error matching ErrBadOptions, and nothing is dialed.
	Protocol int
	// TLS, when non-nil, wraps the connection in TLS.
	TLS *tls.Config
	// DialTimeout bounds dialing plus the handshake. Default 5 s.
	DialTimeout time.Duration
	// ReadTimeout is the liveness bound: when replies are owed and no byte
	// arrives for this long, the connection fails with ErrTimeout.
	// Default 10 s; negative disables it (for blocking commands).
	ReadTimeout time.Duration
	// WriteTimeout bounds one write to the socket. Default 10 s; negative
	// disables it.
	WriteTimeout time.Duration
	// MaxPending bounds the commands queued or in flight; Send waits for
	// room (honouring its context) beyond it. Default 1<<16.
	MaxPending int
	// OnPush receives RESP3 push frames on the reader goroutine, while the
	// value is valid; it must not block. Without it pushes are dropped. A
	// push that breaks Limits is skipped and reaches OnPush as a Value of
	// type resp.TooLarge, whose Err (a *resp.ReplyTooLargeError) names the
	// limit. A panic in it is recovered and logged to Logger; the push
	// is dropped and the connection reads on.
	OnPush func(resp.Value)
	// Observer, when set, is told of every command's start and end (see
	// Observer). Without it nothing is observed and nothing is spent.
	Observer Observer
	// Hooks wrap every command and pipeline sent (see Hook), in order,
	// before the Observer. Without hooks nor an Observer nothing is
	// spent on them.
	Hooks []Hook
	// Limits bound what the reply decoder accepts. A well-formed reply
	// over them (MaxReplyBytes, MaxValues, MaxAggregate, MaxBulk,
	// MaxDepth) is skipped on the wire in bounded memory and fails its
	// own command alone with a *resp.ReplyTooLargeError (errors.Is
	// resp.ErrReplyTooLarge); the connection lives on. Raise the limit
	// here to receive such replies.
	Limits resp.Limits
	// MaxArg is the longest argument a command may carry, in bytes: the
	// server's proto-max-bulk-len, 512 MiB unless the server was set
	// otherwise. A submission with a longer argument is refused before
	// anything is sent (an *ArgTooLargeError, matching
	// ErrCommandRefused): the server would answer it with a protocol
	// error and close the connection, failing every other call on it.
	// Negative: no limit.
	MaxArg int
	// ReadBufferSize is the reader's starting buffer size (default 32 KiB).
	ReadBufferSize int
	// Dialer, when set, replaces net.Dialer for the transport. A panic
	// in it fails the dial with a *PanicError.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger is told what the connection recovers from and no call
	// returns: the panic of OnPush, or of a hook whose call had ended
	// with an error of its own (see PanicError). Nil: slog.Default().
	Logger *slog.Logger

	// For a Client only (a Conn from Dial ignores them):

	// MinBackoff and MaxBackoff bound the Client's redial backoff, which
	// doubles after each failed attempt with full jitter. Defaults 50 ms
	// and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// BlockingConns is the most dedicated connections a Client lends to
	// blocking commands (BLPOP, BZPOPMIN, XREAD … BLOCK, …) and to
	// Dedicated. Default 4.
	BlockingConns int
}

func (o Options) withDefaults() Options {
	d := o.dialConfig() // the connection's own defaults: network, address, protocol, dial timeout
	o.Network, o.Addr, o.Protocol, o.DialTimeout = d.Network, d.Addr, d.Protocol, d.Timeout
	if o.ReadTimeout == 0 {
		o.ReadTimeout = dial.DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = dial.DefaultWriteTimeout
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 1 << 16
	}
	if o.MaxArg == 0 {
		o.MaxArg = DefaultMaxArg
	}
	return o
}

// DefaultMaxArg is Options.MaxArg's default: 512 MiB, the servers'
// default proto-max-bulk-len.
const DefaultMaxArg = 512 << 20

// String describes the options with the password redacted; the Client's
// backoff bounds and dedicated connections limit are shown when set.
func (o Options) String() string {
	o = o.withDefaults()
	var b strings.Builder
	fmt.Fprintf(&b, "%s://%s", o.Network, o.Addr)
	if o.Username != "" {
		fmt.Fprintf(&b, " user=%s", o.Username)
	}
	if o.Password != "" {
		b.WriteString(" password=REDACTED")
	}
	fmt.Fprintf(&b, " db=%d protocol=%d tls=%t", o.DB, o.Protocol, o.TLS != nil)
	if o.ClientName != "" {
		fmt.Fprintf(&b, " name=%s", o.ClientName)
	}
	if o.MinBackoff != 0 {
		fmt.Fprintf(&b, " min_backoff=%v", o.MinBackoff)
	}
	if o.MaxBackoff != 0 {
		fmt.Fprintf(&b, " max_backoff=%v", o.MaxBackoff)
	}
	if o.BlockingConns != 0 {
		fmt.Fprintf(&b, " blocking_conns=%d", o.BlockingConns)
	}
	return b.String()
}

// GoString is String, so that %#v does not print the password either.
func (o Options) GoString() string { return o.String() }

// ParseURL reads options from a URL:
//
//	redis://[user[:password]@]host[:port][/db][?option=value…]
//	rediss://…              (TLS; valkey:// and valkeys:// are the same)
//	unix://[user[:password]@]/path/to/socket[?db=N…]
//
// Query options: db, protocol (2 or 3), client_name, dial_timeout,
// read_timeout, write_timeout, min_backoff, max_backoff (Go durations),
// max_pending, max_arg, blocking_conns. Unknown options are an error.
//
// A user name or password holding '#', '/', '?' or '@' must be
// percent-encoded (%23, %2F, %3F, %40; and '%' itself as %25): unescaped,
// those characters end the user info early and spill the rest of the
// password into the host, path, query or fragment. ParseURL refuses such
// URLs rather than read them into the wrong fields: any URL holding a '#'
// (Redis URLs have no fragment), and any URL with an '@' after its host
// part, so an '@' in a query value must be written %40 as well. An
// unescaped '@' or ':' within the password is read correctly, since the
// host follows the last '@' and the user name ends at the first ':'
// (redis://alice:p@s:s@host is user alice, password p@s:s). A unix URL
// may hold an '@' in its socket path or query when nothing but user info
// comes between "unix://" and the path, and no '@' is followed by '/'
// (unix:///pw@/path reads as a password beginning with '/').
//
// The password is never echoed in an error: when the URL holds an '@',
// errors do not quote the URL at all.
func ParseURL(raw string) (Options, error) {
	if err := checkUserInfo(raw); err != nil {
		return Options{}, err
	}
	o, err := parseURL(raw)
	var ue *urlError
	if errors.As(err, &ue) && strings.Contains(raw, "@") {
		ue.quote = ""
	}
	return o, err
}

// checkUserInfo refuses, before url.Parse splits it, a URL whose user
// info may hold an unescaped '#', '/', '?' or '@': such a password ends
// the authority early, and what follows it (up to the '@') would be read
// as host, path, query or fragment. The error quotes nothing of the URL.
func checkUserInfo(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return nil // the whole rest is the authority: its last '@' ends the user info
	}
	auth, tail := rest[:end], rest[end:]
	bad := strings.Contains(tail, "#")
	if !bad && strings.Contains(tail, "@") {
		if strings.EqualFold(scheme, "unix") {
			// unix://[user[:password]@]/path: the authority is empty or
			// ends with '@'; a password beginning with '/' shows as "@/".
			bad = auth != "" && !strings.HasSuffix(auth, "@") || strings.Contains(tail, "@/")
		} else {
			bad = true // the path is a database number, and '@' in a query is %40
		}
	}
	if bad {
		return &urlError{what: "the URL holds a '#', or an '@' after its host: a '#', '/', '?' or '@' in the user name or password must be percent-encoded (%23, %2F, %3F, %40)"}
	}
	return nil
}

// urlError is a ParseURL error: what went wrong, and the piece of the URL
// it concerns (quote), which ParseURL drops when it might hold a secret.
type urlError struct{ what, quote string }

func (e *urlError) Error() string {
	if e.quote == "" {
		return "conn: " + e.what
	}
	return "conn: " + e.what + ": " + e.quote
}

func parseURL(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Options{}, &urlError{"invalid URL", redactURLError(err).Error()}
	}
	if u.Opaque != "" {
		// redis:alice:pw@host, without "//": no host, no user info.
		return Options{}, &urlError{what: "invalid URL: want \"//\" after the scheme (redis://host…)"}
	}
	var o Options
	switch u.Scheme {
	case "redis", "valkey":
	case "rediss", "valkeys":
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	case "unix":
		o.Network = "unix"
	default:
		return Options{}, fmt.Errorf("conn: unsupported URL scheme %q (want redis, rediss, valkey, valkeys or unix)", u.Scheme)
	}
	if u.User != nil {
		o.Username = u.User.Username()
		if p, ok := u.User.Password(); ok {
			o.Password = p
		} else if o.Username != "" {
			// redis://:password@ form is handled above; redis://password@
			// (a bare user part) is taken as the password, as redis-cli does.
			o.Password, o.Username = o.Username, ""
		}
	}
	if o.Network == "unix" {
		if u.Path == "" {
			return Options{}, fmt.Errorf("conn: unix URL without a socket path")
		}
		o.Addr = u.Path
	} else {
		host, port := u.Hostname(), u.Port()
		if host == "" {
			host = "127.0.0.1"
		}
		if port == "" {
			port = "6379"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Options{}, &urlError{"invalid port", port}
		}
		o.Addr = net.JoinHostPort(host, port)
		if o.TLS != nil {
			o.TLS.ServerName = host
		}
		if p := strings.Trim(u.Path, "/"); p != "" {
			db, err := strconv.Atoi(p)
			if err != nil || db < 0 {
				return Options{}, &urlError{"invalid database in URL path", strconv.Quote(p)}
			}
			o.DB = db
		}
	}
	for k, vs := range u.Query() {
		if err := o.setQuery(k, vs[len(vs)-1]); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

func (o *Options) setQuery(k, v string) error {
	var err error
	switch k {
	case "db":
		o.DB, err = strconv.Atoi(v)
		if err == nil && o.DB < 0 {
			err = errors.New("negative")
		}
	case "protocol":
		o.Protocol, err = strconv.Atoi(v)
		if err == nil && o.Protocol != 2 && o.Protocol != 3 {
			err = errors.New("want 2 or 3")
		}
	case "client_name":
		o.ClientName = v
	case "dial_timeout":
		o.DialTimeout, err = time.ParseDuration(v)
	case "read_timeout":
		o.ReadTimeout, err = time.ParseDuration(v)
	case "write_timeout":
		o.WriteTimeout, err = time.ParseDuration(v)
	case "max_pending":
		o.MaxPending, err = strconv.Atoi(v)
	case "max_arg":
		o.MaxArg, err = strconv.Atoi(v)
	case "min_backoff":
		o.MinBackoff, err = time.ParseDuration(v)
	case "max_backoff":
		o.MaxBackoff, err = time.ParseDuration(v)
	case "blocking_conns":
		o.BlockingConns, err = strconv.Atoi(v)
	default:
		return &urlError{"unknown URL option", strconv.Quote(k)}
	}
	if err != nil {
		return &urlError{"invalid URL option", fmt.Sprintf("%s=%q: %v", k, v, err)}
	}
	return nil
}

// redactURLError drops the URL (which may hold a password) from a parse
// error, keeping only what went wrong.
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %v", ue.Op, ue.Err)
	}
	return err
}
