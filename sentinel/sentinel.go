package sentinel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
)

// Options configure a MasterSet: which master set, which sentinels and
// how to reach them, and the data nodes' own connection options.
type Options struct {
	// MasterName is the master set's name (sentinel monitor <name> …).
	MasterName string
	// Sentinels are the sentinels' addresses, host:port, asked in this
	// order; the list grows with the sentinels they report (SENTINEL
	// SENTINELS), and the one that last answered is asked first.
	Sentinels []string
	// SentinelUsername and SentinelPassword authenticate to the
	// sentinels (their requirepass or ACL), apart from the data nodes'
	// Username and Password. Neither is ever printed.
	SentinelUsername, SentinelPassword string
	// SentinelTLS, when set, wraps the connections to the sentinels in
	// TLS (the data nodes' is Options.TLS).
	SentinelTLS *tls.Config
	// SentinelTimeout bounds one question to one sentinel, dial
	// included, and the sentinels' health check. Default 2 s.
	SentinelTimeout time.Duration
	// FailoverPause is how long, after a sentinel announced the replica
	// it promotes, the old primary is refused (ErrFailover) when neither
	// the promotion nor the new primary's announcement (+switch-master)
	// nor an abort is seen. Default 10 s.
	FailoverPause time.Duration
	// Reads, when on (a Route other than replica.Primary), has a
	// Client send its read-only commands to the master set's replicas,
	// as the sentinels list them (SENTINEL REPLICAS): see package
	// replica for what a reader gives up. Off by default. A MasterSet
	// alone does not use it.
	Reads replica.Options
	// Options are the data nodes' connection options: credentials, DB,
	// TLS, protocol, timeouts, hooks, the Client's backoff. Network and
	// Addr are the MasterSet's (the primary is dialed over TCP at the
	// address the sentinels give); Dialer, when set, is the transport
	// the MasterSet dials through.
	conn.Options
}

const (
	defaultSentinelTimeout = 2 * time.Second
	defaultFailoverPause   = 10 * time.Second
	// resolveTries is how many resolutions a dial makes when the node
	// named as primary answers another role.
	resolveTries = 3
)

func (o Options) withDefaults() (Options, error) {
	if o.MasterName == "" {
		return o, fmt.Errorf("%w: no MasterName", ErrBadOptions)
	}
	if len(o.Sentinels) == 0 {
		return o, fmt.Errorf("%w: no Sentinels", ErrBadOptions)
	}
	for _, s := range o.Sentinels {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return o, fmt.Errorf("%w: sentinel address %q: %v", ErrBadOptions, s, err)
		}
	}
	if o.SentinelTimeout <= 0 {
		o.SentinelTimeout = defaultSentinelTimeout
	}
	if o.FailoverPause <= 0 {
		o.FailoverPause = defaultFailoverPause
	}
	if o.Reads.Route > replica.Zone {
		return o, fmt.Errorf("%w: Reads.Route %v", ErrBadOptions, o.Reads.Route)
	}
	o.Sentinels = slices.Clone(o.Sentinels)
	return o, nil
}

// String describes the options with both passwords redacted.
func (o Options) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sentinel master=%s sentinels=%s", o.MasterName, strings.Join(o.Sentinels, ","))
	if o.SentinelUsername != "" {
		fmt.Fprintf(&b, " sentinel_user=%s", o.SentinelUsername)
	}
	if o.SentinelPassword != "" {
		b.WriteString(" sentinel_password=REDACTED")
	}
	if o.Reads.On() {
		fmt.Fprintf(&b, " reads=%s", o.Reads.Route)
		if o.Reads.Zone != "" {
			fmt.Fprintf(&b, " zone=%s", o.Reads.Zone)
		}
	}
	data := o.Options
	data.Addr = "primary"
	b.WriteString(" data=")
	b.WriteString(data.String())
	return b.String()
}

// GoString is String, so that %#v prints no password either.
func (o Options) GoString() string { return o.String() }

