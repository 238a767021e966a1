package dispatch

import (
	"context"
)

// EvalBatch sends every call in b as EVALSHA in one pipeline. The calls
// that answer NOSCRIPT are handled together: each distinct script is
// loaded once (shared with concurrent Evals and batches, as in Eval), then
// exactly those calls are sent again as one pipeline, in their original
// order, and their replies put back at their indices.
//
// EvalBatch returns nil when every call has its final reply (script
// errors included: see Batch.Err). When a script cannot be loaded, its
// calls keep their NOSCRIPT replies, the others are completed, and the
// *LoadError is returned. A broken connection, or ctx ending while
// commands are in flight, fails the whole batch: its replies are then not
// available. When ctx ends while a script is being loaded, EvalBatch
// returns ctx's error and the replies received so far stay in b, the
// calls that waited on the load keeping their NOSCRIPT.
func (x *Scripted) EvalBatch(ctx context.Context, b *Batch) error {
	if err := b.ready(); err != nil {
		return err
	}
	if len(b.calls) == 0 {
		return nil
	}
	b.begin()
	b.loads = b.loads[:0]
	x.stamp(b, nil)
	if err := b.roundTrip(ctx, x.s, false, x.plain, nil); err != nil {
		return err
	}
	var loadErr error
	for sends := 1; ; sends++ {
		b.collectNoScript()
		if len(b.redo) == 0 {
			return loadErr
		}
		x.noScripts.Add(uint64(len(b.redo)))
		if sends == maxSends {
			c := &b.calls[b.redo[0]]
			return &reloadLimitError{script: c.s.name, sha: c.s.sha}
		}
		if err := x.loadAll(ctx, b); err != nil {
			if ctx.Err() != nil {
				return err
			}
			if loadErr == nil {
				loadErr = err
			}
		}
		if len(b.redo) == 0 {
			return loadErr
		}
		x.stamp(b, b.redo)
		if err := b.roundTrip(ctx, x.s, false, x.plain, b.redo); err != nil {
			return err
		}
	}
}

// stamp records, for the calls about to be sent (all when idx is nil),
// their script's completed-load count, and counts the sends.
func (x *Scripted) stamp(b *Batch, idx []int) {
	n := len(idx)
	if idx == nil {
		n = len(b.calls)
	}
	var last *Script
	var st *scriptState
	for k := range n {
		i := k
		if idx != nil {
			i = idx[k]
		}
		c := &b.calls[i]
		if c.s != last {
			last, st = c.s, x.state(c.s)
		}
		c.gen = st.done.Load()
	}
	x.evalSHAs.Add(uint64(n))
}

// collectNoScript sets b.redo to the indices of the calls that answered
// NOSCRIPT, minus those whose script failed to load in this EvalBatch.
func (b *Batch) collectNoScript() {
	b.redo = b.redo[:0]
	for i, v := range b.col.Replies() {
		if isNoScript(v) && !b.loadFailed(b.calls[i].s) {
			b.redo = append(b.redo, i)
		}
	}
}

// loadFailed reports whether s failed to load earlier in this EvalBatch.
func (b *Batch) loadFailed(s *Script) bool {
	for i := range b.loads {
		if b.loads[i].s == s && b.loads[i].err != nil {
			return true
		}
	}
	return false
}

// loadAll makes sure every script among b.redo is loaded, once each, then
// drops from b.redo the calls whose script could not be. It returns the
// first load error. b.loads keeps the failures for collectNoScript.
func (x *Scripted) loadAll(ctx context.Context, b *Batch) error {
	failed := b.loads[:0]
	for _, l := range b.loads {
		if l.err != nil {
			failed = append(failed, l)
		}
	}
	b.loads = failed
	first := len(b.loads)
	for _, i := range b.redo {
		c := &b.calls[i]
		if j := b.findLoad(c.s, first); j >= 0 {
			b.loads[j].gen = min(b.loads[j].gen, c.gen)
			continue
		}
		b.loads = append(b.loads, pendingLoad{s: c.s, st: x.state(c.s), gen: c.gen})
	}
	var firstErr error
	for j := first; j < len(b.loads); j++ {
		l := &b.loads[j]
		l.err = x.ensureLoaded(ctx, l.s, l.st, l.gen)
		if l.err != nil && firstErr == nil {
			firstErr = l.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if firstErr != nil {
		keep := b.redo[:0]
		for _, i := range b.redo {
			if !b.loadFailed(b.calls[i].s) {
				keep = append(keep, i)
			}
		}
		b.redo = keep
	}
	return firstErr
}

// findLoad returns the index in b.loads[from:] of s's entry, or -1.
func (b *Batch) findLoad(s *Script, from int) int {
	for j := from; j < len(b.loads); j++ {
		if b.loads[j].s == s {
			return j
		}
	}
	return -1
}
