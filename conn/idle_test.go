package conn_test

import (
	"crypto/tls"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

// idleTransports are the ways to reach s whose idle close is found
// before sending: plain TCP, a unix socket, and TLS (its subtest skips,
// saying why, when the binary has no TLS).
func idleTransports(s *servertest.Server) []struct {
	name string
	opts conn.Options
} {
	return []struct {
		name string
		opts conn.Options
	}{
		{"tcp", conn.Options{Addr: s.Addr}},
		{"unix", conn.Options{Network: "unix", Addr: s.UnixPath}},
		{"tls", conn.Options{Addr: s.TLSAddr, TLS: &tls.Config{RootCAs: s.CACertPool}}},
	}
}

// idleServer starts a private server with a unix socket, and a TLS port
// when the binary has TLS: the tests close its clients (CLIENT KILL, its
// timeout) without touching the package server's.
func idleServer(t *testing.T) *servertest.Server {
	needServer(t)
	return startServer(t, servertest.Options{Unix: true, TLS: srv.NoTLS == ""})
}

// needTransport skips a TLS subtest when s has no TLS port.
func needTransport(t *testing.T, s *servertest.Server, opts conn.Options) {
	t.Helper()
	if opts.TLS != nil && s.TLSAddr == "" {
		t.Skip(srv.NoTLS)
	}
}

// closeIdle has s close the idle connections, by CLIENT KILL of the one
// of id (every normal client but the killer's when id is 0) or by its
// timeout, and returns once s no longer lists them: their close was sent
// before. lists tells whether a CLIENT LIST line is one of them.
func closeIdle(t *testing.T, s *servertest.Server, how string, id int64, lists func(line string) bool) {
	t.Helper()
	var err error
	switch {
	case how == "timeout":
		_, err = s.Do("CONFIG", "SET", "timeout", "1")
	case id != 0:
		_, err = s.Do("CLIENT", "KILL", "ID", strconv.FormatInt(id, 10))
	default:
		_, err = s.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	}
	require.NoError(t, err)
	waitFor(t, "the server to close the idle connections", func() bool {
		list, err := s.Do("CLIENT", "LIST")
		require.NoError(t, err)
		for line := range strings.Lines(list) {
			if lists(line) {
				return false
			}
		}
		return true
	})
	if how == "timeout" {
		_, err = s.Do("CONFIG", "SET", "timeout", "0")
		require.NoError(t, err)
	}
}

// TestConnIdleClosedByServerNotSent: a bare Conn that the server closed
// while it was idle (CLIENT KILL, its timeout) fails the next call with
// an error saying that nothing was sent (ErrNotSent: a retry is safe) and
// why (ErrIdleClosed), besides ErrBroken; and nothing ran: the INCR did
// not happen. Later calls get the same. Over TCP, a unix socket and TLS
// (where the idle check was off: the INCR was written to the closed
// connection and failed with an EOF, which says it may have run).
func TestConnIdleClosedByServerNotSent(t *testing.T) {
	s := idleServer(t)
	for _, tr := range idleTransports(s) {
		for _, how := range []string{"kill", "timeout"} {
			t.Run(tr.name+"/"+how, func(t *testing.T) {
				needTransport(t, s, tr.opts)
				ctx := testCtx(t)
				key := "idle-incr-" + tr.name + "-" + how
				c, err := conn.Dial(ctx, tr.opts)
				require.NoError(t, err)
				defer c.Close()
				id, err := c.Do(ctx, "CLIENT", "ID")
				require.NoError(t, err)
				n, err := c.Do(ctx, "INCR", key)
				require.NoError(t, err)
				require.Equal(t, int64(1), n.Int)
				prefix := "id=" + strconv.FormatInt(id.Int, 10) + " "
				closeIdle(t, s, how, id.Int, func(line string) bool { return strings.HasPrefix(line, prefix) })

				for i := range 2 {
					_, err = c.Do(ctx, "INCR", key)
					require.ErrorIs(t, err, conn.ErrNotSent, "call %d: %v", i, err)
					require.ErrorIs(t, err, conn.ErrIdleClosed, "call %d", i)
					require.ErrorIs(t, err, conn.ErrBroken, "call %d", i)
					require.NotErrorIs(t, err, conn.ErrNotConnected, "call %d", i)
					require.Equal(t, "not_sent", conn.ErrorKind(err), "call %d", i)
				}
				require.ErrorIs(t, c.Err(), conn.ErrIdleClosed)
				got, err := s.Do("GET", key)
				require.NoError(t, err)
				require.Equal(t, "1", got, "the INCRs refused ran nonetheless")
			})
		}
	}
}

// TestClientIdleClosedByServerTransports: a Client whose connections the
// server closed while they were idle sends the next calls on new ones,
// without an error, each once: a call on the shared connection, one on a
// Dedicated connection from the pool, a blocking one; over TCP, a unix
// socket and TLS (where the idle check was off: the call was written to
// the closed connection and failed with ErrBroken).
func TestClientIdleClosedByServerTransports(t *testing.T) {
	s := idleServer(t)
	for _, tr := range idleTransports(s) {
		for _, how := range []string{"kill", "timeout"} {
			t.Run(tr.name+"/"+how, func(t *testing.T) {
				needTransport(t, s, tr.opts)
				ctx := testCtx(t)
				name := "idle-client-" + tr.name + "-" + how
				key := name + "-n"
				opts := tr.opts
				opts.ClientName = name
				cl, err := conn.NewClient(ctx, opts)
				require.NoError(t, err)
				defer cl.Close()
				// A dedicated connection, idle in the pool, too.
				_, err = cl.Do(ctx, "BLPOP", "nothing", "0.01")
				require.NoError(t, err)
				got, err := echo(ctx, cl, "before")
				require.NoError(t, err)
				require.Equal(t, "before", got)
				closeIdle(t, s, how, 0, func(line string) bool { return strings.Contains(line, " name="+name+" ") })

				n, err := cl.Do(ctx, "INCR", key)
				require.NoError(t, err, "the first call after the server closed the idle connection")
				require.Equal(t, int64(1), n.Int)
				err = cl.Dedicated(ctx, func(c *conn.Conn) error {
					_, err := c.Do(ctx, "INCR", key)
					return err
				})
				require.NoError(t, err, "the first call on a Dedicated connection after the server closed the idle one")
				v, err := cl.Do(ctx, "BLPOP", "nothing", "0.01")
				require.NoError(t, err, "the first blocking call after the server closed the idle connection")
				require.True(t, v.IsNull(), "BLPOP = %v", v)
				got, err = s.Do("GET", key)
				require.NoError(t, err)
				require.Equal(t, "2", got, "each INCR ran once")
			})
		}
	}
}
