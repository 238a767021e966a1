package cluster

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/readers"
	"github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
)

// keyless marks a command with no key: any primary may run it.
const keyless = -1

// cmdInfo is a command's entry in the generated command table (package
// cmds): its key specs and its request and response policies.
type cmdInfo = cmds.Info

// route returns the slot of the command cmd whose fact is f (keyless
// when it has no key), or a *CrossSlotError when its keys hash to
// different slots. The keys (and shard channels) are the fact's: the
// builder's, or the generated table's key specs applied where the
// command was encoded or, for a submission that came without facts, where
// Send read them (wire.Known). A command the generated table does not
// know (a module's, a newer server's) has none and is routed keyless: see
// the package doc.
func route(f *cmds.Fact, cmd []byte, last *lastSlot) (int, error) {
	s := keyless
	for i := range f.Keys {
		k := last.slotOf(f.Key(cmd, i))
		if s == keyless {
			s = k
		} else if k != s {
			return 0, &CrossSlotError{Command: strings.ToUpper(string(f.Name.Of(cmd))), Slots: [2]int{s, k}}
		}
	}
	return s, nil
}

// lastSlot remembers the last hashtag hashed: a batch's keys often share
// one.
type lastSlot struct {
	tag  []byte // the last hashtag hashed, and its slot
	slot int    // -1: none yet
}

// slotOf returns key's slot, hashing only a hashtag it has not just seen.
func (l *lastSlot) slotOf(key []byte) int {
	tag := slot.Hashtag(key)
	if l.slot >= 0 && bytes.Equal(tag, l.tag) {
		return l.slot
	}
	l.tag, l.slot = append(l.tag[:0], tag...), int(slot.Of(tag))
	return l.slot
}

// target returns the node serving slot s (any primary when keyless),
// reading the topology again first when no primary serves it (at most
// once per minRefresh however many calls meet the slot: the others get
// ErrNoNode from the topology last read).
func (cl *Client) target(ctx context.Context, s int) (*node, error) {
	t := cl.topo.Load()
	if s == keyless {
		i := int(cl.rr.Add(1)) % len(t.addrs)
		return cl.node(t.addrs[i]), nil
	}
	addr := t.addr(uint16(s))
	if addr == "" {
		if err := cl.refresh(ctx, false); err != nil {
			return nil, err
		}
		if addr = cl.topo.Load().addr(uint16(s)); addr == "" {
			return nil, ErrNoNode
		}
	}
	return cl.node(addr), nil
}

// Send routes a submission: every command to the primary serving its
// keys' slot. A submission whose commands all go to one primary is sent
// there as one pipeline, and its replies pass straight to h; one spread
// over several primaries is split, sent to all of them at once, and its
// replies are handed to h in the submission's order once every part is
// in. Commands of one slot keep their relative order. A command refused
// with MOVED, ASK, TRYAGAIN or CLUSTERDOWN (or NOSCRIPT for a registered
// script) did not run, so it alone is sent again where the refusal says,
// or, inside a transaction, the whole transaction; nothing else is ever
// sent twice (but a WAIT, sent again after its refused writes).
//
// A transaction (MULTI … EXEC) goes whole to its slot's primary. A
// keyless command goes with the first keyed command of its submission, or
// to any primary when there are none; a WAIT with the keyed command
// before it. A keyless command whose server tips ask for every shard
// (FLUSHALL, SCRIPT FLUSH, DBSIZE, …), or SCRIPT LOAD, goes to every
// primary when it is sent alone, and is refused (ErrUnroutable) in a
// submission of several commands; so is a WAIT sent alone.
//
// Options.Node's hooks (and Observer) see each submission once, here,
// with its final replies: not the nodes' MOVED, ASK, TRYAGAIN or
// NOSCRIPT answers a command is sent again after, nor the Client's own
// commands (CLUSTER SHARDS, SCRIPT LOAD, ASKING).
func (cl *Client) Send(ctx context.Context, w conn.Cmds, h conn.Handler) error {
	if cl.hooks == nil {
		return cl.send(ctx, w, h)
	}
	return cl.sendHooked(ctx, w, h)
}

// send is Send without the hooks: what it sends to the nodes is marked
// Own, for their connections not to run them again.
func (cl *Client) send(ctx context.Context, w wire.Cmds, h wire.Handler) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.Len() <= 0 || h == nil {
		return errNoSubmission
	}
	// The commands' facts: the encoders', or read from the bytes here,
	// once, for a submission made of raw resp types. Those read here are
	// valid while Send runs (the parts are sent with them), no longer.
	w, known, err := wire.Known(w)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer wire.Release(known)
	s := getSub(cl, h, ctx, w)
	if err := s.plan(); err != nil {
		s.release()
		return err
	}
	if w.Len() == 1 && s.slots[0] == keyless && s.info != nil && s.info.Policy() == cmds.AllShards {
		return s.broadcast()
	}
	if cl.reads != nil {
		s.replica = readers.ReadOnly(s.facts)
	}
	return s.dispatch()
}

