package cluster

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// errClosedClient ends a submission whose refused commands would need
// sending again after Close.
var errClosedClient = conn.ErrClosed

// refusal codes: the node did not run the command.
const (
	codeMoved       = "MOVED"
	codeAsk         = "ASK"
	codeTryAgain    = "TRYAGAIN"
	codeClusterDown = "CLUSTERDOWN"
	codeNoScript    = "NOSCRIPT"
)

// refused reports whether reply v to command i is a refusal the Client
// acts on: a redirect, a passing unavailability, or NOSCRIPT for a
// script whose source it knows. Such a command did not run.
func (s *sub) refused(i int, v resp.Value) bool {
	if v.Type != resp.Error {
		return false
	}
	switch {
	case hasCode(v.Str, codeMoved), hasCode(v.Str, codeAsk),
		hasCode(v.Str, codeTryAgain), hasCode(v.Str, codeClusterDown):
		return true
	case hasCode(v.Str, codeNoScript):
		_, ok := s.scriptOf(i)
		return ok
	}
	return false
}

// scriptOf returns the SHA of command i when it is EVALSHA (or
// EVALSHA_RO) of a registered script.
func (s *sub) scriptOf(i int) ([]byte, bool) {
	f := &s.facts[i] // its Name and Arg1: offsets in s.buf, valid after Send
	if f.Info == nil || f.Info.Name != "evalsha" && f.Info.Name != "evalsha_ro" || f.Arg1 == (cmds.Span{}) {
		return nil, false
	}
	sha := f.Arg1.Of(s.cmd(i))
	_, ok := s.cl.source(sha)
	return sha, ok
}

func hasCode(msg []byte, code string) bool {
	return len(msg) >= len(code) && string(msg[:len(code)]) == code &&
		(len(msg) == len(code) || msg[len(code)] == ' ')
}

// resolve sends every refused command again until each has a reply that
// is not a refusal, then ends the submission. Each round sends the
// commands still refused, grouped by where they go, one pipeline per
// node, in submission order; a round waits once for TRYAGAIN and
// CLUSTERDOWN. A command refused inside a transaction is not sent on its
// own: the transaction is sent again whole, MULTI to EXEC (the server
// discarded it: its EXEC answered EXECABORT or was refused itself). A WAIT
// after a refused write is sent again after it, where it went. Each
// command's own bounds (hop) end the rounds. It runs on a goroutine of its
// own, which the Client's wait group owns.
func (s *sub) resolve() {
	defer s.cl.wg.Done()
	slices.SortFunc(s.redo, func(a, b redo) int { return a.i - b.i })
	pending := s.units(s.redo)
	var col wire.Collector
	for len(pending) > 0 && s.err == nil {
		pending = s.round(&col, pending)
	}
	s.end()
}

// units turns the refused commands, in submission order, into what is
// sent again: a command alone, or the whole transaction it is part of,
// and after them the WAITs that follow one of them. A refused command of
// a transaction that ran anyway (its EXEC replied with the results), was
// discarded, or does not end in the submission, is not sent again: its
// refusal is its reply.
func (s *sub) units(rs []redo) []redo {
	out := make([]redo, 0, len(rs)+len(s.waits))
	for k, r := range rs {
		r.end, r.sends = r.i, 1
		if sp, ok := s.spanOf(r.i); ok {
			if n := len(out); n > 0 && out[n-1].i == sp.start && !out[n-1].wait {
				continue // the transaction is sent again already
			}
			if !sp.closed || s.ran(sp, rs[k:]) {
				s.setVal(r.i, s.arena.Retain(resp.Value{Type: resp.Error, Str: []byte(r.msg)}))
				continue
			}
			r.i, r.end = sp.start, sp.end
		}
		out = append(out, r)
	}
	if len(out) == 0 || len(s.waits) == 0 {
		return out
	}
	// Every WAIT after the first redone command goes again.
	for _, w := range s.waits {
		if w > out[0].i {
			out = append(out, redo{i: w, end: w, wait: true})
		}
	}
	slices.SortStableFunc(out, func(a, b redo) int { return a.i - b.i })
	return out
}

