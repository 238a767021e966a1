package cache

import (
	"testing"

	"github.com/echomq/echomq-go/internal/wire"
)

// WrapSenders has every connection a Cache dials from now on take the
// Cache's submissions through wrap(conn), until the test ends.
func WrapSenders(t testing.TB, wrap func(wire.Sender) wire.Sender) {
	senderWrap.Store(&wrap)
	t.Cleanup(func() { senderWrap.Store(nil) })
}