// MasterSet follows the primary of a master set through its sentinels.
// Its Options dial the current primary, checking its role on every
// connection; it watches every sentinel for failovers and ends the
// connections to a primary that is being replaced. Close stops it. It
// is safe for concurrent use.
type MasterSet struct {
	opts Options

	mu        sync.Mutex
	sentinels []string              // known sentinels, the one to ask first first
	queries   map[string]*conn.Conn // open question connections, by sentinel
	primary   string                // the last primary told or announced
	fence     string                // a primary being replaced: not dialed
	fenceEnd  time.Time             // when fence lapses unless confirmed
	candidate string                // the replica being promoted in fence's place
	fenceBy   string                // the sentinel that announced candidate
	tries     []string              // sentinels trying to fail fence over, no replica selected yet
	epoch     int64                 // the newest config-epoch a sentinel told
	gen       uint64                // bumped when connections are ended
	conns     map[net.Conn]tracked  // data connections dialed, by transport
	watching  map[string]bool       // sentinels with a watcher
	closed    bool
	onSwitch  func() // told of a new primary (a Client's replica list)

	kick   chan struct{} // wakes the checker (READONLY, a lost event)
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// tracked is a data connection the MasterSet dialed: the node.
type tracked struct {
	addr string
}

// New asks the sentinels for the primary of opts.MasterName (so that an
// unknown name, wrong sentinel credentials or no reachable sentinel are
// reported at once: a *ResolveError), learns the other sentinels, and
// starts watching every sentinel for failovers. It asks every sentinel
// of opts.Sentinels at once for its configuration epoch first, and takes
// the first sentinel's answer, in order, that is neither older than
// another's (ErrStaleSentinel) nor names a node other than a primary.
func New(ctx context.Context, opts Options) (*MasterSet, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &MasterSet{
		opts:      o,
		sentinels: o.Sentinels,
		queries:   make(map[string]*conn.Conn),
		conns:     make(map[net.Conn]tracked),
		watching:  make(map[string]bool),
		kick:      make(chan struct{}, 1),
	}
	m.life, m.cancel = context.WithCancel(context.Background())
	// Every sentinel's config-epoch first (at once; an unreachable
	// sentinel costs up to SentinelTimeout), so that the first answer
	// taken is not that of a sentinel behind the others.
	var wg sync.WaitGroup
	for _, s := range o.Sentinels {
		wg.Go(func() { m.learnEpoch(ctx, s) })
	}
	wg.Wait()
	addr, answered, err := m.confirm(ctx)
	if err != nil && !answered {
		m.Close()
		return nil, err
	}
	// A sentinel answered but no node it named answers role master (the
	// primary is down, or being failed over): Primary stays empty until
	// one is confirmed or announced.
	m.mu.Lock()
	m.primary = addr
	m.mu.Unlock()
	m.refreshSentinels(ctx)
	m.wg.Add(1)
	go m.checker()
	return m, nil
}

// Primary returns the address of the primary last confirmed (named by a
// sentinel and answering role master) or announced by a sentinel
// (+switch-master); empty while none has been.
func (m *MasterSet) Primary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.primary
}

// Sentinels returns the sentinels known, the one asked first first.
func (m *MasterSet) Sentinels() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sentinels)
}

// Options returns the data nodes' options (Options.Options) set to dial
// the master set's primary: give them to conn.NewClient, pubsub.New,
// cache.New or anything else that takes conn.Options. Their Addr names
// the master set ("sentinel/<name>"), for error messages; their Dialer
// asks the sentinels, checks the node's role and lets the MasterSet end
// the connection at a failover; their TLS is done by that Dialer. They
// also carry a Hook that has the sentinels asked again when a command is
// answered READONLY. The connections they make must be closed before the
// MasterSet, which refuses to dial once closed (ErrClosed).
func (m *MasterSet) Options() conn.Options {
	o := m.opts.Options
	o.Network, o.Addr = "tcp", "sentinel/"+m.opts.MasterName
	o.TLS = nil
	o.Dialer = m.dial
	o.Hooks = append(slices.Clip(o.Hooks), conn.Hook{AfterCommand: m.afterCommand})
	return o
}

// Close stops watching the sentinels, closes the question connections
// and ends every data connection still open that the MasterSet dialed;
// it waits for its goroutines. Dials through its Options fail with
// ErrClosed afterwards.
func (m *MasterSet) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	qs := m.queries
	m.queries = nil
	ended := m.endLocked(func(tracked) bool { return true })
	m.mu.Unlock()
	m.cancel()
	for _, c := range qs {
		c.Close()
	}
	endAll(ended)
	m.wg.Wait()
	return nil
}

