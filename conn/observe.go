package conn

import (
	"sync"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Observer is told of every command a connection sends, for metrics and
// tracing: CommandStart as the command is queued, CommandEnd once, when
// its reply arrives or when it ends without one. Set it in
// Options.Observer (a Client passes it to each of its connections);
// without one, a connection does no observing work at all.
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

// CommandInfo names a command for an [Observer].
type CommandInfo struct {
	// Name is the command's name in upper case, without its subcommand:
	// "GET", "EVALSHA", "EMQ.ENQUEUE".
	Name string
	// Script is, for EVALSHA and EVALSHA_RO, the SHA1 the command names,
	// as sent; "" for other commands.
	Script string
}

// observed wraps the Handler of one submission for an Observer. It is
// pooled: Done recycles it before passing the outcome on.
type observed struct {
	h     wire.Handler
	obs   Observer
	start time.Time
	cmds  []CommandInfo
	next  int // replies delivered
}

var observedPool = sync.Pool{New: func() any { return new(observed) }}

// observe starts observing a submission: it names its commands and
// reports their start.
func observe(obs Observer, cmds wire.Cmds, h wire.Handler) *observed {
	o := observedPool.Get().(*observed)
	o.h, o.obs, o.next = h, obs, 0
	o.cmds = appendInfos(o.cmds[:0], cmds.B, cmds.N)
	o.start = time.Now()
	for _, c := range o.cmds {
		obs.CommandStart(c)
	}
	return o
}

// Reply reports the end of command i, then passes its reply on.
func (o *observed) Reply(i int, v resp.Value) {
	var err error
	if v.IsError() {
		err = v.Err()
	}
	if i < len(o.cmds) {
		o.obs.CommandEnd(o.cmds[i], time.Since(o.start), err)
	}
	o.next = i + 1
	o.h.Reply(i, v)
}

// Waits is the wrapped Handler's.
func (o *observed) Waits() bool { return o.h.Waits() }

// Done ends the commands left without a reply with err, recycles o and
// passes err on.
func (o *observed) Done(err error) {
	o.end(err)
	h := o.h
	o.release()
	h.Done(err)
}

// fail ends every command with err, for a submission that was never
// queued, and recycles o; the wrapped Handler is not called.
func (o *observed) fail(err error) {
	o.end(err)
	o.release()
}

func (o *observed) end(err error) {
	if o.next >= len(o.cmds) {
		return
	}
	took := time.Since(o.start)
	for _, c := range o.cmds[o.next:] {
		o.obs.CommandEnd(c, took, err)
	}
}

func (o *observed) release() {
	o.h, o.obs = nil, nil
	clear(o.cmds)
	if cap(o.cmds) > 1<<12 {
		o.cmds = nil
	}
	observedPool.Put(o)
}

// observeRefused reports the start and end, with err, of every command
// of a submission refused before any connection saw it.
func observeRefused(obs Observer, cmds wire.Cmds, err error) {
	o := observe(obs, cmds, nil)
	o.fail(err)
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
