package dispatch

import (
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// Args builds the KEYS and ARGV of one script call, keys first. Each key
// and argument is encoded as a RESP bulk string as it is added, so a call
// is later written with one copy. An Args is reusable: Reset keeps its
// memory, and in steady state adding allocates nothing.
//
// Adding a key after an argument panics: EVALSHA takes every key before
// the first argument. The zero Args is empty and ready. An Args is not
// safe for concurrent use.
type Args struct {
	run resp.Args // the keys then the args
	nk  int
	// Where each key's bytes are in run, for the call's Fact: the first
	// len(keyAt) keys here, the others in more.
	keyAt [8]cmds.Span
	more  []cmds.Span
}

// Reset removes every key and argument, keeping the memory.
func (a *Args) Reset() { a.run.Reset(); a.nk = 0; a.more = a.more[:0] }

// Key appends a key (a KEYS[i] of the script).
func (a *Args) Key(k string) {
	a.mustBeKeys()
	a.noteKey(a.run.AddSpan(k))
}

// KeyBytes appends a key given as bytes; the bytes are copied.
func (a *Args) KeyBytes(k []byte) {
	a.mustBeKeys()
	a.noteKey(a.run.AddBytesSpan(k))
}

// noteKey notes where the key just added is in run, as resp wrote it,
// and counts it.
func (a *Args) noteKey(sp cmds.Span) {
	if a.nk < len(a.keyAt) {
		a.keyAt[a.nk] = sp
	} else {
		a.more = append(a.more, sp)
	}
	a.nk++
}

// copyOf makes a a copy of b (nil: empty), keeping a's memory.
func (a *Args) copyOf(b *Args) {
	a.Reset()
	if b == nil {
		return
	}
	a.run.AddArgs(&b.run)
	a.nk, a.keyAt = b.nk, b.keyAt
	a.more = append(a.more, b.more...)
}

// key returns where key i is in run.
func (a *Args) key(i int) cmds.Span {
	if i < len(a.keyAt) {
		return a.keyAt[i]
	}
	return a.more[i-len(a.keyAt)]
}

// Arg appends an argument (an ARGV[i] of the script).
func (a *Args) Arg(s string) {
	a.run.Add(s)
}

// ArgBytes appends an argument given as bytes; the bytes are copied.
func (a *Args) ArgBytes(b []byte) {
	a.run.AddBytes(b)
}

// ArgInt appends an integer argument, sent in decimal.
func (a *Args) ArgInt(i int64) {
	a.run.AddInt(i)
}

// Size returns the encoded size in bytes of the keys and arguments added.
func (a *Args) Size() int { return a.run.Size() }

// NumKeys returns the number of keys added.
func (a *Args) NumKeys() int { return a.nk }

// NumArgs returns the number of arguments added.
func (a *Args) NumArgs() int { return a.run.Len() - a.nk }

func (a *Args) mustBeKeys() {
	if a.run.Len() > a.nk {
		panic("dispatch: Args.Key after Args.Arg: every key must be added before the first argument")
	}
}

// emptyArgs stands for a nil *Args.
var emptyArgs Args

// appendCall appends one call of a script to cmds: head is the script's
// command head (EVALSHA and the SHA, or EMQ.<NAME>), then numkeys, the
// keys and the args. It returns the length of the array header resp
// wrote, for the call's fact (callFact).
func appendCall(cmds *resp.Cmds, head *resp.Args, nk int, tail *resp.Args) uint32 {
	h := cmds.BeginAt(head.Len() + 1 + tail.Len())
	cmds.Args(head)
	cmds.ArgInt(int64(nk))
	cmds.Args(tail)
	return uint32(h)
}

// buildCall encodes one call of a script as a command in buf's memory,
// and returns it with the length of its array header (see appendCall).
func buildCall(buf []byte, head *resp.Args, a *Args) (resp.Cmd, uint32) {
	if a == nil {
		a = &emptyArgs
	}
	b := resp.BuildCommand(buf, head.Len()+1+a.run.Len())
	h := uint32(b.Size())
	return b.Args(head).ArgInt(int64(a.nk)).Args(&a.run).Cmd(), h
}

// infoEvalsha is EVALSHA's entry in the command table: the executors know
// the command they send, so its facts need no look-up.
var infoEvalsha = cmds.Lookup("evalsha")