// afterCommand is the Hook that notices a READONLY answer: the node taken
// for the primary is a replica now. The checker asks the sentinels.
func (m *MasterSet) afterCommand(_ context.Context, _ conn.CommandInfo, _ resp.Value, _ time.Duration, err error) {
	if err == nil {
		return
	}
	se, ok := err.(*resp.ServerError)
	if !ok || !se.HasCode(resp.CodeReadOnly) {
		return
	}
	m.wake()
}

// wake has the checker look again, without waiting.
func (m *MasterSet) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// checker looks again (check) when woken: a READONLY answer, a gap in
// a sentinel's announcements, a primary a dial found unannounced.
func (m *MasterSet) checker() {
	defer m.wg.Done()
	for {
		select {
		case <-m.life.Done():
			return
		case <-m.kick:
		}
		m.check()
	}
}

// check is one look of the checker: the sentinels are asked, and the
// first node named that answers role master is taken as the primary (a
// switch if it is another); a node the connections go to that now
// answers another role has its connections ended.
func (m *MasterSet) check() {
	ctx, cancel := context.WithTimeout(m.life, 2*m.opts.SentinelTimeout*time.Duration(max(1, len(m.Sentinels()))))
	defer cancel()
	m.mu.Lock()
	gen := m.gen
	m.mu.Unlock()
	if addr, _, err := m.confirm(ctx); err == nil {
		m.confirmed(addr, gen)
	}
	m.mu.Lock()
	var addrs []string
	for _, t := range m.conns {
		if !slices.Contains(addrs, t.addr) {
			addrs = append(addrs, t.addr)
		}
	}
	m.mu.Unlock()
	for _, a := range addrs {
		if role, err := m.roleOf(ctx, a); err == nil && role != "master" {
			m.end(func(t tracked) bool { return t.addr == a })
		}
	}
}

// roleOf dials addr and asks its role.
func (m *MasterSet) roleOf(ctx context.Context, addr string) (string, error) {
	nc, err := m.transport(ctx, addr)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	return probeRole(ctx, nc, m.opts.Username, m.opts.Password)
}

// switchTo records addr as the primary and ends the connections to any
// other node. from, when known, is the primary it replaces, fenced for
// FailoverPause.
func (m *MasterSet) switchTo(addr, from string) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	if addr == m.fence && time.Now().Before(m.fenceEnd) {
		// A sentinel that has not yet switched (from empty), or the
		// late announcement of a switch to a node since replaced: the
		// fence holds.
		m.mu.Unlock()
		return
	}
	m.primary = addr
	if from != "" && from != addr {
		m.fence, m.fenceEnd = from, time.Now().Add(m.opts.FailoverPause)
	}
	if m.fence == addr {
		m.fence = ""
	}
	m.candidate, m.fenceBy, m.tries = "", "", nil
	ended := m.endLocked(func(t tracked) bool { return t.addr != addr })
	notify := m.onSwitch
	m.mu.Unlock()
	endAll(ended)
	if notify != nil {
		notify()
	}
}

// confirmed is switchTo(addr, "") for a node the checker confirmed,
// unless the books changed (an announcement, a connection ended) since
// gen, when the confirmation began: then what it saw may be older than
// what was announced, and the checker looks again.
func (m *MasterSet) confirmed(addr string, gen uint64) {
	m.mu.Lock()
	moved := m.gen != gen
	m.mu.Unlock()
	if moved {
		m.wake()
		return
	}
	m.switchTo(addr, "")
}

// confirm asks the sentinels in order for the primary and checks the
// role of each node named (the one being replaced passed over) until one
// answers role master: that node, and its sentinel is asked first from
// then on. A sentinel that names a node which is not a primary, or
// cannot be reached, is passed over: it may be stale or cut off from the
// others. answered tells whether any sentinel answered at all.
func (m *MasterSet) confirm(ctx context.Context) (addr string, answered bool, err error) {
	var tried []error
	bar := newBar()
	for _, s := range m.Sentinels() {
		a, err := m.askCurrent(ctx, s, &bar)
		if err == nil || errors.Is(err, ErrStaleSentinel) {
			answered = true
		}
		if err == nil {
			if m.fenced(a) {
				err = fmt.Errorf("%w: %s is being replaced", ErrFailover, a)
			} else if role, rerr := m.roleOf(ctx, a); rerr != nil {
				err = fmt.Errorf("sentinel: role check of %s: %w", a, rerr)
			} else if role != "master" {
				err = &RoleError{Addr: a, Role: role}
			} else {
				m.prefer(s)
				return a, true, nil
			}
		}
		tried = append(tried, &SentinelError{Addr: s, Err: err})
		if ctx.Err() != nil {
			break
		}
	}
	m.lower(bar)
	return "", answered, &ResolveError{Master: m.opts.MasterName, Tried: tried}
}

