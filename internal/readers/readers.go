// Package readers is the plumbing of replica reads (package replica): a
// Pool of replica connections, probed for health, latency and zone, that
// picks the replica a read goes to; the test of whether a submission is a
// read (ReadOnly); and the READONLY handshake of a cluster replica's
// connections.
package readers

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
)

// notRead are the kinds that keep a command on the primary even when it
// is ReadOnly.
const notRead = cmds.Write | cmds.Blocking | cmds.ReplyModel | cmds.TxMulti | cmds.TxEnd | cmds.TxWatch

// ReadOnly reports whether every command of a submission, by its facts,
// is a read a replica may serve: known to the command table, ReadOnly,
// and neither a write, blocking, a transaction's nor a connection's
// state.
func ReadOnly(facts []cmds.Fact) bool {
	if len(facts) == 0 {
		return false
	}
	for i := range facts {
		f := &facts[i]
		if f.Info == nil || f.Kind&cmds.ReadOnly == 0 || f.Kind&notRead != 0 {
			return false
		}
	}
	return true
}

// NotSent reports whether a Send's error says that nothing was sent, so
// the submission may go elsewhere.
func NotSent(err error) bool {
	return errors.Is(err, conn.ErrNotSent) || errors.Is(err, conn.ErrNotConnected) || errors.Is(err, conn.ErrClosed)
}

// ZoneOf, when set (by tests: Valkey 8.0 and Redis report no zone), gives
// a replica's zone in place of its INFO's availability_zone.
var ZoneOf func(addr string) string

// Member is one replica and its connection.
type Member struct {
	Addr string
	gate drain.Gate // the reads in flight on it
	cl   atomic.Pointer[conn.Client]
	rtt  atomic.Int64 // the last probe's round trip, ns; 0: none yet
	zone atomic.Pointer[string]
	down atomic.Bool
}

// Client returns the member's connection, nil before its first dial.
func (m *Member) Client() *conn.Client { return m.cl.Load() }

// Gate counts the reads in flight on the member's connection: a read
// enters it before it is sent (false: the member left the pool, pick
// another) and leaves it once done; a member that left the pool is
// closed once its reads have ended.
func (m *Member) Gate() *drain.Gate { return &m.gate }

// Down marks the member down until its next good probe.
func (m *Member) Down() { m.down.Store(true) }

// usable: dialed and not down.
func (m *Member) usable() bool { return m.cl.Load() != nil && !m.down.Load() }

// Pool holds the replicas a client reads from, by address.
type Pool struct {
	opts     conn.Options // the replicas' connection options (Addr set per member)
	readonly bool         // send READONLY on each connection (a cluster's replicas)
	reads    replica.Options

	mu      sync.RWMutex
	members map[string]*Member
	closed  bool

	stop chan struct{}  // closed by Close: the retired members close now
	wg   sync.WaitGroup // the retired members' drains
}

// New returns an empty Pool whose members connect with opts; readonly
// makes each connection send READONLY first (a cluster's replicas).
func New(opts conn.Options, readonly bool, reads replica.Options) *Pool {
	p := &Pool{opts: opts, readonly: readonly, reads: reads, members: map[string]*Member{}, stop: make(chan struct{})}
	if readonly {
		p.opts = readonlyOptions(opts)
	}
	return p
}

// Set makes addrs the replicas: new ones are added (dialed at the next
// Probe), those no longer listed stop taking reads at once and are closed
// once the reads in flight on them have ended with their replies (or
// after drain.Grace, or at Close).
func (p *Pool) Set(addrs []string) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	var old []*Member
	for a, m := range p.members {
		if !slices.Contains(addrs, a) {
			delete(p.members, a)
			old = append(old, m)
		}
	}
	for _, a := range addrs {
		if p.members[a] == nil {
			p.members[a] = &Member{Addr: a}
		}
	}
	p.wg.Add(len(old))
	p.mu.Unlock()
	for _, m := range old {
		m.gate.Retire()
		go p.drain(m)
	}
}

// Grace bounds how long a member that left the pool waits for its reads.
var Grace = drain.Grace

// drain closes retired member m once its reads have ended, after Grace,
// or at Close.
func (p *Pool) drain(m *Member) {
	defer p.wg.Done()
	m.gate.Wait(Grace, p.stop)
	closeAll([]*Member{m})
}

// Addrs returns the replicas that take reads now (dialed, not down).
func (p *Pool) Addrs() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []string
	for a, m := range p.members {
		if m.usable() {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// Probe dials the members not yet dialed and asks each its round trip
// (PING) and zone (INFO server), marking down those that fail and up
// those that answer. They are probed at once, each within timeout.
func (p *Pool) Probe(ctx context.Context, timeout time.Duration) {
	p.mu.RLock()
	ms := make([]*Member, 0, len(p.members))
	for _, m := range p.members {
		ms = append(ms, m)
	}
	p.mu.RUnlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			p.probe(ctx, m)
		})
	}
	wg.Wait()
}

