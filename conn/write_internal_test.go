package conn

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// TestIdleSendWritesCallersBytes: a submission sent to an idle
// connection is written straight from the caller's bytes, as they are,
// and the connection keeps no copy of them (its write buffers stay
// unallocated). Over net.Pipe, whose peer answers PONG once it has read
// each command whole.
func TestIdleSendWritesCallersBytes(t *testing.T) {
	a, b := net.Pipe()
	c := newConn(a, Options{}.withDefaults(), resp.NewReader(nil))
	c.start()
	defer c.Close()
	ping := resp.Command(nil, "PING")
	peerDone := make(chan error, 1)
	go func() {
		buf := make([]byte, len(ping.Bytes()))
		for {
			if _, err := io.ReadFull(b, buf); err != nil {
				peerDone <- nil
				return
			}
			if string(buf) != string(ping.Bytes()) {
				peerDone <- fmt.Errorf("peer read %q", buf)
				return
			}
			if _, err := b.Write([]byte("+PONG\r\n")); err != nil {
				peerDone <- nil
				return
			}
		}
	}()
	ctx := context.Background()
	for i := range 3 {
		if err := wire.DoFunc(ctx, c, ping, nil); err != nil {
			t.Fatalf("PING %d: %v", i, err)
		}
		c.mu.Lock()
		wb, sp := cap(c.wbuf), cap(c.spare)
		c.mu.Unlock()
		if wb != 0 || sp != 0 {
			t.Fatalf("after idle PING %d the connection holds write buffers of %d and %d bytes", i, wb, sp)
		}
	}
	c.Close()
	b.Close()
	if err := <-peerDone; err != nil {
		t.Fatal(err)
	}
}
