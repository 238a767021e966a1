package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/readers"
	"github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Client routes commands over a Valkey or Redis Cluster: each command to
// the primary that serves its keys' slot, over one pipelining conn.Client
// per primary. It satisfies conn.Sender, so pipeline.Batch, dispatch's
// executors and emq run over it unchanged. It is safe for concurrent use.
type Client struct {
	opts  Options
	hooks wire.Hooks // Options.Node's, nil without any: run by Send
	topo  atomic.Pointer[topology]

	mu     sync.Mutex
	nodes  map[string]*node // by address
	closed bool

	srcMu sync.RWMutex
	srcs  map[string]string // script sources by SHA (RegisterScript)

	refreshMu   sync.Mutex
	refreshing  chan struct{} // closed when the refresh in flight ends
	lastRefresh time.Time

	stats counters
	rr    atomic.Uint32 // round robin for keyless commands

	reads  *readers.Pool    // the replicas, nil: replica reads off
	rnodes map[string]*node // the replicas' nodes, by address (under mu)

	grace  time.Duration // how long a node that left the topology waits for its calls
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ conn.Sender = (*Client)(nil)

// counters back Stats.
type counters struct {
	moved, ask, tryAgain, clusterDown, noScript, refreshes atomic.Uint64
}

// Stats counts what the Client did beyond sending commands.
type Stats struct {
	Moved       uint64 // commands sent again after MOVED
	Ask         uint64 // commands sent again with ASKING after ASK
	TryAgain    uint64 // commands sent again after TRYAGAIN
	ClusterDown uint64 // commands sent again after CLUSTERDOWN
	NoScript    uint64 // commands sent again after loading their script on their node
	Refreshes   uint64 // topology reads
	ScriptLoads uint64 // SCRIPT LOADs sent, every node summed
}

// Stats returns the counters.
func (cl *Client) Stats() Stats {
	s := Stats{
		Moved: cl.stats.moved.Load(), Ask: cl.stats.ask.Load(), TryAgain: cl.stats.tryAgain.Load(),
		ClusterDown: cl.stats.clusterDown.Load(), NoScript: cl.stats.noScript.Load(),
		Refreshes: cl.stats.refreshes.Load(),
	}
	cl.mu.Lock()
	for _, n := range cl.nodes {
		s.ScriptLoads += n.loadsRun.Load()
	}
	cl.mu.Unlock()
	return s
}

// NewClient reads the topology from the first seed
// that answers, and returns a Client ready to route. Connections to the
// primaries are dialed on first use.
func NewClient(ctx context.Context, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	if len(opts.Seeds) == 0 {
		return nil, errors.New("cluster: no seed address")
	}
	cl := &Client{opts: opts, hooks: wire.HooksOf(opts.Node), nodes: map[string]*node{}, srcs: map[string]string{}, grace: retireGrace}
	cl.life, cl.cancel = context.WithCancel(context.Background())
	var errs []error
	for _, seed := range opts.Seeds {
		n := cl.node(seed)
		c, err := n.client(ctx, opts.Node)
		if err == nil {
			var t *topology
			if t, err = readTopology(ctx, c, seed); err == nil {
				cl.topo.Store(t)
				cl.stats.refreshes.Add(1)
				cl.lastRefresh = time.Now()
				break
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", seed, err))
	}
	if cl.topo.Load() == nil {
		cl.Close()
		return nil, fmt.Errorf("cluster: no seed gave the topology: %w", errors.Join(errs...))
	}
	if opts.RefreshInterval > 0 {
		cl.wg.Add(1)
		go cl.refreshLoop()
	}
	if opts.Reads.On() {
		cl.reads = readers.New(opts.Node, true, opts.Reads)
		cl.rnodes = map[string]*node{}
		cl.reads.Set(cl.topo.Load().allReplicas())
		cl.reads.Probe(ctx, cl.probeTimeout())
		cl.wg.Add(1)
		go cl.probeLoop()
	}
	return cl, nil
}

// node returns the node at addr, creating it.
func (cl *Client) node(addr string) *node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n := cl.nodes[addr]
	if n == nil {
		n = &node{addr: addr, gate: new(drain.Gate)}
		if cl.closed {
			n.closed = true
		} else {
			cl.nodes[addr] = n
		}
	}
	return n
}

// RegisterScript records a script's source, so that a node answering
// NOSCRIPT for it gets it loaded (once, however many commands met the
// NOSCRIPT) and the command is sent again to that node. dispatch's
// scripted executor registers every script it runs.
func (cl *Client) RegisterScript(sha, src string) {
	cl.srcMu.Lock()
	cl.srcs[sha] = src
	cl.srcMu.Unlock()
}

// sendHooked is Send with the hooks: they see the submission once,
// whichever nodes take it and however often it is redirected.
func (cl *Client) sendHooked(ctx context.Context, w wire.Cmds, h wire.Handler) error {
	w, known, err := wire.Known(w)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer wire.Release(known)
	o, err := cl.hooks.Begin(ctx, w, h)
	if err != nil {
		return err
	}
	if err := cl.send(ctx, w, o); err != nil {
		cl.hooks.Fail(o, err)
		return err
	}
	return nil
}

// source returns a registered script's source.
func (cl *Client) source(sha []byte) (string, bool) {
	cl.srcMu.RLock()
	src, ok := cl.srcs[string(sha)]
	cl.srcMu.RUnlock()
	return src, ok
}

// Do sends an ad-hoc command (arguments as conn.Conn.Do takes them) to the node of its keys' slot and
// waits for its reply (see conn.Conn.Do).
func (cl *Client) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return wire.Do(ctx, cl, args...)
}

// DoFunc sends one command to the node of its keys' slot and waits for
// its reply (see conn.Conn.DoFunc).
func (cl *Client) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, cl, cmd, fn)
}

