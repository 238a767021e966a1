package cliconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Each usual mistake is named; anything else is "cannot reach", with the
// cause still matched by errors.Is.
func TestExplain(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("conn: handshake with h:1: %w", err) }
	opts := conn.Options{DB: 7}
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap(&resp.ServerError{Msg: "WRONGPASS invalid username-password pair or user is disabled."}), "authentication failed at h:1: wrong user name or password"},
		{wrap(&resp.ServerError{Msg: "NOAUTH HELLO must be called with the client already authenticated"}), "authentication failed at h:1: the server wants a password"},
		{wrap(&resp.ServerError{Msg: "NOAUTH Authentication required."}), "authentication failed at h:1: the server wants a password"},
		{wrap(&resp.ServerError{Msg: "ERR AUTH <password> called without any password configured for the default user."}), "authentication failed at h:1: the URL gives a password but the server has none"},
		{wrap(&resp.ServerError{Msg: "ERR DB index is out of range"}), "no such database at h:1: the URL names database 7"},
		{wrap(&resp.ServerError{Msg: "ERR SELECT is not allowed in cluster mode"}), "no such database at h:1: a cluster has only database 0"},
		{wrap(&resp.ProtocolError{Msg: "unknown type byte 'H'", Offset: 0}), "not a Redis/Valkey server? h:1 answered with something that is not RESP (unknown type byte 'H')"},
		{wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "h:1 does not speak TLS"},
		{wrap(&resp.ServerError{Msg: "ERR something else"}), "cannot reach h:1: conn: handshake with h:1: ERR something else"},
		{wrap(conn.ErrTimeout), "cannot reach h:1: "},
	} {
		got := Explain("h:1", opts, c.err)
		if !strings.HasPrefix(got.Error(), c.want) || strings.Contains(got.Error(), "frame offset") {
			t.Errorf("Explain(%v) = %q, want it to begin %q", c.err, got, c.want)
		}
	}
	if err := Explain("h:1", opts, wrap(conn.ErrTimeout)); !errors.Is(err, conn.ErrTimeout) {
		t.Errorf("cannot reach loses the cause: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"127.0.0.1:6379":   `"127.0.0.1:6379" has no scheme: did you mean redis://127.0.0.1:6379?`,
		"localhost":        `did you mean redis://localhost?`,
		"/run/redis.sock":  `did you mean unix:///run/redis.sock?`,
		":secret@h:6379":   "the URL has no scheme: begin it with redis://",
		"redis:h:6379":     "want \"//\"",
		"ftp://h:1":        "unsupported URL scheme",
		"alice:secret@h:1": "the URL has no scheme",
	} {
		_, err := ParseURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q) = %v, want it to hold %q", raw, err, want)
		}
	}
	if o, err := ParseURL("redis://h:1/2"); err != nil || o.Addr != "h:1" || o.DB != 2 {
		t.Errorf("ParseURL of a good URL = %+v, %v", o, err)
	}
}