// fenced tells whether addr is the primary being replaced.
func (m *MasterSet) fenced(addr string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return addr == m.fence && time.Now().Before(m.fenceEnd)
}

// end ends the tracked connections that match.
func (m *MasterSet) end(match func(tracked) bool) {
	m.mu.Lock()
	ended := m.endLocked(match)
	m.mu.Unlock()
	endAll(ended)
}

// endLocked takes the matching connections off the books and bumps the
// generation, so that a dial chosen before is not kept; called with mu
// held.
func (m *MasterSet) endLocked(match func(tracked) bool) []net.Conn {
	m.gen++
	var out []net.Conn
	for nc, t := range m.conns {
		if match(t) {
			out = append(out, nc)
			delete(m.conns, nc)
		}
	}
	return out
}

// endAll ends connections the way a lost network would, but at once: the
// socket is shut down in both directions, so the reader sees EOF and the
// commands in flight fail (conn: ErrBroken, never re-sent), and an idle
// connection's next call finds the close before sending (ErrNotSent:
// the Client sends it on its next connection). A transport that is not
// TCP is closed.
func endAll(ncs []net.Conn) {
	for _, nc := range ncs {
		if tc, ok := transportOf(nc).(*net.TCPConn); ok {
			tc.CloseRead()
			tc.CloseWrite()
			continue
		}
		nc.Close()
	}
}

// transportOf is the connection under TLS, if any.
func transportOf(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
}

// target is the node to dial now, the sentinel that named it (empty
// when it is the replica being promoted) and the generation it was
// chosen in.
func (m *MasterSet) target(ctx context.Context) (string, string, uint64, error) {
	addr, by, err := m.resolveBy(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", "", 0, ErrClosed
	}
	if err != nil {
		return "", "", 0, err
	}
	if m.fence != "" && time.Now().After(m.fenceEnd) {
		m.fence, m.candidate, m.fenceBy, m.tries = "", "", "", nil
	}
	if addr == m.fence {
		// The sentinel asked has not yet switched: the replica being
		// promoted, once it says it is a primary, or nothing.
		if m.candidate == "" {
			return "", "", 0, fmt.Errorf("%w: %s is being replaced", ErrFailover, addr)
		}
		addr, by = m.candidate, ""
	}
	// Not recorded as the primary here: only once it answers role
	// master (dial), since the sentinel may be stale.
	return addr, by, m.gen, nil
}

// dial is the data nodes' Dialer: it resolves the primary, dials it
// (TLS included), checks that it answers role master, and tracks the
// connection; only then is the node recorded as the primary and its
// sentinel asked first. A node that answers another role, or cannot be
// reached, is refused (nothing was sent to it), the sentinel that named
// it goes to the back of the list, and the sentinels are asked again,
// up to resolveTries times.
func (m *MasterSet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var last error
	for try := 0; try < resolveTries; try++ {
		if try > 0 {
			t := time.NewTimer(50 * time.Millisecond << try)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, errors.Join(ctx.Err(), last)
			case <-t.C:
			}
		}
		addr, by, gen, err := m.target(ctx)
		if err != nil {
			return nil, err
		}
		nc, err := m.transport(ctx, addr)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// A stale sentinel may name a node that is gone: ask the
			// others first.
			last = err
			if by != "" {
				m.distrust(by)
			}
			continue
		}
		role, err := probeRole(ctx, nc, m.opts.Username, m.opts.Password)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("sentinel: role check of %s: %w", addr, err)
		}
		if role != "master" {
			nc.Close()
			last = &RoleError{Addr: addr, Role: role}
			if by != "" {
				m.distrust(by)
			}
			m.wake()
			continue
		}
		m.mu.Lock()
		switch {
		case m.closed:
			err = ErrClosed
		case m.gen != gen:
			// A failover began while this dial was on its way.
			err = fmt.Errorf("%w: %s was being replaced as it was dialed", ErrFailover, addr)
		default:
			m.prune()
			m.conns[nc] = tracked{addr: addr}
			if m.primary != addr {
				// A switch no sentinel announced to this MasterSet:
				// the checker confirms it and ends the connections
				// to the node it replaced.
				m.primary = addr
				defer m.wake()
			}
		}
		m.mu.Unlock()
		if err == nil && by != "" {
			m.prefer(by)
		}
		if err != nil {
			nc.Close()
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			last = err
			continue
		}
		return nc, nil
	}
	return nil, last
}

