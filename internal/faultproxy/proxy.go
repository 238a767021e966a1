// Package faultproxy is a TCP proxy for tests that sits between a client and
// a real server on loopback and injects faults: connections cut after a given
// number of bytes in either direction, replies trickled one byte per write,
// a stall in the middle of a reply, added latency, and a silent drop of the
// server side (Proxy.Sever) that tells the client nothing.
//
// The Mode set with Proxy.Set is read live by every proxied connection, so a
// test can change it mid-connection; byte thresholds count from the start of
// each connection.
package faultproxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds the dial to the target for each accepted connection.
const dialTimeout = 5 * time.Second

// Mode is the fault behaviour of a proxy. The zero Mode forwards faithfully.
type Mode struct {
	// CutDownAfter closes both sides of a connection once this many
	// server→client bytes have been forwarded (0: never).
	CutDownAfter int64
	// CutUpAfter closes both sides once this many client→server bytes have
	// been forwarded (0: never).
	CutUpAfter int64
	// ByteAtATime forwards server→client bytes one per write.
	ByteAtATime bool
	// StallDownAfter and Stall: once this many server→client bytes have been
	// forwarded, forwarding pauses for Stall, once per connection. With
	// StallDownAfter 0 the stall comes before the first byte.
	StallDownAfter int64
	// Stall is the length of the pause (0: no stall).
	Stall time.Duration
	// Latency delays every chunk, in both directions, by this much.
	Latency time.Duration
}

// Proxy forwards connections from its own loopback address to a target.
type Proxy struct {
	target string
	ln     net.Listener
	mode   atomic.Pointer[Mode]
	wg     sync.WaitGroup // accept loop and every pump

	bytesDown, bytesUp, writes atomic.Int64
	stalls                     atomic.Int64
	downWrites                 atomic.Int64 // server→client writes, for tests

	mu     sync.Mutex
	conns  map[*pair]struct{}
	closed bool
}

// New starts a proxy on 127.0.0.1:0 that forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[*pair]struct{})}
	p.mode.Store(&Mode{})
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set replaces the fault mode; live connections see it from their next chunk.
func (p *Proxy) Set(m Mode) { p.mode.Store(&m) }

// Mode returns the current fault mode.
func (p *Proxy) Mode() Mode { return *p.mode.Load() }

// Conns is the number of live proxied connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// BytesDown is the total of server→client bytes forwarded.
func (p *Proxy) BytesDown() int64 { return p.bytesDown.Load() }

// Stalls is how many stalls (Mode.Stall) have begun, over every
// connection: a test waits for it to know that a reply is held.
func (p *Proxy) Stalls() int64 { return p.stalls.Load() }

// BytesUp is the total of client→server bytes forwarded.
func (p *Proxy) BytesUp() int64 { return p.bytesUp.Load() }

// Writes counts the chunks read from clients: each separate read that
// returned client→server bytes. Fewer writes for the same commands means
// the client batched them.
func (p *Proxy) Writes() int64 { return p.writes.Load() }

// CutAll closes every live proxied connection at once, both sides. New
// connections are still accepted.
func (p *Proxy) CutAll() {
	for _, c := range p.live() {
		c.close()
	}
}

// live returns the live pairs.
func (p *Proxy) live() []*pair {
	p.mu.Lock()
	defer p.mu.Unlock()
	live := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		live = append(live, c)
	}
	return live
}

// Sever drops every live proxied connection on the server side only, as
// a NAT, a firewall or a load balancer that forgets a connection does:
// the server sees its side closed (and forgets the connection's state,
// CLIENT TRACKING among it), while the client is told nothing, no FIN
// and no RST. What the client sends from then on is read and dropped,
// and nothing more reaches it, until it closes the connection or CutAll
// or Close cuts it. New connections are still accepted and forwarded.
func (p *Proxy) Sever() {
	for _, c := range p.live() {
		c.severed.Store(true)
		c.server.Close()
	}
}

// Close stops accepting, cuts every connection and waits for all of the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CutAll()
	p.wg.Wait()
	return err
}

