package conn

import (
	"sync"
	"time"
)

// Observer is told of every command a connection sends, for metrics and
// tracing: CommandStart as the command is queued, CommandEnd once, when
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

// appendInfos appends the CommandInfo of each of the n commands encoded
// back to back in b (arrays of bulk strings, as package resp encodes
// them). A command it cannot read is named "?".
func appendInfos(dst []CommandInfo, b []byte, n int) []CommandInfo {
	for range n {
		var c CommandInfo
		var nargs int
		var ok bool
		if nargs, b, ok = header(b, '*'); !ok || nargs < 1 {
			return unknown(dst, n)
		}
		for i := range nargs {
			var arg []byte
			if arg, b, ok = bulk(b); !ok {
				return unknown(dst, n)
			}
			switch {
			case i == 0:
				c.Name = internUpper(arg)
			case i == 1 && (c.Name == "EVALSHA" || c.Name == "EVALSHA_RO"):
				c.Script = intern(arg)
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// unknown pads dst to n commands named "?".
func unknown(dst []CommandInfo, n int) []CommandInfo {
	for len(dst) < n {
		dst = append(dst, CommandInfo{Name: "?"})
	}
	return dst
}

// header reads "<kind><decimal>\r\n" at the start of b.
func header(b []byte, kind byte) (int, []byte, bool) {
	if len(b) < 4 || b[0] != kind {
		return 0, b, false
	}
	end := 1
	for end < len(b) && b[end] != '\r' {
		end++
	}
	if end+1 >= len(b) || b[end+1] != '\n' {
		return 0, b, false
	}
	v := 0
	for _, d := range b[1:end] {
		if d < '0' || d > '9' || v > 1<<40 {
			return 0, b, false
		}
		v = v*10 + int(d-'0')
	}
	return v, b[end+2:], end > 1
}

// bulk reads one bulk string at the start of b.
func bulk(b []byte) (arg, rest []byte, ok bool) {
	size, b, ok := header(b, '$')
	if !ok || len(b) < size+2 {
		return nil, b, false
	}
	return b[:size], b[size+2:], true
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
