package cluster

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// sub is one submission in flight over the cluster. Its commands are
// copied (a refused one is sent again after the caller's Send returned),
// and it is recycled when h is done.
//
// Replies reach h in the submission's order. A submission sent whole to
// one primary (direct) hands them over as they come, until the first
// refusal; from there, and for a split submission from the start, they
// are kept in the arena and handed over once every part is in and every
// refused command has its final reply.
type sub struct {
	cl     *Client
	h      wire.Handler
	ctx    context.Context
	n      int
	facts  []cmds.Fact // the commands' facts (Send reads them when they came without); their Keys only during Send
	pfacts []cmds.Fact // scratch: a split part's facts
	info   *cmdInfo    // the command's entry, for a single command

	buf   []byte   // the commands, back to back
	last  lastSlot // the last hashtag hashed
	ends  []int    // command i is buf[ends[i-1]:ends[i]]
	slots []int    // command i's slot (keyless: any primary)
	txs   []txSpan // the transactions, in order
	waits []int    // the WAITs outside transactions, in order

	whole part   // the direct part
	parts []part // the split parts
	idx   []int  // the split parts' command indices, back to back

	mu       sync.Mutex
	direct   bool
	replica  bool // every command read-only, replica reads on: to replicas
	keeping  bool // direct, and a refusal came: keep from here on
	next     int  // replies handed to h so far
	arena    resp.Arena
	vals     []resp.Value
	redo     []redo
	pending  int // parts not done
	err      error
	finished bool
	refs     atomic.Int32 // 1 until the submission ends, +1 while a Send of its bytes runs (see release)
}

// part is the Handler of one primary's share of a submission.
type part struct {
	s    *sub
	node *node
	idx  []int       // command i of the part is command idx[i] of the submission; nil: the same
	sent uint64      // the node's script-load count when the part was sent
	held *drain.Gate // the gate of the connection it is in flight on, left at Done
}

// redo is a command refused by a node: it runs nowhere yet. Once
// resolve starts it may stand for a whole transaction, commands i to end,
// or for a WAIT to send again after the redone writes before it (wait).
type redo struct {
	i     int
	msg   string // the refusal, byte for byte
	node  *node  // the node that refused
	sent  uint64
	end   int  // the last command sent with it (a transaction's EXEC), from resolve on
	wait  bool // a WAIT following redone writes, not a refused command
	asked bool // it was sent with ASKING: node is an ASK target

	// Its bounds, from resolve on (see hop).
	sends   int       // how many times it was sent
	hops    int       // MOVED and ASK followed since the last wait
	waits   int       // TRYAGAIN and CLUSTERDOWN waited
	reloads int       // NOSCRIPT reloads
	since   time.Time // its first TRYAGAIN or CLUSTERDOWN; zero: none yet
}

var subPool = sync.Pool{New: func() any { return new(sub) }}

func getSub(cl *Client, h wire.Handler, ctx context.Context, w wire.Cmds) *sub {
	s := subPool.Get().(*sub)
	s.cl, s.h, s.ctx, s.n = cl, h, ctx, w.Len()
	s.refs.Store(1)
	s.facts = nil
	if w.Facts() != nil {
		s.facts = append(s.pfacts[:0], w.Facts()...)
		s.pfacts = s.facts[len(s.facts):]
	}
	s.buf = append(s.buf[:0], w.Bytes()...)
	s.ends = slices.Grow(s.ends[:0], w.Len())[:w.Len()]
	s.slots = slices.Grow(s.slots[:0], w.Len())[:w.Len()]
	s.whole = part{s: s}
	s.last.slot = -1
	return s
}

// release ends the submission's own hold on its memory: it ended (h is
// done, or never will be called). It is recycled once no Send of its
// bytes runs either: a connection may call a part's Done (its replies
// read) before that part's Send returned, while the write may still read
// the bytes (seen by the race detector: a recycled sub's buffer rewritten
// by the next submission as the write read it). Nothing may touch s after
// its last hold is released.
func (s *sub) release() {
	if s.refs.Add(-1) == 0 {
		s.recycle()
	}
}

// hold keeps s's memory while a Send of its bytes runs; the caller
// releases it once the Send returned and it touched s for the last time.
func (s *sub) hold() { s.refs.Add(1) }

// recycle resets the submission and returns it to the pool.
func (s *sub) recycle() {
	s.arena.Reset()
	clear(s.vals)
	clear(s.parts)
	s.cl, s.h, s.ctx, s.info, s.last.tag = nil, nil, nil, nil, s.last.tag[:0]
	if s.facts != nil {
		clear(s.facts[:cap(s.facts)])
		s.pfacts, s.facts = s.facts[:0], nil
	}
	s.whole = part{}
	s.vals, s.redo, s.parts, s.idx = s.vals[:0], s.redo[:0], s.parts[:0], s.idx[:0]
	s.txs, s.waits = s.txs[:0], s.waits[:0]
	s.direct, s.replica, s.keeping, s.next, s.pending, s.err, s.finished = false, false, false, 0, 0, nil, false
	if cap(s.buf) <= 64<<10 {
		subPool.Put(s)
	}
}

