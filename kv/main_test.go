package kv_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

var (
	// srv is the package's server, spoken to in RESP3.
	srv *servertest.Server
	// srv2 has HELLO renamed away: clients fall back to RESP2.
	srv2 *servertest.Server
)

func TestMain(m *testing.M) {
	s2, err := servertest.Start(servertest.Options{Args: []string{"--rename-command", "HELLO", ""}})
	if err == nil {
		srv2 = s2
	}
	code := servertest.Main(m, &srv, servertest.Options{})
	if srv2 != nil {
		srv2.Stop()
	}
	os.Exit(code)
}

// waitLong bounds what a test waits for.
const waitLong = 20 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// target is one way of reaching a server: a protocol and a Sender kind.
type target struct {
	name   string
	server *servertest.Server
	sender conn.Sender
}

// targets dials a Conn and a Client to each server: RESP3, and RESP2 by
// the fallback from a refused HELLO. They close at cleanup.
func targets(t *testing.T) []target {
	t.Helper()
	servertest.Need(t, srv)
	require.NotNil(t, srv2, "the RESP2 server did not start")
	ctx := testCtx(t)
	var out []target
	for _, s := range []struct {
		server *servertest.Server
		proto  int
	}{{srv, 3}, {srv2, 2}} {
		c, err := conn.Dial(ctx, conn.Options{Addr: s.server.Addr})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.Equal(t, s.proto, c.Protocol())
		cl, err := conn.NewClient(ctx, conn.Options{Addr: s.server.Addr})
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		out = append(out,
			target{fmt.Sprintf("RESP%d/Conn", s.proto), s.server, c},
			target{fmt.Sprintf("RESP%d/Client", s.proto), s.server, cl})
	}
	return out
}

// tcase is one helper call against a prepared server.
type tcase struct {
	name  string
	setup [][]string // raw commands run first (servertest's own client)
	call  func(ctx context.Context, s conn.Sender) (any, error)
	want  any
	// err, when set, is checked instead of want.
	err func(t *testing.T, err error)
	// after are raw commands and their replies (flattened as
	// servertest.Do flattens them), checked after the call.
	after [][2]string
}

// runTable runs every case on every target, each on an empty server.
func runTable(t *testing.T, cases []tcase) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			for _, c := range cases {
				tg.server.Flush(t)
				for _, cmd := range c.setup {
					_, err := tg.server.Do(cmd...)
					require.NoError(t, err, "%s: setup %v", c.name, cmd)
				}
				got, err := c.call(testCtx(t), tg.sender)
				if c.err != nil {
					c.err(t, err)
				} else {
					require.NoError(t, err, c.name)
					require.Equal(t, c.want, got, c.name)
				}
				for _, a := range c.after {
					out, err := tg.server.Do(strings.Fields(a[0])...)
					require.NoError(t, err, "%s: after %s", c.name, a[0])
					require.Equal(t, a[1], out, "%s: %s", c.name, a[0])
				}
			}
		})
	}
}

// pair is a value with its ok, for the table.
type pair struct {
	V  any
	OK bool
}