// prune forgets tracked connections already closed by their owners; it
// is called with mu held, at each dial, so the books stay the size of
// what is open.
func (m *MasterSet) prune() {
	for nc := range m.conns {
		raw, ok := transportOf(nc).(syscallConn)
		if !ok {
			continue
		}
		rc, err := raw.SyscallConn()
		if err != nil || rc.Control(func(uintptr) {}) != nil {
			delete(m.conns, nc)
		}
	}
}

type syscallConn interface {
	SyscallConn() (syscall.RawConn, error)
}

// transport dials a data node, with TLS when the data options say so.
func (m *MasterSet) transport(ctx context.Context, addr string) (net.Conn, error) {
	o := m.opts.Options
	to := o.DialTimeout
	if to <= 0 {
		to = dial.DefaultDialTimeout
	}
	return dial.Transport(ctx, dial.Config{
		Network: "tcp", Addr: addr, TLS: o.TLS, Dialer: o.Dialer, Protocol: 3, Timeout: to,
	})
}

// sentinelOptions are the options of a connection to sentinel addr.
func (m *MasterSet) sentinelOptions(addr string) conn.Options {
	o := m.opts
	return conn.Options{
		Addr: addr, Username: o.SentinelUsername, Password: o.SentinelPassword,
		TLS: o.SentinelTLS, DialTimeout: o.SentinelTimeout, ReadTimeout: o.SentinelTimeout,
		WriteTimeout: o.SentinelTimeout, Protocol: o.Protocol, Dialer: o.Dialer,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second,
	}
}

// resolveBy asks the sentinels in order for the primary's address, and
// returns the first answer and the sentinel that gave it. The answer is
// not yet believed: the caller checks the node's role, and only then
// has that sentinel asked first (prefer).
func (m *MasterSet) resolveBy(ctx context.Context) (string, string, error) {
	var tried []error
	bar := newBar()
	for _, s := range m.Sentinels() {
		addr, err := m.askCurrent(ctx, s, &bar)
		if err == nil {
			return addr, s, nil
		}
		tried = append(tried, &SentinelError{Addr: s, Err: err})
		if ctx.Err() != nil {
			break
		}
	}
	m.lower(bar)
	return "", "", &ResolveError{Master: m.opts.MasterName, Tried: tried}
}

// distrust moves sentinel s, which named a node that is not a primary,
// to the back of the list, so that the next resolution asks the others
// first.
func (m *MasterSet) distrust(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.sentinels, s); i >= 0 && i < len(m.sentinels)-1 {
		m.sentinels = append(slices.Delete(m.sentinels, i, i+1), s)
	}
}

// prefer moves sentinel s to the front of the list.
func (m *MasterSet) prefer(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.sentinels, s); i > 0 {
		m.sentinels = slices.Insert(slices.Delete(m.sentinels, i, i+1), 0, s)
	}
}