// cmd returns command i's bytes.
func (s *sub) cmd(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.buf[start:s.ends[i]]
}

// Waits: a direct part is read by the caller when the caller waits.
func (p *part) Waits() bool { return p.s.direct && p.s.h.Waits() }

// Reply hands reply i on, or keeps it.
func (p *part) Reply(i int, v resp.Value) {
	s := p.s
	if p.idx != nil {
		i = p.idx[i]
	}
	if s.direct && !s.keeping {
		if !s.refused(i, v) {
			s.h.Reply(i, v)
			s.next = i + 1
			return
		}
		s.keeping = true
	}
	s.mu.Lock()
	s.keep(p, i, v)
	s.mu.Unlock()
}

// keep records reply i, or the refusal to redo, with mu held.
func (s *sub) keep(p *part, i int, v resp.Value) {
	if s.refused(i, v) {
		s.redo = append(s.redo, redo{i: i, msg: string(v.Str), node: p.node, sent: p.sent})
		return
	}
	s.setVal(i, s.arena.Retain(v))
}

func (s *sub) setVal(i int, v resp.Value) {
	if len(s.vals) < s.n {
		s.vals = slices.Grow(s.vals[:0], s.n)[:s.n]
	}
	s.vals[i] = v
}

// Done ends the part; the last part to end finishes the submission.
func (p *part) Done(err error) {
	if g := p.held; g != nil {
		p.held = nil
		g.Leave()
	}
	s := p.s
	if err != nil && connectionError(err) {
		s.cl.refreshSoon()
	}
	s.mu.Lock()
	if err != nil && s.err == nil {
		s.err = err
	}
	s.pending--
	last := s.pending == 0
	s.mu.Unlock()
	if last {
		s.finish()
	}
}

// finish hands the kept replies to h and ends it, or first sends the
// refused commands again.
func (s *sub) finish() {
	if s.err == nil && len(s.redo) > 0 {
		s.cl.mu.Lock()
		closed := s.cl.closed
		if !closed {
			s.cl.wg.Add(1)
		}
		s.cl.mu.Unlock()
		if !closed {
			go s.resolve()
			return
		}
		s.err = errClosedClient
	}
	s.end()
}

// end hands over what is kept, in order, then ends h.
func (s *sub) end() {
	h, err := s.h, s.err
	if err == nil {
		for i := s.next; i < s.n; i++ {
			h.Reply(i, s.vals[i])
		}
	}
	s.release()
	h.Done(err)
}

// split sends the submission as one part per primary.
func (s *sub) split() error {
	// What a primary's connection would refuse (a subscription, WATCH,
	// an argument over MaxArg) is refused before any part is sent, as
	// one connection refuses a whole submission: else the parts before
	// it would have run.
	if err := wire.CheckShared(wire.Make(s.buf, s.n, s.facts), s.cl.opts.Node.MaxArg); err != nil {
		s.release()
		return err
	}
	t := s.cl.topo.Load()
	// Group the commands by primary, each group in submission order.
	var order []string
	groups := map[string][]int{}
	for i, sl := range s.slots {
		addr := t.addr(uint16(max(sl, 0)))
		if sl == keyless {
			addr = t.addrs[0]
		}
		if addr == "" {
			if _, err := s.cl.target(s.ctx, sl); err != nil {
				s.release()
				return err
			}
			t = s.cl.topo.Load()
			addr = t.addr(uint16(sl))
		}
		if _, ok := groups[addr]; !ok {
			order = append(order, addr)
		}
		groups[addr] = append(groups[addr], i)
	}
	s.pending = len(order)
	s.parts = slices.Grow(s.parts[:0], len(order))[:len(order)]
	s.vals = slices.Grow(s.vals[:0], s.n)[:s.n]
	for _, addr := range order {
		s.idx = append(s.idx, groups[addr]...)
	}
	at := 0
	for k, addr := range order {
		g := groups[addr]
		idx := s.idx[at : at+len(g)]
		at += len(g)
		var b []byte
		for _, i := range idx {
			b = append(b, s.cmd(i)...)
		}
		s.parts[k] = part{s: s, idx: idx}
		w := wire.Make(b, len(idx), nil)
		if s.facts != nil {
			// The part's facts, in a scratch after the submission's:
			// used only while it is sent.
			pf := s.pfacts[:0]
			for _, i := range idx {
				pf = append(pf, s.facts[i])
			}
			s.pfacts = pf
			w = wire.Make(b, len(idx), pf)
		}
		err := s.sendPart(s.cl.node(addr), &s.parts[k], w, k == 0)
		if err != nil {
			return err
		}
	}
	return nil
}

// retryWait is how long to wait before sending a command again after
// TRYAGAIN or CLUSTERDOWN, when it waited n times before.
func (cl *Client) retryWait(n int) time.Duration {
	return min(cl.opts.RetryBackoff<<min(n, 10), time.Second)
}