func (p *Pool) probe(ctx context.Context, m *Member) {
	cl := m.cl.Load()
	if cl == nil {
		o := p.opts
		o.Addr = m.Addr
		c, err := conn.NewClient(ctx, o)
		if err != nil {
			m.down.Store(true)
			return
		}
		p.mu.Lock()
		if p.closed || p.members[m.Addr] != m || !m.cl.CompareAndSwap(nil, c) {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.mu.Unlock()
		cl = c
	}
	start := time.Now()
	own := wire.OwnSender(cl) // unseen by the user's hooks
	if _, err := wire.Do(ctx, own, "PING"); err != nil {
		m.down.Store(true)
		return
	}
	m.rtt.Store(max(int64(time.Since(start)), 1))
	zone := ""
	if ZoneOf != nil {
		zone = ZoneOf(m.Addr)
	} else if v, err := wire.Do(ctx, own, "INFO", "server"); err == nil {
		zone = InfoZone(v.Text())
	}
	m.zone.Store(&zone)
	m.down.Store(false)
}

// InfoZone reads the availability_zone field of an INFO reply, "" when
// the server reports none.
func InfoZone(info string) string {
	for line := range strings.Lines(info) {
		if z, ok := strings.CutPrefix(line, "availability_zone:"); ok {
			return strings.TrimSpace(z)
		}
	}
	return ""
}

// NearRTT is the least margin over the lowest round trip within which
// replicas count as equally near (Latency, Zone): a single PING's time
// varies by more than that between equal nodes, so the nearest replica
// alone would take every read until the next probe and the others none.
const NearRTT = 250 * time.Microsecond

// near is the round trip up to which a replica counts as as near as the
// nearest, whose round trip is best: within NearRTT or half of best of
// it, whichever is more.
func near(best int64) int64 { return best + max(int64(NearRTT), best/2) }

// Pick returns the member a read goes to among those at addrs (nil:
// every member), by the route, or nil when none can take it. skip is a
// member already tried for this read. Random picks any usable member;
// Latency picks at random among the nearest (those within near of the
// lowest round trip), so that equally near replicas share the reads;
// Zone does the same among the members in the zone, or among all when
// none is.
func (p *Pool) Pick(addrs []string, skip *Member) *Member {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var buf [8]*Member
	cands := buf[:0]
	if addrs == nil {
		for _, m := range p.members {
			if m != skip && m.usable() {
				cands = append(cands, m)
			}
		}
	} else {
		for _, a := range addrs {
			if m := p.members[a]; m != nil && m != skip && m.usable() {
				cands = append(cands, m)
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	switch p.reads.Route {
	case replica.Latency, replica.Zone:
		if p.reads.Route == replica.Zone && p.reads.Zone != "" {
			var zbuf [8]*Member
			in := zbuf[:0]
			for _, m := range cands {
				if z := m.zone.Load(); z != nil && *z == p.reads.Zone {
					in = append(in, m)
				}
			}
			if len(in) > 0 {
				cands = in
			}
		}
		best := cands[0].rtt.Load()
		for _, m := range cands[1:] {
			best = min(best, m.rtt.Load())
		}
		limit := near(best)
		var pick *Member
		n := 0
		for _, m := range cands {
			if m.rtt.Load() <= limit {
				if n++; rand.IntN(n) == 0 {
					pick = m
				}
			}
		}
		return pick
	}
	return cands[rand.IntN(len(cands))]
}

// Close closes every member's connection, those that left the pool and
// are still draining too, and waits for their drains; Set and Probe do
// nothing after.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	var ms []*Member
	for _, m := range p.members {
		ms = append(ms, m)
	}
	p.members = map[string]*Member{}
	p.mu.Unlock()
	close(p.stop)
	closeAll(ms)
	p.wg.Wait()
}

func closeAll(ms []*Member) {
	for _, m := range ms {
		if c := m.cl.Swap(nil); c != nil {
			c.Close()
		}
	}
}

// readonlyOptions are opts whose Dialer sends READONLY (after AUTH when
// a password is set) on each new connection, before its handshake: a
// cluster replica serves reads of its primary's slots only to such a
// connection, and answers MOVED otherwise. The Dialer does the TLS.
func readonlyOptions(opts conn.Options) conn.Options {
	o := opts
	o.TLS = nil
	to := opts.DialTimeout
	if to <= 0 {
		to = dial.DefaultDialTimeout
	}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial.Transport(ctx, dial.Config{
			Network: network, Addr: addr, TLS: opts.TLS, Dialer: opts.Dialer, Protocol: 3, Timeout: to,
		})
		if err != nil {
			return nil, err
		}
		if err := sendReadonly(ctx, nc, opts.Username, opts.Password, to); err != nil {
			nc.Close()
			return nil, err
		}
		return nc, nil
	}
	return o
}

// sendReadonly writes [AUTH] READONLY and reads their replies.
func sendReadonly(ctx context.Context, nc net.Conn, user, password string, to time.Duration) error {
	dl := time.Now().Add(to)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	nc.SetDeadline(dl)
	defer nc.SetDeadline(time.Time{})
	var b []byte
	n := 1
	if password != "" {
		n++
		if user == "" {
			b = resp.AppendCommand(b, "AUTH", password)
		} else {
			b = resp.AppendCommand(b, "AUTH", user, password)
		}
	}
	b = resp.AppendCommand(b, "READONLY")
	if _, err := nc.Write(b); err != nil {
		return err
	}
	rd := resp.NewReader(nc)
	for range n {
		v, err := rd.Next()
		if err != nil {
			return err
		}
		if err := v.Err(); err != nil {
			return err
		}
	}
	return nil
}
