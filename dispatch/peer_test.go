package dispatch_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/resp"
)

// peer is a scripted fake server: answer decides the raw reply to each
// command (or "" to close the connection). It records the commands and
// every byte the client sent.
type peer struct {
	addr string

	mu   sync.Mutex
	cmds [][]string
	raw  []byte
}

func startPeer(t testing.TB, answer func(args []string) string) *peer {
	t.Helper()
	p := &peer{}
	p.addr = scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReader(io.TeeReader(c, recorder{p}))
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil {
				return
			}
			p.mu.Lock()
			p.cmds = append(p.cmds, args)
			p.mu.Unlock()
			reply := answer(args)
			if reply == "" {
				return
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	})
	return p
}

type recorder struct{ p *peer }

func (r recorder) Write(b []byte) (int, error) {
	r.p.mu.Lock()
	r.p.raw = append(r.p.raw, b...)
	r.p.mu.Unlock()
	return len(b), nil
}

// count returns how many commands named name (case-insensitive, with the
// subcommand for SCRIPT) the peer received.
func (p *peer) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.cmds {
		got := c[0]
		if strings.EqualFold(got, "SCRIPT") && len(c) > 1 {
			got += " " + c[1]
		}
		if strings.EqualFold(got, name) {
			n++
		}
	}
	return n
}

func (p *peer) bytes() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.raw)
}

// dialPeer connects with RESP2, so no handshake command reaches the peer.
// Its timeouts only turn a hang into an error.
func dialPeer(t testing.TB, addr string) *conn.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: addr, Protocol: 2, ReadTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func bulkReply(s string) string { return string(resp.AppendBulkString(nil, s)) }

const noScript = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