// query returns an open question connection to sentinel s.
func (m *MasterSet) query(ctx context.Context, s string) (*conn.Conn, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	c := m.queries[s]
	m.mu.Unlock()
	if c != nil && c.Err() == nil {
		return c, nil
	}
	c, err := conn.Dial(ctx, m.sentinelOptions(s))
	if err != nil {
		return nil, authErr(err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return nil, ErrClosed
	}
	if old := m.queries[s]; old != nil && old != c {
		defer old.Close()
	}
	m.queries[s] = c
	m.mu.Unlock()
	return c, nil
}

// stale is one pass's record of the answers passed over as stale: the
// newest config-epoch among them, -1 for none.
type staleBar struct{ newest int64 }

func newBar() staleBar { return staleBar{newest: -1} }

// askCurrent is ask, the answer passed over (ErrStaleSentinel) when its
// config-epoch is older than the newest one a sentinel told; a newer one
// raises the bar.
func (m *MasterSet) askCurrent(ctx context.Context, s string, bar *staleBar) (string, error) {
	addr, epoch, err := m.ask(ctx, s)
	if err != nil || epoch < 0 {
		return addr, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch < m.epoch {
		bar.newest = max(bar.newest, epoch)
		return "", fmt.Errorf("%w: config-epoch %d, another sentinel told %d (it names %s)", ErrStaleSentinel, epoch, m.epoch, addr)
	}
	m.epoch = epoch
	return addr, nil
}

// lower sets the bar to the newest epoch of a pass in which no answer
// was taken and some were stale: the sentinel that told the higher epoch
// may be gone, or the sentinels rebuilt, and no master set is followed
// that no sentinel can name. The next pass takes those answers.
func (m *MasterSet) lower(bar staleBar) {
	if bar.newest < 0 {
		return
	}
	m.mu.Lock()
	m.epoch = min(m.epoch, bar.newest)
	m.mu.Unlock()
}

// ask asks sentinel s for the primary's address and the configuration
// epoch of the master set (SENTINEL MASTER's config-epoch, asked first
// so that a switch between the two questions makes the answer look
// older, not newer; -1 when that sentinel does not tell it, an ACL
// forbidding SENTINEL MASTER for one).
func (m *MasterSet) ask(ctx context.Context, s string) (string, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.SentinelTimeout)
	defer cancel()
	c, err := m.query(ctx, s)
	if err != nil {
		return "", -1, err
	}
	epoch := int64(-1)
	if v, err := c.Do(ctx, "SENTINEL", "MASTER", m.opts.MasterName); err == nil {
		if n, err := strconv.ParseInt(field(v, "config-epoch"), 10, 64); err == nil && n >= 0 {
			epoch = n
		}
	} else if c.Err() != nil || ctx.Err() != nil {
		return "", -1, authErr(err)
	}
	addr, err := m.askAddr(ctx, c)
	return addr, epoch, err
}

// askAddr asks a sentinel (c) for the primary's address.
func (m *MasterSet) askAddr(ctx context.Context, c *conn.Conn) (string, error) {
	v, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", m.opts.MasterName)
	if err != nil {
		return "", authErr(err)
	}
	if v.IsNull() || v.Type == resp.Array && len(v.Elems) == 0 {
		return "", ErrUnknownMaster
	}
	if (v.Type != resp.Array && v.Type != resp.Set) || len(v.Elems) != 2 {
		return "", fmt.Errorf("sentinel: unexpected GET-MASTER-ADDR-BY-NAME reply %v", v)
	}
	host, port := v.Elems[0].Text(), v.Elems[1].Text()
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
		return "", fmt.Errorf("sentinel: GET-MASTER-ADDR-BY-NAME gave an invalid address %q %q", host, port)
	}
	return net.JoinHostPort(host, port), nil
}

// authErr marks a server's refusal of the credentials as ErrSentinelAuth.
func authErr(err error) error {
	var se *resp.ServerError
	if errors.As(err, &se) && (se.HasCode(resp.CodeWrongPass) || se.HasCode(resp.CodeNoAuth) ||
		se.HasCode("NOPERM") && strings.Contains(se.Msg, "AUTH")) {
		return fmt.Errorf("%w: %w", ErrSentinelAuth, err)
	}
	return err
}