// acceptLoop accepts clients until the listener closes.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond) // e.g. EMFILE: back off, retry
			continue
		}
		server, err := net.DialTimeout("tcp", p.target, dialTimeout)
		if err != nil {
			client.Close()
			continue
		}
		c := &pair{client: client, server: server, done: make(chan struct{})}
		if !p.track(c) {
			c.close()
			return
		}
		p.wg.Add(2)
		go p.pump(c, false)
		go p.pump(c, true)
	}
}

// track registers a live pair; false once the proxy is closed.
func (p *Proxy) track(c *pair) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack forgets a pair.
func (p *Proxy) untrack(c *pair) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pair is one proxied connection: both sockets and their byte counts.
type pair struct {
	client, server net.Conn
	down, up       atomic.Int64 // bytes forwarded on this connection
	stalled        atomic.Bool  // the one stall has happened
	severed        atomic.Bool  // Sever closed the server side only

	once sync.Once
	done chan struct{} // closed by close, wakes sleeping pumps
}

// close closes both sides once.
func (c *pair) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.server.Close()
	})
}

// sleep waits d or until the pair closes; false when it closed.
func (c *pair) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}

// pump copies one direction until either side fails or a fault cuts the
// pair. down is server→client. Once Sever has dropped the pair's server
// side, the server→client pump ends without touching the client, and the
// client→server one reads and drops the client's bytes until the client
// side closes.
func (p *Proxy) pump(c *pair, down bool) {
	defer p.wg.Done()
	src, dst := c.client, c.server
	if down {
		src, dst = c.server, c.client
	}
	buf := make([]byte, 32<<10)
	p.relay(c, down, src, dst, buf)
	if c.severed.Load() {
		if down {
			return // the client→server pump ends the pair
		}
		for {
			if _, err := c.client.Read(buf); err != nil {
				break
			}
		}
	}
	c.close()
	p.untrack(c)
}

// relay forwards src to dst, applying the mode, until either fails or a
// fault cuts the pair.
func (p *Proxy) relay(c *pair, down bool, src, dst net.Conn, buf []byte) {
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !down {
				p.writes.Add(1)
			}
			if !p.forward(c, down, dst, buf[:n]) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forward applies the current mode to one chunk and writes it; false when
// the pair is finished.
func (p *Proxy) forward(c *pair, down bool, dst net.Conn, b []byte) bool {
	m := p.mode.Load()
	if m.Latency > 0 && !c.sleep(m.Latency) {
		return false
	}
	if !down {
		return p.forwardUp(c, m, dst, b)
	}
	for len(b) > 0 {
		n := len(b)
		if m.ByteAtATime {
			n = 1
		}
		sent := c.down.Load()
		if m.Stall > 0 && !c.stalled.Load() {
			if sent >= m.StallDownAfter {
				c.stalled.Store(true)
				p.stalls.Add(1)
				if !c.sleep(m.Stall) {
					return false
				}
			} else {
				n = int(min(int64(n), m.StallDownAfter-sent))
			}
		}
		cut := m.CutDownAfter > 0 && sent+int64(n) >= m.CutDownAfter
		if cut {
			n = int(max(m.CutDownAfter-sent, 0))
		}
		if !p.write(c, true, dst, b[:n]) || cut {
			return false
		}
		b = b[n:]
		m = p.mode.Load()
	}
	return true
}

// forwardUp writes one client→server chunk, honouring CutUpAfter.
func (p *Proxy) forwardUp(c *pair, m *Mode, dst net.Conn, b []byte) bool {
	sent := c.up.Load()
	cut := m.CutUpAfter > 0 && sent+int64(len(b)) >= m.CutUpAfter
	if cut {
		b = b[:max(m.CutUpAfter-sent, 0)]
	}
	return p.write(c, false, dst, b) && !cut
}

// write sends b and counts it.
func (p *Proxy) write(c *pair, down bool, dst net.Conn, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	n, err := dst.Write(b)
	if down {
		p.downWrites.Add(1)
		c.down.Add(int64(n))
		p.bytesDown.Add(int64(n))
	} else {
		c.up.Add(int64(n))
		p.bytesUp.Add(int64(n))
	}
	return err == nil
}