// DoInt sends a command whose reply is an integer.
func (cl *Client) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, cl, cmd)
}

// Refresh reads the topology again now (or waits for the read in
// flight, when one is).
func (cl *Client) Refresh(ctx context.Context) error { return cl.refresh(ctx, true) }

// minRefresh is the least time between the end of one topology read and
// the start of the next one asked for by calls (a MOVED, a slot no
// primary serves, a connection fault): while a slot has no owner, every
// call on it would otherwise read the topology again.
const minRefresh = 100 * time.Millisecond

// refresh reads the topology from a known node, once however many ask at
// the same time: a caller that finds a read in flight waits for it. Unless
// forced, a read is not started within minRefresh of the last one's end:
// the topology is as fresh as it gets, and refresh returns nil at once.
func (cl *Client) refresh(ctx context.Context, force bool) error {
	cl.refreshMu.Lock()
	if ch := cl.refreshing; ch != nil {
		cl.refreshMu.Unlock()
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if !force && time.Since(cl.lastRefresh) < minRefresh {
		cl.refreshMu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	cl.refreshing = ch
	cl.refreshMu.Unlock()
	err := cl.readAny(ctx)
	cl.refreshMu.Lock()
	cl.refreshing, cl.lastRefresh = nil, time.Now()
	cl.refreshMu.Unlock()
	close(ch)
	return err
}

// readAny reads the topology from the known primaries and seeds, in
// random order, until one answers; then closes the nodes it no longer
// lists.
func (cl *Client) readAny(ctx context.Context) error {
	var addrs []string
	if t := cl.topo.Load(); t != nil {
		addrs = append(addrs, t.addrs...)
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	addrs = append(addrs, cl.opts.Seeds...)
	var errs []error
	for _, a := range addrs {
		err := cl.readFrom(ctx, a)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("cluster: no node gave the topology: %w", errors.Join(errs...))
}

// readFrom reads the topology from the node at addr and makes it the
// Client's.
func (cl *Client) readFrom(ctx context.Context, addr string) error {
	n := cl.enter(cl.node(addr))
	defer n.gate.Leave()
	c, err := n.client(ctx, cl.opts.Node)
	if err != nil {
		return err
	}
	t, err := readTopology(ctx, c, addr)
	if err != nil {
		return err
	}
	cl.topo.Store(t)
	cl.stats.refreshes.Add(1)
	cl.retire(t)
	if cl.reads != nil {
		cl.reads.Set(t.allReplicas())
	}
	return nil
}

// retire takes the nodes that are neither primaries in t nor seeds off
// the books: they get no new call from now on (a call that looked one up
// just before goes to the node now at its address: enter), and each is
// closed once the calls written on it have ended with their replies (a
// demoted primary answers MOVED, which the redirects
// follow), or after retireGrace, or at Close, whichever comes first.
func (cl *Client) retire(t *topology) {
	keep := map[string]bool{}
	for _, a := range t.addrs {
		keep[a] = true
	}
	for _, a := range cl.opts.Seeds {
		keep[a] = true
	}
	var old []*node
	cl.mu.Lock()
	for a, n := range cl.nodes {
		if !keep[a] {
			delete(cl.nodes, a)
			old = append(old, n)
		}
	}
	closed := cl.closed
	if !closed {
		cl.wg.Add(len(old))
	}
	cl.mu.Unlock()
	for _, n := range old {
		n.gate.Retire()
		if closed {
			n.close()
			continue
		}
		go cl.drain(n)
	}
}

// retireGrace bounds how long a retired node waits for its calls (a
// variable for the tests).
var retireGrace = drain.Grace

// drain closes retired node n once its calls have ended, after the
// grace, or at Close.
func (cl *Client) drain(n *node) {
	defer cl.wg.Done()
	n.gate.Wait(cl.grace, cl.life.Done())
	n.close()
}

// enter counts a call in on n, or, when n was retired since it was
// looked up, on the node now at its address (which the new topology's
// redirects lead away from); the caller leaves the returned node's gate
// once the call has ended.
func (cl *Client) enter(n *node) *node {
	for !n.gate.Enter() {
		n = cl.node(n.addr)
	}
	return n
}

// refreshSoon starts a refresh in the background unless one is running
// or the last one ended within minRefresh.
func (cl *Client) refreshSoon() {
	cl.refreshMu.Lock()
	busy := cl.refreshing != nil || time.Since(cl.lastRefresh) < minRefresh
	cl.refreshMu.Unlock()
	cl.mu.Lock()
	closed := cl.closed
	if !busy && !closed {
		cl.wg.Add(1)
	}
	cl.mu.Unlock()
	if busy || closed {
		return
	}
	go func() {
		defer cl.wg.Done()
		ctx, cancel := context.WithTimeout(cl.life, 10*time.Second)
		defer cancel()
		cl.refresh(ctx, false)
	}()
}

// refreshLoop reads the topology every RefreshInterval ±20%.
func (cl *Client) refreshLoop() {
	defer cl.wg.Done()
	for {
		d := cl.opts.RefreshInterval
		d += time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
		select {
		case <-cl.life.Done():
			return
		case <-time.After(d):
		}
		ctx, cancel := context.WithTimeout(cl.life, 10*time.Second)
		cl.refresh(ctx, true)
		cancel()
	}
}

// Close closes every connection (those of nodes that left the topology
// and are still draining too) and stops the refreshes. Calls still
// waiting end with an error matching conn.ErrClosed.
func (cl *Client) Close() error {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil
	}
	cl.closed = true
	nodes := cl.nodes
	cl.nodes = map[string]*node{}
	cl.mu.Unlock()
	cl.cancel()
	var errs []error
	for _, n := range nodes {
		errs = append(errs, n.close())
	}
	cl.wg.Wait()
	if cl.reads != nil {
		cl.reads.Close()
	}
	return errors.Join(errs...)
}

// Done is closed when the Client is closed.
func (cl *Client) Done() <-chan struct{} { return cl.life.Done() }

// Err returns conn.ErrClosed once the Client is closed, else nil.
func (cl *Client) Err() error {
	if cl.life.Err() != nil {
		return conn.ErrClosed
	}
	return nil
}

// Primaries returns the addresses of the primaries that serve slots, as
// the Client last read the topology.
func (cl *Client) Primaries() []string {
	return append([]string(nil), cl.topo.Load().addrs...)
}

// Node returns the connection to the primary at addr (one of
// Primaries), for commands about that node itself: INFO, CONFIG, SCAN,
// SCRIPT. Commands sent on it are not routed and not redirected. Once
// the node leaves the topology it is closed, when the Client's own calls
// on it have ended (not the ones made on it through Node).
func (cl *Client) Node(ctx context.Context, addr string) (*conn.Client, error) {
	return cl.node(addr).client(ctx, cl.opts.Node)
}

// Owner returns the address of the primary that serves key's slot, as
// the Client last read the topology, or "" when none does. A sharded
// pub/sub subscription (SSUBSCRIBE) must be made there: give the address
// to pubsub.New. Plain SUBSCRIBE and PSUBSCRIBE work on any node, since a
// cluster relays PUBLISH to every node.
func (cl *Client) Owner(key string) string {
	return cl.topo.Load().addr(slot.Of(key))
}

// Dedicated lends fn a connection of its own to the primary that serves
// key's slot (see conn.Client.Dedicated): for WATCH and a transaction
// sent over several calls on keys of that slot, or a WAIT that counts
// writes made over several calls. Commands on it are not routed: a MOVED
// there is the caller's to handle (the slot moved).
func (cl *Client) Dedicated(ctx context.Context, key string, fn func(c *conn.Conn) error) error {
	n, err := cl.target(ctx, int(slot.Of(key)))
	if err != nil {
		return err
	}
	n = cl.enter(n)
	defer n.gate.Leave()
	c, err := n.client(ctx, cl.opts.Node)
	if err != nil {
		return err
	}
	return c.Dedicated(ctx, fn)
}

// probeTimeout bounds one replica probe.
func (cl *Client) probeTimeout() time.Duration {
	if to := cl.opts.Node.DialTimeout; to > 0 {
		return to
	}
	return 2 * time.Second
}

// probeLoop probes the replicas every Reads.ProbeInterval (the topology
// reads list them).
func (cl *Client) probeLoop() {
	defer cl.wg.Done()
	t := time.NewTicker(cl.opts.Reads.Interval())
	defer t.Stop()
	for {
		select {
		case <-cl.life.Done():
			return
		case <-t.C:
		}
		cl.reads.Probe(cl.life, cl.probeTimeout())
	}
}

// Replicas returns the addresses of the replicas that take reads now
// (in the topology last read, connected, answering the last probe); nil
// when replica reads are off.
func (cl *Client) Replicas() []string {
	if cl.reads == nil {
		return nil
	}
	return cl.reads.Addrs()
}

// replicaNode returns the node of replica member m, whose connection
// the pool made.
func (cl *Client) replicaNode(m *readers.Member, c *conn.Client) *node {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n := cl.rnodes[m.Addr]
	if n == nil || n.cl != c {
		n = &node{addr: m.Addr, cl: c, gate: m.Gate()}
		cl.rnodes[m.Addr] = n
	}
	return n
}
