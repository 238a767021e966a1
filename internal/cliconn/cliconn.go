// Package cliconn names the cause when a command-line tool (cmd/emq,
// cmd/emqbench) cannot use the server it was given: a URL without a
// scheme, a failed authentication, a database the server does not have,
// a listener that does not speak RESP, a TLS mismatch. Anything else is
// "cannot reach". Every message is one line and quotes nothing that may
// hold a password.
package cliconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/cliredact"
	"github.com/echomq/echomq-go/resp"
)

// Schemes lists the URL schemes the tools take, for messages.
const Schemes = "redis://, rediss://, valkey://, valkeys:// or unix://"

// ParseURL is conn.ParseURL, with advice for a URL given without a
// scheme ("127.0.0.1:6379", "localhost:6379", "/run/redis.sock"): the
// error suggests the redis:// (or unix://) form.
func ParseURL(raw string) (conn.Options, error) {
	scheme, _, _ := strings.Cut(raw, ":")
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "valkey", "valkeys", "unix":
		return conn.ParseURL(raw) // "redis:host" too: conn says what is missing
	}
	if !strings.Contains(raw, "://") {
		want := "redis://" + raw
		if strings.HasPrefix(raw, "/") {
			want = "unix://" + raw
		}
		if cliredact.LooksSecret(raw) {
			return conn.Options{}, fmt.Errorf("the URL has no scheme: begin it with redis:// (or %s)", Schemes)
		}
		return conn.Options{}, fmt.Errorf("%s has no scheme: did you mean %s? (%s)", strconv.Quote(raw), want, Schemes)
	}
	return conn.ParseURL(raw)
}

// Explain returns the error of a failed connection to where (the server's
// address, without any password) with opts: the cause named when it is
// one of the usual mistakes, else "cannot reach where: err".
func Explain(where string, opts conn.Options, err error) error {
	var se *resp.ServerError
	var pe *resp.ProtocolError
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &se):
		switch {
		case se.HasCode("WRONGPASS"):
			return fmt.Errorf("authentication failed at %s: wrong user name or password (%s)", where, se.Msg)
		case se.HasCode("NOAUTH"):
			return fmt.Errorf("authentication failed at %s: the server wants a password and none was given: put it in the URL, redis://:PASSWORD@host (%s)", where, se.Code())
		case strings.Contains(se.Msg, "without any password configured"):
			return fmt.Errorf("authentication failed at %s: the URL gives a password but the server has none set (%s)", where, se.Msg)
		case se.HasCode("ERR") && strings.Contains(se.Msg, "DB index is out of range"):
			return fmt.Errorf("no such database at %s: the URL names database %d, beyond the server's (%s)", where, opts.DB, se.Msg)
		case strings.Contains(se.Msg, "SELECT is not allowed in cluster mode"):
			return fmt.Errorf("no such database at %s: a cluster has only database 0, the URL names %d (%s)", where, opts.DB, se.Msg)
		}
	case errors.As(err, &pe):
		return fmt.Errorf("not a Redis/Valkey server? %s answered with something that is not RESP (%s)", where, pe.Msg)
	case errors.As(err, &rh):
		return fmt.Errorf("%s does not speak TLS: use redis:// or valkey://, not rediss:// or valkeys://", where)
	}
	return fmt.Errorf("cannot reach %s: %w", where, err)
}
