package conn_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/resp"
)

// manyNulls is the length of the reply of finding 8: an array of that many
// nulls is 12.6 MB on the wire, within the default MaxAggregate and
// MaxValues, yet its decoded Values take 288 MiB (72 bytes each), and
// conn.Do allocated 968 MiB for it: the Reader's arena with its headroom,
// the call's retained copy and Do's clone.
const manyNulls = 4194303

// manyNullsReply returns "*4194303\r\n" followed by 4,194,303 "_\r\n".
func manyNullsReply() []byte {
	b := resp.AppendArrayHeader(nil, manyNulls)
	return append(b, bytes.Repeat([]byte("_\r\n"), manyNulls)...)
}

// replyMemHello is a minimal RESP3 HELLO reply.
const replyMemHello = "%1\r\n$5\r\nproto\r\n:3\r\n"

// TestReplyMemoryBounded: a reply whose decoded Values would take more than
// Limits.MaxReplyBytes is skipped from its header on: the call fails alone
// with resp.ErrReplyTooLarge, allocating next to nothing (not in
// proportion to the Values the reply declares, nor to its bytes), and the
// connection goes on with the next reply.
func TestReplyMemoryBounded(t *testing.T) {
	reply := manyNullsReply() // built before measuring: the peer runs in this process
	addr := scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil {
				return
			}
			out := reply
			switch {
			case len(args) > 0 && strings.EqualFold(args[0], "HELLO"):
				out = []byte(replyMemHello)
			case len(args) > 0 && strings.EqualFold(args[0], "PING"):
				out = []byte("+PONG\r\n")
			}
			if _, err := c.Write(out); err != nil {
				return // the client hung up on the reply
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The transport is closed at cleanup through the Dialer, so that the
	// test needs no Conn method but Do.
	var nc net.Conn
	t.Cleanup(func() {
		if nc != nil {
			nc.Close()
		}
	})
	opts := conn.Options{
		Addr: addr,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			nc = c
			return c, err
		},
	}
	c, err := conn.Dial(ctx, opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := c.Do(ctx, "GET", "x")
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Do of a %d-byte reply of %d nulls: %v; TotalAlloc delta %.1f KiB", len(reply), manyNulls, err, float64(alloc)/(1<<10))

	if !errors.Is(err, resp.ErrReplyTooLarge) || errors.Is(err, resp.ErrProtocol) || errors.Is(err, conn.ErrBroken) {
		t.Fatalf("Do = %v (%d elements), %v; want an error matching resp.ErrReplyTooLarge alone", v.Type, len(v.Elems), err)
	}
	if alloc > 4<<20 {
		t.Fatalf("Do allocated %.1f MiB for a %.1f MiB reply", float64(alloc)/(1<<20), float64(len(reply))/(1<<20))
	}
	if v, err := c.Do(ctx, "PING"); err != nil || v.Text() != "PONG" || c.Err() != nil {
		t.Fatalf("PING after the skipped reply = %v, %v (Err %v)", v, err, c.Err())
	}
}
