package pubsub

import (
	"context"
	"crypto/tls"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
)

// Every field of conn.Options is either carried into the handshake's
// configuration (and carried with its value), or used by the
// subscription itself, or said not to apply: a field added to
// conn.Options later fails this test until pubsub decides.
func TestDialConfigCoversOptions(t *testing.T) {
	handshake := map[string]string{ // conn.Options field → dial.Config field
		"Network": "Network", "Addr": "Addr", "Username": "Username", "Password": "Password",
		"DB": "DB", "ClientName": "ClientName", "Protocol": "Protocol", "TLS": "TLS",
		"DialTimeout": "Timeout", "Dialer": "Dialer",
	}
	own := map[string]string{
		"ReadTimeout":    "the health check",
		"WriteTimeout":   "each write",
		"Limits":         "the reader",
		"ReadBufferSize": "the reader",
		"MinBackoff":     "the redial",
		"MaxBackoff":     "the redial",
		"MaxPending":     "does not apply: a subscription sends few commands",
		"BlockingConns":  "does not apply: a subscription blocks nothing",
		"MaxArg":         "the names subscribed to (subscription.go tooLong)",
		"OnPush":         "does not apply: pushes are the messages",
		"Observer":       "the subscription's own commands (hooks.go)",
		"Hooks":          "the subscription's own commands (hooks.go)",
		"Logger":         "the hooks' panics (hooks.go)",
	}
	typ := reflect.TypeFor[conn.Options]()
	for i := range typ.NumField() {
		f := typ.Field(i).Name
		if handshake[f] == "" && own[f] == "" {
			t.Errorf("conn.Options.%s is new: carry it into dialConfig (options.go) or say why not here", f)
		}
	}
	o := conn.Options{
		Network: "unix", Addr: "/x.sock", Username: "u", Password: "p", DB: 3,
		ClientName: "n", Protocol: 2, TLS: &tls.Config{}, DialTimeout: time.Minute,
		Dialer: func(context.Context, string, string) (net.Conn, error) { return nil, nil },
	}
	got := reflect.ValueOf(dialConfig(o))
	in := reflect.ValueOf(o)
	for from, to := range handshake {
		a, b := in.FieldByName(from), got.FieldByName(to)
		if a.Kind() == reflect.Func {
			require.Equal(t, a.Pointer(), b.Pointer(), from)
			continue
		}
		require.Equal(t, a.Interface(), b.Interface(), "%s → %s", from, to)
	}
}

// The defaults, and a Buffer given.
func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	require.Equal(t, defaultBuffer, o.Buffer)
	require.Equal(t, 10*time.Second, o.ReadTimeout)
	require.Equal(t, defaultPingInterval, o.PingInterval)
	require.Equal(t, defaultMinBackoff, o.MinBackoff)
	require.Equal(t, defaultMaxBackoff, o.MaxBackoff)
	o = Options{Buffer: 3, Options: conn.Options{MinBackoff: 10 * time.Second}}.withDefaults()
	require.Equal(t, 3, o.Buffer)
	require.Equal(t, 10*time.Second, o.MaxBackoff)
	require.Equal(t, "tcp", dialConfig(conn.Options{}).Network)
}
