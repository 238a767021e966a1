package dispatch

import (
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// The facts of a call, made from what its encoder recorded: dispatch
// encodes every call itself (buildCall, appendCall) from pieces resp
// wrote and placed (the script's head, its spans noted once by
// NewScript; the keys, each noted by Args as it is added; the array
// header's length, returned by the encoder), so it knows the command
// (EVALSHA, or the script's EMQ.* command), where its name, second
// argument and keys are and how long it is, without reading the bytes
// or computing a header's length itself.

// callFact appends to keys the spans of a's keys in the call of s that
// buildCall or appendCall encoded (its native command when native)
// behind an array header of hdr bytes, and returns the call's Fact,
// whose Keys view keys.
func callFact(s *Script, native bool, a *Args, hdr uint32, keys []cmds.Span) (cmds.Fact, []cmds.Span) {
	if a == nil {
		a = &emptyArgs
	}
	head, name, in := &s.evalsha, s.evalshaAt[0], infoEvalsha
	if native {
		head, name, in = &s.nativeHead, s.nativeAt, nil // EMQ.*: not in the table
	}
	f := cmds.Fact{Info: in}
	if in != nil {
		f.Kind = in.Kind
	}
	f.Name = name.Shift(hdr)
	at := hdr + uint32(head.Size()) // numkeys, as resp writes it
	nk, nkSize := resp.BulkIntSpan(int64(a.nk))
	if native {
		f.Arg1 = nk.Shift(at)
	} else {
		f.Arg1 = s.evalshaAt[1].Shift(hdr)
	}
	base := at + uint32(nkSize) // the keys, then the args
	f.Size = base + uint32(a.run.Size())
	if a.nk > 0 {
		start := len(keys)
		for i := range a.nk {
			keys = append(keys, a.key(i).Shift(base))
		}
		f.Keys = keys[start:len(keys):len(keys)]
	}
	return f, keys
}
