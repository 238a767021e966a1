package pubsub_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
)

// No fmt verb prints the password of Options or of a Subscription.
func TestPrintRedacts(t *testing.T) {
	s := startServer(t, servertest.Options{Password: "hunter2-secret"})
	o := pubsub.Options{Options: conn.Options{Addr: s.Addr, Password: "hunter2-secret"}, Buffer: 16}
	sub := newSub(t, o)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%t", "%x"} {
		for _, v := range []any{o, &o, sub} {
			out := fmt.Sprintf(verb, v)
			require.NotContains(t, out, "hunter2", "%s of %T", verb, v)
		}
	}
	require.True(t, strings.HasPrefix(fmt.Sprint(sub), "pubsub.Subscription{tcp://"+s.Addr+" password=REDACTED"))
	require.Contains(t, fmt.Sprint(o), "buffer=16")
}
