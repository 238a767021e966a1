package cluster

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"time"

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
	var a argv
	if _, err := a.parse(s.cmd(i)); err != nil || a.len() < 2 {
		return nil, false
	}
	name := a.arg(0)
	if !bytes.EqualFold(name, []byte("evalsha")) && !bytes.EqualFold(name, []byte("evalsha_ro")) {
		return nil, false
	}
	_, ok := s.cl.source(a.arg(1))
	return a.arg(1), ok
}

func hasCode(msg []byte, code string) bool {
	return len(msg) >= len(code) && string(msg[:len(code)]) == code &&
		(len(msg) == len(code) || msg[len(code)] == ' ')
}

// resolve sends every refused command again, in submission order, until
// each has a reply that is not a refusal, then ends the submission. It
// runs on a goroutine of its own (the Client's wait group owns it).
func (s *sub) resolve() {
	defer s.cl.wg.Done()
	slices.SortFunc(s.redo, func(a, b redo) int { return a.i - b.i })
	var col wire.Collector
	for _, r := range s.redo {
		v, err := s.settle(&col, r)
		if err != nil {
			s.err = err
			break
		}
		s.setVal(r.i, v)
	}
	s.end()
}

// settle follows one command's refusals until it gets a real reply,
// which it returns retained in the submission's arena.
func (s *sub) settle(col *wire.Collector, r redo) (resp.Value, error) {
	cl := s.cl
	for hop := 1; ; hop++ {
		if hop > cl.opts.MaxRedirects {
			return resp.Value{}, &RedirectError{Last: r.msg, Hops: hop}
		}
		n, asking, err := s.hop(r, hop)
		if err != nil {
			return resp.Value{}, err
		}
		if n == nil { // the script could not be loaded: NOSCRIPT stands
			return s.arena.Retain(resp.Value{Type: resp.Error, Str: []byte(r.msg)}), nil
		}
		c, err := n.client(s.ctx, cl.opts.Node)
		if err != nil {
			return resp.Value{}, err
		}
		w := wire.Cmds{B: s.cmd(r.i), N: 1, Special: s.special}
		if asking {
			w.B = append(append([]byte(nil), askingCmd...), w.B...)
			w.N = 2
		}
		sent := n.loadSeq.Load()
		col.Begin(w.N)
		if err := col.Exchange(s.ctx, c, w, nil); err != nil {
			if connectionError(err) {
				cl.refreshSoon()
			}
			return resp.Value{}, err
		}
		v := col.Replies()[w.N-1]
		if !s.refused(r.i, v) {
			return s.arena.Retain(v), nil
		}
		r = redo{i: r.i, msg: string(v.Str), node: n, sent: sent}
	}
}

var askingCmd = resp.AppendCommand(nil, "ASKING")

// hop acts on refusal r and returns the node to send the command to,
// whether it needs ASKING first, or nil for a script that would not load.
func (s *sub) hop(r redo, hop int) (*node, bool, error) {
	cl := s.cl
	code, _, _ := strings.Cut(r.msg, " ")
	switch code {
	case codeMoved:
		cl.stats.moved.Add(1)
		sl, addr, ok := parseRedirect(r.msg)
		if !ok {
			return nil, false, errors.New("cluster: unreadable redirect " + r.msg)
		}
		cl.moved(sl, addr)
		return cl.node(addr), false, nil
	case codeAsk:
		cl.stats.ask.Add(1)
		_, addr, ok := parseRedirect(r.msg)
		if !ok {
			return nil, false, errors.New("cluster: unreadable redirect " + r.msg)
		}
		return cl.node(addr), true, nil
	case codeTryAgain, codeClusterDown:
		if code == codeTryAgain {
			cl.stats.tryAgain.Add(1)
		} else {
			cl.stats.clusterDown.Add(1)
			cl.refreshSoon()
		}
		select {
		case <-time.After(cl.retryWait(hop)):
		case <-s.ctx.Done():
			return nil, false, s.ctx.Err()
		case <-cl.life.Done():
			return nil, false, conn.ErrClosed
		}
		n, err := cl.target(s.ctx, s.slots[r.i])
		return n, false, err
	case codeNoScript:
		cl.stats.noScript.Add(1)
		sha, _ := s.scriptOf(r.i)
		src, _ := cl.source(sha)
		c, err := r.node.client(s.ctx, cl.opts.Node)
		if err != nil {
			return nil, false, err
		}
		if err := r.node.ensureScript(s.ctx, c, string(sha), src, r.sent); err != nil {
			if s.ctx.Err() != nil || connectionError(err) {
				return nil, false, err
			}
			return nil, false, nil
		}
		return r.node, false, nil
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
