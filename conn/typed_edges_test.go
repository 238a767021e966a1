package conn_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
)

// TestProtocolOutOfRange: a Protocol other than 0, 2 or 3 is refused by
// Dial and NewClient with an error matching ErrBadOptions, before
// anything is dialed, as ParseURL refuses protocol=4. It used to connect
// with RESP2 (anything but 3 was RESP2) and say nothing.
func TestProtocolOutOfRange(t *testing.T) {
	var dials atomic.Int64
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	for _, p := range []int{1, 4, -3} {
		opts := conn.Options{Addr: "127.0.0.1:1", Protocol: p, Dialer: dialer}
		if c, err := conn.Dial(context.Background(), opts); !errors.Is(err, conn.ErrBadOptions) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial with Protocol %d: %v, want ErrBadOptions", p, err)
		}
		if c, err := conn.NewClient(context.Background(), opts); !errors.Is(err, conn.ErrBadOptions) {
			if c != nil {
				c.Close()
			}
			t.Errorf("NewClient with Protocol %d: %v, want ErrBadOptions", p, err)
		}
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials", n)
	}
}

// TestRawCommandKeyOutOfRange: RawCommand.Key out of [0, Keys()) is nil,
// as cmds.Command.Key is, for a command whose keys are known and for one
// made without them; it used to panic (an index out of range, a nil
// Fact).
func TestRawCommandKeyOutOfRange(t *testing.T) {
	var b cmds.Builder
	cmd := b.Get("k").Build()
	f := cmd.Fact()
	for _, raw := range []conn.RawCommand{conn.NewRawCommand(cmd.Cmd().Bytes(), &f), conn.NewRawCommand(cmd.Cmd().Bytes(), nil)} {
		for _, i := range []int{-1, raw.Keys(), raw.Keys() + 1} {
			if k := raw.Key(i); k != nil {
				t.Errorf("Key(%d) of %d keys = %q", i, raw.Keys(), k)
			}
		}
	}
	if got := conn.NewRawCommand(cmd.Cmd().Bytes(), &f).Key(0); string(got) != "k" {
		t.Errorf("Key(0) = %q", got)
	}
}
