package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Stats counts what a Scripted executor sent and saw since it was made.
type Stats struct {
	Loads     uint64 // SCRIPT LOAD commands sent
	NoScripts uint64 // NOSCRIPT replies received
	EvalSHAs  uint64 // EVALSHA commands sent, re-sends included
}

// Scripted is the default executor: it sends EVALSHA and loads a script
// only when the server answers NOSCRIPT. It never sends EVAL with the
// source. It is safe for concurrent use; make one per Sender (that is,
// per server), since what it knows about loaded scripts is about that
// server.
//
// A load runs on a goroutine of its own (a singleflight call), so a
// caller whose context ends stops waiting without cancelling the load
// that others wait for. That goroutine ends when SCRIPT LOAD is answered
// or the Sender fails it.
type Scripted struct {
	s     conn.Sender
	plain bool // s reads no facts of a plain call (wire.WantsFacts)

	group singleflight.Group // one SCRIPT LOAD in flight per SHA

	mu     sync.Mutex                               // serialises additions to states
	states atomic.Pointer[map[*Script]*scriptState] // copy on write

	loads, noScripts, evalSHAs atomic.Uint64
}

// scriptState is what an executor knows about one script (one SHA) on its
// server: how many loads have completed, and how the last one ended.
type scriptState struct {
	done atomic.Uint64 // completed SCRIPT LOAD attempts, success or not

	mu     sync.Mutex // orders "check done, then join or start a load"
	err    error      // the last attempt's error, or nil; guarded by mu
	broken error      // a load error no retry can fix; guarded by mu
}

// NewScripted returns a scripted executor over s.
func NewScripted(s conn.Sender) *Scripted {
	return &Scripted{s: s, plain: !wire.WantsFacts(s)}
}

// Stats returns the executor's counters.
func (x *Scripted) Stats() Stats {
	return Stats{
		Loads:     x.loads.Load(),
		NoScripts: x.noScripts.Load(),
		EvalSHAs:  x.evalSHAs.Load(),
	}
}

// Eval sends EVALSHA and, on NOSCRIPT, loads the script (once however many
// callers need it) and sends again. It allocates nothing in steady state.
func (x *Scripted) Eval(ctx context.Context, s *Script, a *Args, fn func(resp.Value) error) error {
	return x.run(ctx, s, a, func(cmd resp.Cmd, hdr uint32) error {
		if x.plain {
			return wire.DoFunc(ctx, x.s, cmd, fn) // EVALSHA: Plain
		}
		return wire.DoFuncMade(ctx, x.s, cmd, func(keys []cmds.Span) (cmds.Fact, []cmds.Span) {
			return callFact(s, false, a, hdr, keys)
		}, fn)
	})
}

// EvalInReply is Eval with fn run as the reply is read when ctx is marked
// by the module's wire.InReply (see there): fn is kept in the call, so it
// must not live on its caller's stack, which Eval's fn may.
func (x *Scripted) EvalInReply(ctx context.Context, s *Script, a *Args, fn func(resp.Value) error) error {
	return x.run(ctx, s, a, func(cmd resp.Cmd, hdr uint32) error {
		if x.plain {
			return wire.DoFuncInReply(ctx, x.s, cmd, fn)
		}
		return wire.DoFuncMadeInReply(ctx, x.s, cmd, func(keys []cmds.Span) (cmds.Fact, []cmds.Span) {
			return callFact(s, false, a, hdr, keys)
		}, fn)
	})
}

// run encodes s's EVALSHA with a and sends it with send (given the
// call's header length, for its fact); on NOSCRIPT it loads the script
// and sends again, at most maxSends times.
func (x *Scripted) run(ctx context.Context, s *Script, a *Args, send func(cmd resp.Cmd, hdr uint32) error) error {
	st := x.state(s)
	buf := bufPool.Get().(*cmdBuf)
	cmd, hdr := buildCall(buf.b, &s.evalsha, a)
	buf.b = cmd.Bytes()
	var err error
	for sends := 1; ; sends++ {
		gen := st.done.Load() // before the send: see ensureLoaded
		x.evalSHAs.Add(1)
		err = send(cmd, hdr)
		if !errIsNoScript(err) {
			break
		}
		x.noScripts.Add(1)
		if sends == maxSends {
			err = &reloadLimitError{script: s.name, sha: s.sha}
			break
		}
		if err = x.ensureLoaded(ctx, s, st, gen); err != nil {
			break
		}
	}
	if cap(buf.b) <= 64<<10 {
		bufPool.Put(buf)
	}
	return err
}

