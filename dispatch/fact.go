package dispatch

import (
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// The facts of a call, computed from its pieces: dispatch encodes every
// call itself (buildCall, appendCall), so it knows the command (EVALSHA,
// or the script's EMQ.* command), where its name, second argument and
// keys are and how long it is, without reading the bytes again or
// looking anything up.

// digits is the length of n in decimal (n >= 0).
func digits(n int) int { return resp.HeaderLen(n) - 3 }

// callFact appends to keys the spans of a's keys in the call of s that
// buildCall or appendCall encodes (its native command when native) and
// returns the call's Fact, whose Keys view keys.
func callFact(s *Script, native bool, a *Args, keys []cmds.Span) (cmds.Fact, []cmds.Span) {
	if a == nil {
		a = &emptyArgs
	}
	head, name, in := &s.evalsha, "EVALSHA", infoEvalsha
	if native {
		head, name, in = &s.nativeHead, s.native, nil // EMQ.*: not in the table
	}
	at := uint32(resp.HeaderLen(head.Len() + 1 + a.run.Len()))
	f := cmds.Fact{Info: in}
	if in != nil {
		f.Kind = in.Kind
	}
	f.Name = cmds.Span{Off: at + uint32(resp.HeaderLen(len(name))), Len: uint32(len(name))}
	next := f.Name.Off + f.Name.Len + 2 // the second argument's header
	nkLen := digits(a.nk)
	if native {
		f.Arg1 = cmds.Span{Off: next + uint32(resp.HeaderLen(nkLen)), Len: uint32(nkLen)}
	} else {
		f.Arg1 = cmds.Span{Off: next + uint32(resp.HeaderLen(len(s.sha))), Len: uint32(len(s.sha))}
	}
	base := at + uint32(head.Size()+resp.HeaderLen(nkLen)+nkLen+2)
	f.Size = base + uint32(a.run.Size())
	if a.nk > 0 {
		start := len(keys)
		for i := range a.nk {
			k := a.key(i)
			keys = append(keys, cmds.Span{Off: base + k.Off, Len: k.Len})
		}
		f.Keys = keys[start:len(keys):len(keys)]
	}
	return f, keys
}