// plan finds every command's slot from its facts and checks
// that it can be routed: a transaction (MULTI … EXEC or DISCARD) stays on
// one slot, and its keyless commands (MULTI, EXEC, PING, …) go with its
// keys; a WAIT (or WAITAOF) goes with the keyed command before it, whose
// write it counts; a command that goes to every primary is sent alone.
// Other keyless commands go with the submission's first keyed command.
func (s *sub) plan() error {
	first, prev := keyless, keyless // the first and the latest keyed command's slot
	tx := -1                        // the open transaction's MULTI, or -1
	txSlot := keyless
	at := 0
	for i := range s.n {
		f := &s.facts[i]
		cmd := s.buf[at : at+int(f.Size)]
		sl, err := route(f, cmd, &s.last)
		if err != nil {
			return err
		}
		info := f.Info
		var kind cmds.Kind
		if info != nil {
			kind = info.Kind
		}
		if info != nil && info.Name == "script|load" {
			if src, ok := scriptLoaded(cmd); ok {
				s.cl.RegisterScript(sha1Hex(src), string(src))
			}
		}
		if s.n == 1 {
			s.info = info
		}
		alone := f.Arg1 == (cmds.Span{}) // the name only (MULTI, EXEC)
		wait := info != nil && (info.Name == "wait" || info.Name == "waitaof")
		if s.n > 1 && info != nil && info.Policy() == cmds.AllShards && !wait && info.Name != "ping" {
			return &RouteError{Command: strings.ToUpper(string(f.Name.Of(cmd))), Reason: reasonEveryShard}
		}
		switch {
		case tx < 0 && alone && kind.Has(cmds.TxMulti):
			tx, txSlot = i, keyless
		case tx >= 0 && alone && kind.Has(cmds.TxEnd):
			s.txs = append(s.txs, txSpan{start: tx, end: i, closed: true})
			tx = -1
		case tx >= 0:
			if sl != keyless && txSlot != keyless && sl != txSlot {
				return &CrossSlotError{Command: "MULTI … EXEC", Slots: [2]int{txSlot, sl}}
			}
			if sl != keyless {
				txSlot = sl
			}
		case wait:
			if s.n == 1 {
				return &RouteError{Command: strings.ToUpper(string(f.Name.Of(cmd))), Reason: reasonWaitAlone}
			}
			if prev == keyless {
				return &RouteError{Command: strings.ToUpper(string(f.Name.Of(cmd))), Reason: reasonWaitFirst}
			}
			sl = prev
			s.waits = append(s.waits, i)
		}
		if sl != keyless {
			prev = sl
			if first == keyless {
				first = sl
			}
		}
		s.slots[i] = sl
		at += int(f.Size)
		s.ends[i] = at
	}
	if tx >= 0 { // a MULTI without its EXEC: the rest is its span
		s.txs = append(s.txs, txSpan{start: tx, end: s.n - 1})
	}
	// A transaction's keyless commands go with its keys.
	for _, sp := range s.txs {
		sl := keyless
		for i := sp.start; i <= sp.end && sl == keyless; i++ {
			sl = s.slots[i]
		}
		for i := sp.start; i <= sp.end; i++ {
			s.slots[i] = sl
		}
	}
	// Other keyless commands go with the submission's first keyed command.
	for i := range s.slots {
		if s.slots[i] == keyless {
			s.slots[i] = first
		}
	}
	return nil
}

// txSpan is one transaction of a submission: MULTI is command start, its
// EXEC (or DISCARD) command end; not closed: the submission ends first.
type txSpan struct {
	start, end int
	closed     bool
}

// spanOf returns the transaction that command i is part of.
func (s *sub) spanOf(i int) (txSpan, bool) {
	for _, sp := range s.txs {
		if sp.start <= i && i <= sp.end {
			return sp, true
		}
	}
	return txSpan{}, false
}

// The Infos of WAIT and WAITAOF, which count the connection's writes.
var (
	infoWait    = cmds.Lookup("wait")
	infoWaitaof = cmds.Lookup("waitaof")
)

// blockingIn returns the name of the first blocking command of the
// submission outside a transaction (BLPOP, XREAD … BLOCK, …; WAIT and
// WAITAOF aside), or "", from the commands' facts.
func (s *sub) blockingIn() string {
	facts := s.facts
	inMulti := false
	for i := range facts {
		f := &facts[i]
		switch {
		case f.Kind&cmds.Blocking != 0:
			if !inMulti && f.Info != nil && f.Info != infoWait && f.Info != infoWaitaof {
				return f.Info.Words[0]
			}
		case f.Kind&cmds.TxMulti != 0:
			inMulti = true
		case f.Kind&cmds.TxEnd != 0:
			inMulti = false
		}
	}
	return ""
}

