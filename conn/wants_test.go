package conn_test

import (
	"context"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/internal/wire"
)

// TestWantsFacts: of the module's own connections only those with hooks
// (or an Observer) read the facts of a Plain submission, so an encoder
// that knows its Sender (dispatch) makes them for those alone; any other
// Sender, a wrapper or a user's fake, is taken to want them.
func TestWantsFacts(t *testing.T) {
	servertest.Need(t, srv)
	ctx := context.Background()
	hook := conn.Hook{BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, _ conn.RawCommand) context.Context { return ctx }}
	plain := dial(t, conn.Options{Addr: srv.Addr})
	hooked := dial(t, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{hook}})
	observed := dial(t, conn.Options{Addr: srv.Addr, Observer: nopObserver{}})
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hcl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{hook}})
	if err != nil {
		t.Fatal(err)
	}
	defer hcl.Close()
	for _, tc := range []struct {
		name string
		s    wire.Sender
		want bool
	}{
		{"Conn", plain, false},
		{"Conn with hooks", hooked, true},
		{"Conn with an Observer", observed, true},
		{"Client", cl, false},
		{"Client with hooks", hcl, true},
		{"SendFunc", conn.SendFunc(plain.Send), true},
	} {
		if got := wire.WantsFacts(tc.s); got != tc.want {
			t.Errorf("%s: WantsFacts %v, want %v", tc.name, got, tc.want)
		}
	}
}