// ran reports whether transaction sp ran or was discarded: its last
// command, EXEC or DISCARD, was not refused (rest are the refusals from
// sp's first on) and did not answer with an error.
func (s *sub) ran(sp txSpan, rest []redo) bool {
	for _, r := range rest {
		if r.i == sp.end {
			return false
		}
	}
	return sp.end < len(s.vals) && s.vals[sp.end].Type != resp.Error
}

// errWaitSpread is the reply of a WAIT whose redone writes went to
// several primaries: no one WAIT counts them.
const errWaitSpread = "ERR cluster: WAIT not sent: the writes before it were redirected to several primaries, whose replicas no one WAIT counts"

// resend is one refused command's next send.
type resend struct {
	redo
	node   *node
	asking bool
}

// round sends each refused command (or transaction) once more and
// returns those refused again.
func (s *sub) round(col *wire.Collector, pending []redo) []redo {
	sends := make([]resend, 0, len(pending))
	waited := false
	for _, r := range pending {
		if r.wait {
			// After the writes before it, on their node.
			var n *node
			spread := false
			for _, x := range sends {
				if x.i < r.i && !x.wait {
					spread = spread || (n != nil && x.node != n)
					n = x.node
				}
			}
			switch {
			case spread:
				s.setVal(r.i, s.arena.Retain(resp.Value{Type: resp.Error, Str: []byte(errWaitSpread)}))
			case n != nil:
				sends = append(sends, resend{redo: r, node: n})
			}
			continue
		}
		n, asking, err := s.hop(&r, &waited)
		if err != nil {
			s.err = err
			return nil
		}
		if n == nil { // the script could not be loaded: NOSCRIPT stands
			s.setVal(r.i, s.arena.Retain(resp.Value{Type: resp.Error, Str: []byte(r.msg)}))
			continue
		}
		sends = append(sends, resend{redo: r, node: n, asking: asking})
	}
	var again []redo
	for len(sends) > 0 {
		// The first command's destination, and every later one going there.
		n := sends[0].node
		var wb []byte
		wn := 0
		var group, rest []resend
		for _, x := range sends {
			if x.node != n {
				rest = append(rest, x)
				continue
			}
			group = append(group, x)
			if x.asking { // before MULTI: the server keeps it for the whole transaction
				wb = append(wb, askingCmd...)
				wn++
			}
			for i := x.i; i <= x.end; i++ {
				wb = append(wb, s.cmd(i)...)
				wn++
			}
		}
		sends = rest
		// Facts nil: the node's connection reads them (a redirect is rare).
		w := wire.Make(wb, wn, nil)
		n = s.cl.enter(n)
		c, err := n.client(s.ctx, s.cl.opts.Node)
		if err != nil {
			n.gate.Leave()
			s.err = err
			return nil
		}
		sent := n.loadSeq.Load()
		col.Begin(w.Len())
		err = col.Exchange(s.ctx, c, wire.Own(w), nil)
		n.gate.Leave()
		if err != nil {
			if connectionError(err) {
				s.cl.refreshSoon()
			}
			s.err = err
			return nil
		}
		replies, k := col.Replies(), 0
		refusedHere := false // a command of this group was refused again
		for _, x := range group {
			if x.asking {
				k++ // ASKING's +OK
			}
			if x.wait {
				if refusedHere {
					again = append(again, x.redo)
				} else {
					s.setVal(x.i, s.arena.Retain(replies[k]))
				}
				k++
				continue
			}
			vs := replies[k : k+x.end-x.i+1]
			k += len(vs)
			refusal := -1
			for j, v := range vs {
				if s.refused(x.i+j, v) {
					refusal = j
					break
				}
			}
			if refusal >= 0 {
				refusedHere = true
				r := x.redo
				r.msg, r.node, r.sent, r.asked = string(vs[refusal].Str), n, sent, x.asking
				r.sends++
				again = append(again, r)
				continue
			}
			for j, v := range vs {
				s.setVal(x.i+j, s.arena.Retain(v))
			}
		}
	}
	slices.SortStableFunc(again, func(a, b redo) int { return a.i - b.i })
	return again
}

