package cluster

import (
	"slices"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// bpart is the Handler of one primary's copy of a broadcast command.
type bpart struct {
	s    *sub
	k    int
	held *drain.Gate // the gate of the connection it is in flight on, left at Done
}

func (p *bpart) Waits() bool { return false }

func (p *bpart) Reply(_ int, v resp.Value) {
	p.s.mu.Lock()
	p.s.vals[p.k] = p.s.arena.Retain(v)
	p.s.mu.Unlock()
}

func (p *bpart) Done(err error) {
	if g := p.held; g != nil {
		p.held = nil
		g.Leave()
	}
	s := p.s
	s.mu.Lock()
	if err != nil && s.err == nil {
		s.err = err
	}
	s.pending--
	last := s.pending == 0
	s.mu.Unlock()
	if last {
		h, err := s.h, s.err
		if err == nil {
			h.Reply(0, s.merge())
		}
		s.release()
		h.Done(err)
	}
}

// broadcast sends the submission's one command to every primary and
// hands h one reply made of theirs, as the command's response policy
// says: the first, a sum, a logical and/or, a minimum, a maximum, or the
// arrays concatenated; or as its own rule says where the policy does not
// (CLUSTER SLOT-STATS: mergeSlotStats). An error reply from any primary
// is the reply.
func (s *sub) broadcast() error {
	t := s.cl.topo.Load()
	s.pending = len(t.addrs)
	s.vals = slices.Grow(s.vals[:0], len(t.addrs))[:len(t.addrs)]
	parts := make([]bpart, len(t.addrs))
	s.hold() // the Sends below may see the parts done before they return
	defer s.release()
	for k, addr := range t.addrs {
		parts[k] = bpart{s: s, k: k}
		n := s.cl.enter(s.cl.node(addr))
		parts[k].held = n.gate
		c, err := n.client(s.ctx, s.cl.opts.Node)
		if err == nil {
			err = c.Send(s.ctx, wire.Own(wire.Make(s.buf, 1, s.facts)), &parts[k])
		}
		if err != nil {
			parts[k].held = nil
			n.gate.Leave()
			if k == 0 {
				s.release()
				return err
			}
			parts[k].Done(err)
		}
	}
	return nil
}

// aggregateReplies makes one reply of the primaries' replies.
func aggregateReplies(agg cmds.Aggregate, vals []resp.Value) resp.Value {
	for _, v := range vals {
		if v.IsError() {
			return v
		}
	}
	if len(vals) == 0 {
		return resp.Value{Type: resp.Null}
	}
	switch agg {
	case cmds.AggSum, cmds.AggMin, cmds.AggMax:
		if vals[0].Type != resp.Integer {
			return vals[0]
		}
		out := vals[0]
		for _, v := range vals[1:] {
			switch agg {
			case cmds.AggSum:
				out.Int += v.Int
			case cmds.AggMin:
				out.Int = min(out.Int, v.Int)
			case cmds.AggMax:
				out.Int = max(out.Int, v.Int)
			}
		}
		return out
	case cmds.AggLogicalAnd, cmds.AggLogicalOr:
		out := vals[0]
		if out.Type == resp.Array {
			out.Elems = slices.Clone(out.Elems)
		}
		for _, v := range vals[1:] {
			combine(&out, v, agg == cmds.AggLogicalAnd)
		}
		return out
	case cmds.AggConcat:
		if vals[0].Type != resp.Array && vals[0].Type != resp.Set {
			return vals[0]
		}
		out := resp.Value{Type: vals[0].Type}
		for _, v := range vals {
			out.Elems = append(out.Elems, v.Elems...)
		}
		return out
	}
	return vals[0]
}

// combine ands (or ors) v into out: integers, or arrays of them.
func combine(out *resp.Value, v resp.Value, and bool) {
	op := func(a, b int64) int64 {
		if and {
			return min(a, b)
		}
		return max(a, b)
	}
	if out.Type == resp.Array {
		for i := range min(len(out.Elems), len(v.Elems)) {
			out.Elems[i].Int = op(out.Elems[i].Int, v.Elems[i].Int)
		}
		return
	}
	out.Int = op(out.Int, v.Int)
}
