package dispatch

import "github.com/echomq/echomq-go/resp"

// Args builds the KEYS and ARGV of one script call, keys first. Each key
// and argument is encoded as a RESP bulk string as it is added, so a call
// is later written with one copy. An Args is reusable: Reset keeps its
// memory, and in steady state adding allocates nothing.
//
// Adding a key after an argument panics: EVALSHA takes every key before
// the first argument. The zero Args is empty and ready. An Args is not
// safe for concurrent use.
type Args struct {
	enc []byte // the keys' then the args' bulk strings
	nk  int
	na  int
}

// Reset removes every key and argument, keeping the memory.
func (a *Args) Reset() { a.enc, a.nk, a.na = a.enc[:0], 0, 0 }

// Key appends a key (a KEYS[i] of the script).
func (a *Args) Key(k string) {
	a.mustBeKeys()
	a.enc = resp.AppendBulkString(a.enc, k)
	a.nk++
}

// KeyBytes appends a key given as bytes; the bytes are copied.
func (a *Args) KeyBytes(k []byte) {
	a.mustBeKeys()
	a.enc = resp.AppendBulk(a.enc, k)
	a.nk++
}

// Arg appends an argument (an ARGV[i] of the script).
func (a *Args) Arg(s string) {
	a.enc = resp.AppendBulkString(a.enc, s)
	a.na++
}

// ArgBytes appends an argument given as bytes; the bytes are copied.
func (a *Args) ArgBytes(b []byte) {
	a.enc = resp.AppendBulk(a.enc, b)
	a.na++
}

// ArgInt appends an integer argument, sent in decimal.
func (a *Args) ArgInt(i int64) {
	a.enc = resp.AppendBulkInt(a.enc, i)
	a.na++
}

// NumKeys returns the number of keys added.
func (a *Args) NumKeys() int { return a.nk }

// NumArgs returns the number of arguments added.
func (a *Args) NumArgs() int { return a.na }

func (a *Args) mustBeKeys() {
	if a.na > 0 {
		panic("dispatch: Args.Key after Args.Arg: every key must be added before the first argument")
	}
}

// appendCall appends one call of a script: head is the script's encoded
// command head (EVALSHA and the SHA, or EMQ.<NAME>), fixed the number of
// arguments it holds, then numkeys and the pre-encoded tail.
func appendCall(dst []byte, head string, fixed, nk, na int, tail []byte) []byte {
	dst = resp.AppendArrayHeader(dst, fixed+1+nk+na)
	dst = append(dst, head...)
	dst = resp.AppendBulkInt(dst, int64(nk))
	return append(dst, tail...)
}

// Fixed leading arguments of each command form, numkeys excluded.
const (
	evalshaFixed = 2 // EVALSHA <sha>
	nativeFixed  = 1 // EMQ.<NAME>
)

// appendEvalSHA appends "EVALSHA <sha> numkeys keys… args…".
func appendEvalSHA(dst []byte, s *Script, a *Args) []byte {
	if a == nil {
		return appendCall(dst, s.evalsha, evalshaFixed, 0, 0, nil)
	}
	return appendCall(dst, s.evalsha, evalshaFixed, a.nk, a.na, a.enc)
}

// appendNative appends "EMQ.<NAME> numkeys keys… args…".
func appendNative(dst []byte, s *Script, a *Args) []byte {
	if a == nil {
		return appendCall(dst, s.nativeHead, nativeFixed, 0, 0, nil)
	}
	return appendCall(dst, s.nativeHead, nativeFixed, a.nk, a.na, a.enc)
}