var askingCmd = resp.AppendCommand(nil, "ASKING")

// maxReloads bounds the NOSCRIPT reloads of one command: past them its
// NOSCRIPT is its reply (the scripts' executor has its own bound).
const maxReloads = 2

// hop acts on refusal r and returns the node to send the command to,
// whether it needs ASKING first, or nil for a script that would not load.
// It counts r's bounds: past MaxRedirects MOVED and ASK in a row, or
// retried after TRYAGAIN and CLUSTERDOWN for longer than RetryTimeout,
// the command fails with a *RedirectError. A TRYAGAIN or CLUSTERDOWN
// waits (once per round: waited), with a backoff that doubles per wait of
// the command, bounded by its ctx; it starts the MOVED and ASK count
// again. A NOSCRIPT reload is not a redirect: it goes back where it was
// refused, with ASKING when it came through ASK (the importing node
// would answer MOVED to the source without it).
func (s *sub) hop(r *redo, waited *bool) (*node, bool, error) {
	cl := s.cl
	code, _, _ := strings.Cut(r.msg, " ")
	switch code {
	case codeMoved, codeAsk:
		if r.hops++; r.hops > cl.opts.MaxRedirects {
			return nil, false, &RedirectError{Last: r.msg, Hops: r.sends}
		}
		sl, addr, ok := parseRedirect(r.msg)
		if !ok {
			return nil, false, errors.New("cluster: unreadable redirect " + r.msg)
		}
		if code == codeAsk {
			cl.stats.ask.Add(1)
			return cl.node(addr), true, nil
		}
		cl.stats.moved.Add(1)
		cl.moved(sl, addr)
		return cl.node(addr), false, nil
	case codeTryAgain, codeClusterDown:
		if code == codeTryAgain {
			cl.stats.tryAgain.Add(1)
		} else {
			cl.stats.clusterDown.Add(1)
			cl.refreshSoon()
		}
		now := time.Now()
		if r.since.IsZero() {
			r.since = now
		} else if cl.opts.RetryTimeout > 0 && now.Sub(r.since) >= cl.opts.RetryTimeout {
			return nil, false, &RedirectError{Last: r.msg, Hops: r.sends}
		}
		r.hops = 0
		if !*waited {
			*waited = true
			select {
			case <-time.After(cl.retryWait(r.waits)):
			case <-s.ctx.Done():
				return nil, false, s.ctx.Err()
			case <-cl.life.Done():
				return nil, false, conn.ErrClosed
			}
		}
		r.waits++
		n, err := cl.target(s.ctx, s.slots[r.i])
		return n, false, err
	case codeNoScript:
		if r.reloads++; r.reloads > maxReloads {
			return nil, false, nil
		}
		cl.stats.noScript.Add(1)
		sha, _ := s.scriptOf(r.i)
		src, _ := cl.source(sha)
		n := r.node
		if n.gate.Retired() { // left the topology: load where the command goes now
			n = cl.node(n.addr)
		}
		n = cl.enter(n)
		c, err := n.client(s.ctx, cl.opts.Node)
		if err == nil {
			err = n.ensureScript(s.ctx, c, string(sha), src, r.sent)
		}
		n.gate.Leave()
		if err != nil {
			if s.ctx.Err() != nil || connectionError(err) {
				return nil, false, err
			}
			return nil, false, nil
		}
		return n, r.asked, nil
	}
	return nil, false, errors.New("cluster: unexpected refusal " + r.msg)
}

// moved records that slot sl is served by addr, and reads the topology
// again soon: a MOVED usually means more slots moved.
func (cl *Client) moved(sl uint16, addr string) {
	for {
		t := cl.topo.Load()
		if t.addr(sl) == addr || cl.topo.CompareAndSwap(t, t.moved(sl, addr)) {
			break
		}
	}
	cl.refreshSoon()
}