// refreshSentinels adds the sentinels the first sentinel knows of
// (SENTINEL SENTINELS) to the list, and starts a watcher for every
// sentinel known that has none.
func (m *MasterSet) refreshSentinels(ctx context.Context) {
	list := m.Sentinels()
	if c, err := m.query(ctx, list[0]); err == nil {
		qctx, cancel := context.WithTimeout(ctx, m.opts.SentinelTimeout)
		v, err := c.Do(qctx, "SENTINEL", "SENTINELS", m.opts.MasterName)
		cancel()
		if err == nil {
			for _, e := range v.Elems {
				ip, port := field(e, "ip"), field(e, "port")
				if ip == "" || port == "" {
					continue
				}
				if a := net.JoinHostPort(ip, port); !slices.Contains(list, a) {
					list = append(list, a)
				}
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for _, a := range list {
		if !slices.Contains(m.sentinels, a) {
			m.sentinels = append(m.sentinels, a)
		}
		if !m.watching[a] {
			m.watching[a] = true
			m.wg.Add(1)
			go m.watch(a)
		}
	}
}

// field reads key from a map reply, or a RESP2 flat array of pairs.
func field(v resp.Value, key string) string {
	if x, ok := v.Lookup(key); ok {
		return x.Text()
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if v.Elems[i].Equal(key) {
			return v.Elems[i+1].Text()
		}
	}
	return ""
}

// The sentinels' announcements a MasterSet follows.
const (
	evSwitch   = "+switch-master"
	evTry      = "+try-failover"
	evSelected = "+selected-slave"
	evPromoted = "+promoted-slave"
	evAbortNG  = "-failover-abort-no-good-slave"
	evAbortPr  = "-failover-abort-slave-timeout"
	evAbortNE  = "-failover-abort-not-elected"
)

// watch subscribes to sentinel s's announcements and follows them until
// Close; a gap (the subscription was lost and restored) has the checker
// ask the sentinels again, since an announcement may have been missed.
func (m *MasterSet) watch(s string) {
	defer m.wg.Done()
	backoff := 50 * time.Millisecond
	for m.life.Err() == nil {
		err := m.follow(s)
		if m.life.Err() != nil {
			return
		}
		if err != nil {
			t := time.NewTimer(backoff)
			select {
			case <-m.life.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
		}
	}
}

// follow is one subscription to sentinel s, until it fails or Close.
func (m *MasterSet) follow(s string) error {
	o := pubsub.Options{Options: m.sentinelOptions(s), PingInterval: m.opts.SentinelTimeout}
	ctx, cancel := context.WithTimeout(m.life, m.opts.SentinelTimeout)
	sub, err := pubsub.New(ctx, o)
	if err == nil {
		err = sub.Subscribe(ctx, evSwitch, evTry, evSelected, evPromoted, evAbortNG, evAbortPr, evAbortNE)
	}
	cancel()
	if err != nil {
		if sub != nil {
			sub.Close()
		}
		return err
	}
	defer sub.Close()
	m.learnEpoch(m.life, s)
	m.wake() // an announcement may have come before the subscription
	for msg, err := range sub.Messages(m.life) {
		if errors.Is(err, pubsub.ErrGap) {
			m.wake()
			continue
		}
		if err != nil {
			return err
		}
		m.announced(s, msg.Channel, string(msg.Payload))
	}
	return nil
}

// learnEpoch raises the bar to sentinel s's config-epoch, so that an
// older sentinel asked first (New takes the first answer it can confirm)
// is passed over from the checker's next look on.
func (m *MasterSet) learnEpoch(ctx context.Context, s string) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.SentinelTimeout)
	defer cancel()
	if _, epoch, err := m.ask(ctx, s); err == nil {
		m.mu.Lock()
		m.epoch = max(m.epoch, epoch)
		m.mu.Unlock()
	}
}

// announced applies one announcement of sentinel s.
//
//	+switch-master <name> <old ip> <old port> <new ip> <new port>
//	+try-failover master <name> <ip> <port>
//	+selected-slave slave <ip:port> <ip> <port> @ <name> <master ip> <master port>
//	+promoted-slave (the same)
//	-failover-abort-… master <name> <ip> <port>
func (m *MasterSet) announced(s, channel, payload string) {
	f := strings.Fields(payload)
	switch channel {
	case evSwitch:
		if len(f) == 5 && f[0] == m.opts.MasterName {
			m.switchTo(net.JoinHostPort(f[3], f[4]), net.JoinHostPort(f[1], f[2]))
		}
	case evTry:
		// A sentinel begins to fail the primary over: the replica is
		// promoted two of its ticks later at the soonest (the leader's
		// election, then +selected-slave, then REPLICAOF NO ONE on the
		// next tick). Fencing the old primary now rather than at
		// +selected-slave leaves those ticks to this MasterSet and to the
		// replica's copy of the old primary's last writes, so that a
		// starved client does not write to it after the promotion.
		if len(f) != 4 || f[0] != "master" || f[1] != m.opts.MasterName {
			return
		}
		old := net.JoinHostPort(f[2], f[3])
		m.mu.Lock()
		if m.closed || m.primary != old && m.primary != "" || m.fence == old && m.candidate != "" {
			m.mu.Unlock()
			return
		}
		var ended []net.Conn
		if m.fence != old {
			m.fence, m.fenceEnd, m.candidate, m.fenceBy, m.tries = old, time.Now().Add(m.opts.FailoverPause), "", "", nil
			ended = m.endLocked(func(t tracked) bool { return t.addr == old })
		}
		if !slices.Contains(m.tries, s) {
			m.tries = append(m.tries, s)
		}
		m.mu.Unlock()
		endAll(ended)
	case evSelected, evPromoted:
		if len(f) != 8 || f[0] != "slave" || f[4] != "@" || f[5] != m.opts.MasterName {
			return
		}
		replica, old := net.JoinHostPort(f[2], f[3]), net.JoinHostPort(f[6], f[7])
		m.mu.Lock()
		if m.closed || m.primary != old && m.fence != old && m.primary != "" {
			m.mu.Unlock()
			return
		}
		// From now on nothing is written to the old primary: the
		// replica is about to stop copying it. Its connections end, and
		// dials go to the replica once it says it is a primary.
		m.fence, m.fenceEnd, m.candidate, m.fenceBy, m.tries = old, time.Now().Add(m.opts.FailoverPause), replica, s, nil
		ended := m.endLocked(func(t tracked) bool { return t.addr == old })
		m.mu.Unlock()
		endAll(ended)
	case evAbortNG, evAbortPr, evAbortNE:
		if len(f) == 4 && f[0] == "master" && f[1] == m.opts.MasterName {
			// Only the sentinel leading the promotion can abort it:
			// another one's abort (not elected: it lost the vote) is
			// not, nor is a late abort once the switch is announced.
			// An attempt with no replica selected yet is lifted when
			// every sentinel that tried it has aborted.
			m.mu.Lock()
			addr := net.JoinHostPort(f[2], f[3])
			switch {
			case m.fence != addr:
			case m.candidate != "" && m.fenceBy == s:
				m.fence, m.candidate, m.fenceBy, m.tries = "", "", "", nil
			case m.candidate == "" && slices.Contains(m.tries, s):
				m.tries = slices.DeleteFunc(m.tries, func(x string) bool { return x == s })
				if len(m.tries) == 0 {
					m.fence, m.fenceBy = "", ""
				}
			}
			m.mu.Unlock()
		}
	}
}

// Replicas asks the sentinels, in order, for the master set's replicas
// that can serve reads (SENTINEL REPLICAS): those neither down (s_down,
// o_down), disconnected, nor cut off from their primary
// (master-link-status other than ok). The first sentinel that answers
// is believed.
func (m *MasterSet) Replicas(ctx context.Context) ([]string, error) {
	var tried []error
	for _, s := range m.Sentinels() {
		addrs, err := m.askReplicas(ctx, s)
		if err == nil {
			return addrs, nil
		}
		tried = append(tried, &SentinelError{Addr: s, Err: err})
		if ctx.Err() != nil {
			break
		}
	}
	return nil, &ResolveError{Master: m.opts.MasterName, Tried: tried}
}

// askReplicas asks sentinel s for the replicas.
func (m *MasterSet) askReplicas(ctx context.Context, s string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.SentinelTimeout)
	defer cancel()
	c, err := m.query(ctx, s)
	if err != nil {
		return nil, err
	}
	v, err := c.Do(ctx, "SENTINEL", "REPLICAS", m.opts.MasterName)
	if err != nil {
		var se *resp.ServerError
		if errors.As(err, &se) && strings.Contains(se.Msg, "No such master") {
			return nil, ErrUnknownMaster
		}
		return nil, authErr(err)
	}
	var out []string
	for _, e := range v.Elems {
		ip, port := field(e, "ip"), field(e, "port")
		flags := field(e, "flags")
		if ip == "" || port == "" || field(e, "master-link-status") != "ok" ||
			strings.Contains(flags, "s_down") || strings.Contains(flags, "o_down") || strings.Contains(flags, "disconnected") {
			continue
		}
		out = append(out, net.JoinHostPort(ip, port))
	}
	return out, nil
}
