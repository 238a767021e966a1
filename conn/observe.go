package conn

import (
	"sync"
	"time"

	"github.com/echomq/echomq-go/cmds"
)

// Observer is told of every command a connection sends for its user
// (not the handshake, nor what a Client sends on its own behalf, as
// CLIENT UNBLOCK), for metrics and tracing: CommandStart as the command is queued, CommandEnd once, when
// its reply arrives or when it ends without one. Set it in
// Options.Observer (a Client passes it to each of its connections);
// without one, a connection does no observing work at all. An Observer
// is one Hook (see ObserverHook), run after Options.Hooks.
//
// Its methods run on the goroutines that send commands and read replies,
// concurrently; they must be safe for concurrent use, must not block, and
// are called for every command, so they should be cheap.
type Observer interface {
	// CommandStart is called as cmd is queued for sending.
	CommandStart(cmd CommandInfo)
	// CommandEnd is called once for each CommandStart, took after it:
	// with err nil when the reply arrived, a *resp.ServerError when the
	// reply was an error (NOSCRIPT included), a *resp.ReplyTooLargeError
	// when it was skipped for breaking Options.Limits, and otherwise the
	// error that ended the command without a reply: the connection's fault (a
	// *BrokenError, ErrClosed), or what kept it from being sent (a
	// *CommandError, the caller's ctx.Err(), ErrNotConnected). A caller
	// that stops waiting does not end its command: its reply still
	// arrives, and ends it.
	CommandEnd(cmd CommandInfo, took time.Duration, err error)
}

// CommandInfo names a command for an [Observer] or a [Hook]. It is
// comparable: metrics may key series by it.
type CommandInfo struct {
	// Name is the command's name in upper case, without its subcommand:
	// "GET", "EVALSHA", "EMQ.ENQUEUE".
	Name string
	// Script is, for EVALSHA and EVALSHA_RO, the SHA1 the command names,
	// as sent; "" for other commands.
	Script string
}

// The Infos of the commands that name a script by its SHA1.
var (
	infoEvalsha   = cmds.Lookup("evalsha")
	infoEvalshaRO = cmds.Lookup("evalsha_ro")
)

// commandInfo names the command of f, encoded in raw: from its Info (the
// table's upper-case first word, a string made once) or, for a command
// the table does not know, its name as sent, upper-cased and interned.
func commandInfo(f *cmds.Fact, raw []byte) CommandInfo {
	var c CommandInfo
	if f.Info != nil {
		c.Name = f.Info.Words[0]
		if (f.Info == infoEvalsha || f.Info == infoEvalshaRO) && f.Arg1.Len > 0 {
			c.Script = intern(f.Arg1.Of(raw))
		}
		return c
	}
	if f.Name.Len == 0 {
		return CommandInfo{Name: "?"}
	}
	c.Name = internUpper(f.Name.Of(raw))
	return c
}

// The names and SHAs observed, interned so that observing allocates no
// string per command: at most maxInterned of them, then one per command.
var (
	internMu sync.RWMutex
	interned = map[string]string{}
)

const maxInterned = 4096

// intern returns b as a string, shared by every call with the same bytes.
func intern(b []byte) string {
	internMu.RLock()
	s, ok := interned[string(b)]
	internMu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	internMu.Lock()
	if len(interned) < maxInterned {
		interned[s] = s
	}
	internMu.Unlock()
	return s
}

// internUpper is intern of b in upper case.
func internUpper(b []byte) string {
	var buf [32]byte
	up := buf[:0]
	if len(b) > len(buf) {
		up = make([]byte, 0, len(b))
	}
	for _, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = append(up, c)
	}
	return intern(up)
}