// dispatch sends the submission's parts, one per primary.
func (s *sub) dispatch() error {
	n0, err := s.cl.target(s.ctx, s.slots[0])
	if err != nil {
		s.release()
		return err
	}
	same := true
	t := s.cl.topo.Load()
	for _, sl := range s.slots[1:] {
		if sl != s.slots[0] && (sl == keyless || s.slots[0] == keyless || t.addr(uint16(sl)) != n0.addr) {
			same = false
			break
		}
	}
	if !same && len(s.waits) > 0 {
		w := s.waits[0]
		name := strings.ToUpper(string(s.facts[w].Name.Of(s.cmd(w))))
		s.release()
		return &RouteError{Command: name, Reason: reasonWaitSpread}
	}
	if !same {
		if name := s.blockingIn(); name != "" {
			// Each part of a split batch is sent without waiting for
			// it, which a blocking command's connection cannot be:
			// refused before any part is sent, rather than after
			// another primary's part ran.
			s.release()
			return &RouteError{Command: name, Reason: reasonBlockingSpread}
		}
	}
	if same {
		s.direct, s.pending = true, 1
		return s.sendPart(n0, &s.whole, wire.Make(s.buf, s.n, s.facts), true)
	}
	return s.split()
}

// sendPart sends one part to n. first: nothing of the submission was
// sent yet, so an error is returned (and h never called) rather than
// given to h.
func (s *sub) sendPart(n *node, p *part, w wire.Cmds, first bool) error {
	s.hold() // the Sends below may see the part done before they return
	defer s.release()
	if s.replica {
		var err error
		if n, err = s.toReplica(n, p, w); n == nil {
			if err != nil && first {
				s.release()
				return err
			}
			if err != nil {
				p.Done(err)
			}
			return nil
		}
	}
	n = s.cl.enter(n)
	p.node, p.held = n, n.gate
	c, err := n.client(s.ctx, s.cl.opts.Node)
	if err == nil {
		p.sent = n.loadSeq.Load()
		err = c.Send(s.ctx, wire.Own(w), p)
	}
	if err == nil {
		return nil
	}
	p.held = nil // never sent: its Done is not the connection's
	n.gate.Leave()
	if connectionError(err) {
		s.cl.refreshSoon()
	}
	if first {
		s.release()
		return err
	}
	p.Done(err)
	return nil
}

// toReplica sends a read-only part to a replica of primary n's shard. It
// returns nil when the part went (or, with an error, when Reads.Strict
// found no replica: nothing was sent), or the node to send it to
// instead: n, when no replica could take it.
func (s *sub) toReplica(n *node, p *part, w wire.Cmds) (*node, error) {
	cands := s.cl.topo.Load().replicasOf(n.addr)
	var skip *readers.Member
	var last error
	for range len(cands) {
		m := s.cl.reads.Pick(cands, skip)
		if m == nil {
			break
		}
		if !m.Gate().Enter() { // retired since the pick
			skip = m
			continue
		}
		c := m.Client()
		if c == nil {
			m.Gate().Leave()
			skip = m
			continue
		}
		p.node, p.held = s.cl.replicaNode(m, c), m.Gate()
		p.sent = p.node.loadSeq.Load()
		err := c.Send(s.ctx, wire.Own(w), p)
		if err == nil {
			return nil, nil
		}
		p.held = nil
		m.Gate().Leave()
		if !readers.NotSent(err) || s.ctx.Err() != nil {
			return nil, err
		}
		m.Down()
		skip, last = m, err
	}
	if s.cl.opts.Reads.Strict {
		if last != nil {
			return nil, fmt.Errorf("%w: %w", replica.ErrNoReplica, last)
		}
		return nil, replica.ErrNoReplica
	}
	return n, nil
}

// errNoSubmission: a submission of no commands or no handler.
var errNoSubmission = errors.New("cluster: submission of no commands or no handler")

// connectionError reports whether err says a node's connection failed,
// which may mean the topology changed (a failover).
func connectionError(err error) bool {
	return errors.Is(err, conn.ErrBroken) || errors.Is(err, conn.ErrNotConnected)
}

// scriptLoaded returns the script of SCRIPT LOAD <script>, encoded in
// cmd (rare: read here, not kept in the facts).
func scriptLoaded(cmd []byte) ([]byte, bool) {
	v, _, err := resp.Parse(cmd, resp.Limits{})
	if err != nil || len(v.Elems) != 3 {
		return nil, false
	}
	return v.Elems[2].Str, true
}

// sha1Hex is a script's SHA as the server names it.
func sha1Hex(src []byte) string {
	sum := sha1.Sum(src)
	return hex.EncodeToString(sum[:])
}