// state returns the executor's state for s, creating it on first use.
func (x *Scripted) state(s *Script) *scriptState {
	if m := x.states.Load(); m != nil {
		if st, ok := (*m)[s]; ok {
			return st
		}
	}
	return x.addState(s)
}

// addState adds s to the copy-on-write map. Scripts with the same source
// share one state, since the server knows them by SHA.
func (x *Scripted) addState(s *Script) *scriptState {
	if r, ok := x.s.(wire.ScriptRegistry); ok {
		// A cluster client loads the script on a node that answers
		// NOSCRIPT, there and only there.
		r.RegisterScript(s.sha, s.src)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.states.Load()
	var m map[*Script]*scriptState
	if old != nil {
		if st, ok := (*old)[s]; ok {
			return st
		}
		m = make(map[*Script]*scriptState, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
	} else {
		m = make(map[*Script]*scriptState)
	}
	var st *scriptState
	for k, v := range m {
		if k.sha == s.sha {
			st = v
			break
		}
	}
	if st == nil {
		st = new(scriptState)
	}
	m[s] = st
	x.states.Store(&m)
	return st
}

// ensureLoaded is called after a command sent when st.done was gen got
// NOSCRIPT. If a load attempt has completed since (st.done != gen), the
// script was loaded after that send, or the attempt failed: the caller
// re-sends, or gets the attempt's error. Otherwise it joins the load in
// flight or leads a new one.
//
// singleflight alone would not make it one load: a caller whose NOSCRIPT
// arrives just after the leader's load finished would start another. The
// check of st.done and the join are one step under st.mu, and a load
// bumps st.done under st.mu, so a second load starts only for a command
// sent after the first load had completed, that is after the server lost
// the script again.
func (x *Scripted) ensureLoaded(ctx context.Context, s *Script, st *scriptState, gen uint64) error {
	for {
		st.mu.Lock()
		if st.broken != nil {
			err := st.broken
			st.mu.Unlock()
			return err
		}
		if st.done.Load() != gen {
			err := st.err
			st.mu.Unlock()
			return err
		}
		ch := x.group.DoChan(s.sha, func() (any, error) {
			x.load(s, st)
			return nil, nil
		})
		st.mu.Unlock()
		select {
		case <-ch:
			// The attempt bumped st.done, unless the flight joined had
			// already ended before gen was read; either way, look again.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// permanent reports whether a SCRIPT LOAD error will recur on every try:
// an ERR reply, as for a script that does not compile. Connection faults
// and transient refusals (BUSY, LOADING, OOM, READONLY, …) are not.
func permanent(err error) bool {
	se, ok := serverError(err)
	return ok && se.HasCode(resp.CodeErr)
}

// load sends SCRIPT LOAD, checks the SHA it returns and records the
// outcome in st. Its context is not any caller's: others wait on it.
func (x *Scripted) load(s *Script, st *scriptState) {
	x.loads.Add(1)
	cmd := resp.Command(nil, "SCRIPT", "LOAD", s.src)
	err := wire.DoFunc(context.Background(), x.s, cmd, func(v resp.Value) error {
		if !bytes.EqualFold(v.Str, []byte(s.sha)) {
			return fmt.Errorf("server returned SHA %q (a %s)", v.Str, v.Type)
		}
		return nil
	})
	var broken bool
	if err != nil {
		broken = permanent(err)
		err = &LoadError{Script: s.name, SHA: s.sha, Err: err}
	}
	st.mu.Lock()
	st.err = err
	if broken {
		st.broken = err
	}
	st.done.Add(1)
	st.mu.Unlock()
}
