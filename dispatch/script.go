package dispatch

import (
	"github.com/echomq/echomq-go/resp"

	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// Script is a Lua script with its SHA1, computed once by NewScript. A
// Script is immutable and safe for concurrent use; create each one once
// (at package init, say) and share it.
type Script struct {
	name   string
	src    string
	sha    string
	native string // "EMQ." + upper-case name

	// Pre-encoded command heads, up to and excluding numkeys, and where
	// their arguments are in them, as resp wrote them.
	evalsha    resp.Args    // EVALSHA <sha>
	evalshaAt  [2]resp.Span // EVALSHA, <sha>
	nativeHead resp.Args    // EMQ.<NAME>
	nativeAt   resp.Span    // EMQ.<NAME>
}

// NewScript returns the script src named name. The name is what a native
// executor sends: "enqueue" becomes the command EMQ.ENQUEUE.
func NewScript(name, src string) *Script {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	native := "EMQ." + strings.ToUpper(name)
	sc := &Script{name: name, src: src, sha: sha, native: native}
	sc.evalshaAt[0] = sc.evalsha.AddSpan("EVALSHA")
	sc.evalshaAt[1] = sc.evalsha.AddSpan(sha)
	sc.nativeAt = sc.nativeHead.AddSpan(native)
	return sc
}

// bulk encodes s as a RESP bulk string.

// Name returns the script's name, e.g. "enqueue".
func (s *Script) Name() string { return s.name }

// SHA returns the lower-case hex SHA1 of the source, the name EVALSHA
// and SCRIPT LOAD use.
func (s *Script) SHA() string { return s.sha }

// Source returns the Lua source.
func (s *Script) Source() string { return s.src }

// NativeCommand returns the command a native executor sends in place of
// EVALSHA: "EMQ." followed by the upper-cased name.
func (s *Script) NativeCommand() string { return s.native }

// String returns the name and a short SHA, for logs.
func (s *Script) String() string { return s.name + "@" + s.sha[:8] }
