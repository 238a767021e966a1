package wire

import (
	"sync"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// ErrMalformed is the error of a submission given without its facts
// whose bytes are not N commands encoded as arrays of bulk strings, as
// package resp encodes them. Nothing is sent.
var ErrMalformed = submit.ErrMalformed

// Facts gathers the facts of commands as they are encoded, beside the
// resp.Cmds that holds their bytes: the encoders of this module (a
// pipeline.Batch, a Stream, dispatch) fill one where they encode, so that
// no connection reads the bytes again. Strings and Bytes encode the
// command themselves (resp records where each argument goes as it
// writes it); Command, Made and Add take a fact its encoder made. The
// zero Facts is empty and ready; Reset keeps its memory.
type Facts struct {
	facts []cmds.Fact
	keys  []cmds.Span
	spans []resp.Span // where the arguments of the command being added are
	views [][]byte    // their views, for the look-up (cleared after)
}

// Reset removes every fact, keeping the memory.
func (l *Facts) Reset() {
	l.facts, l.keys = l.facts[:0], l.keys[:0]
}

// Len is the number of commands with facts.
func (l *Facts) Len() int { return len(l.facts) }

// List returns the facts, one per command; valid until the next Reset.
func (l *Facts) List() []cmds.Fact { return l.facts }

// Strings encodes the command args into c (c.Add) and adds its fact,
// made from where the encoder wrote each argument. It keeps nothing of
// args, so that an argument built by concatenation stays on the caller's
// stack. A command of no arguments adds no fact (c.Err says why).
func (l *Facts) Strings(c *resp.Cmds, args []string) {
	start := len(c.Bytes())
	l.spans = c.AddSpans(l.spans[:0], args...)
	l.facts, l.keys, l.views = cmds.AppendFactOf(l.facts, l.keys, c.Bytes()[start:], l.spans, l.views)
}

// Bytes is Strings for a command given as byte slices (c.AddBytes).
func (l *Facts) Bytes(c *resp.Cmds, args [][]byte) {
	start := len(c.Bytes())
	l.spans = c.AddBytesSpans(l.spans[:0], args...)
	l.facts, l.keys, l.views = cmds.AppendFactOf(l.facts, l.keys, c.Bytes()[start:], l.spans, l.views)
}

// Command adds the fact of a command built by package cmds.
func (l *Facts) Command(c cmds.Command) {
	l.facts, l.keys = c.AppendFact(l.facts, l.keys)
}

// Made adds the fact that make returns, given the memory to append its
// keys' spans to: a fact its encoder makes from the pieces it encoded
// (dispatch's calls), with no copy of its keys.
func (l *Facts) Made(make func(keys []cmds.Span) (cmds.Fact, []cmds.Span)) {
	var f cmds.Fact
	f, l.keys = make(l.keys)
	l.facts = append(l.facts, f)
}

// Add adds a fact made elsewhere (a builder's), copying its keys.
func (l *Facts) Add(f cmds.Fact) {
	if len(f.Keys) > 0 {
		start := len(l.keys)
		l.keys = append(l.keys, f.Keys...)
		f.Keys = l.keys[start:len(l.keys):len(l.keys)]
	}
	l.facts = append(l.facts, f)
}

// Encoded adds the facts of the commands of b, n encoded commands, by
// reading them (resp.SplitCommand): for commands encoded where nothing
// recorded their facts, a user's bytes (conn.CmdsOf's, a resp.Cmd given
// whole), or a lean Batch's raw run before its first typed command
// (see Sync).
func (l *Facts) Encoded(b []byte, n int) error {
	return l.encoded(nil, true, b, n)
}

// EncodedAs adds the fact of the one command encoded in b, whose Info the
// encoder knows (nil: one the table does not know), without looking its
// name up: a resp.Cmd whose command the caller knows.
func (l *Facts) EncodedAs(in *cmds.Info, b []byte) error {
	return l.encoded(in, false, b, 1)
}

func (l *Facts) encoded(in *cmds.Info, lookup bool, b []byte, n int) error {
	for range n {
		spans, size, ok := resp.SplitCommand(b, l.spans[:0])
		l.spans = spans
		if !ok || len(spans) == 0 {
			return ErrMalformed
		}
		if lookup {
			l.facts, l.keys, l.views = cmds.AppendFactOf(l.facts, l.keys, b[:size], spans, l.views)
		} else {
			l.facts, l.keys, l.views = in.AppendFactOf(l.facts, l.keys, b[:size], spans, l.views)
		}
		b = b[size:]
	}
	if len(b) != 0 {
		return ErrMalformed
	}
	return nil
}

// Sync adds the facts of the commands of c beyond those it has, and
// returns the submission of c with its facts. The commands without
// facts are those a lean encoder added without them (a Batch's raw
// commands, tested by name only while its Sender read no facts), which
// are read back once (Encoded) when a command that needs its fact joins
// them: the price of the lean path, paid only by such a batch.
func (l *Facts) Sync(c *resp.Cmds) (Cmds, error) {
	if err := c.Err(); err != nil {
		return Cmds{}, err
	}
	b, n := c.Bytes(), c.Len()
	if len(l.facts) < n {
		at := 0
		for _, f := range l.facts {
			at += int(f.Size)
		}
		if err := l.Encoded(b[at:], n-len(l.facts)); err != nil {
			return Cmds{}, err
		}
	}
	return Make(b, n, l.facts[:n:n]), nil
}

// factsPool holds the Facts of submissions given without theirs.
var factsPool = sync.Pool{New: func() any { return new(Facts) }}

// Known returns c with its facts: c itself when it has them, else c with
// the facts read from its bytes, the one place where a submission is
// parsed (one made by a user from raw resp types: conn.CmdsOf).
// Call release when the facts are no longer needed (when Send returns).
//
// Facts given are checked against the bytes they describe: one per
// command, their sizes adding up to len(B); else the error is
// ErrMalformed.
func Known(c Cmds) (Cmds, *Facts, error) {
	if c.Len() <= 0 {
		return c, nil, nil
	}
	if facts := c.Facts(); facts != nil {
		if len(facts) != c.Len() {
			return c, nil, ErrMalformed
		}
		n := 0
		for i := range facts {
			n += int(facts[i].Size)
		}
		if n != len(c.Bytes()) {
			return c, nil, ErrMalformed
		}
		return c, nil, nil
	}
	l := factsPool.Get().(*Facts)
	if err := l.Encoded(c.Bytes(), c.Len()); err != nil {
		Release(l)
		return c, nil, err
	}
	return sub.Make(c.Bytes(), c.Len(), l.facts, false, sub.Seen(c)), l, nil
}

// ForGuard returns c with what a connection's guard needs: c itself when
// it has its facts (checked, as Known does) or is Plain without them,
// else c with its facts read from its bytes (see Known).
func ForGuard(c Cmds) (Cmds, *Facts, error) {
	if c.Plain() && c.Len() > 0 {
		return c, nil, nil
	}
	return Known(c)
}

// wanted is set by package conn (SetWanted) to tell, of its own Conn
// and Client, whether they read the facts of a Plain submission.
var wanted = func(Sender) (wants, known bool) { return false, false }

// SetWanted sets what WantsFacts asks first: for a Sender it knows
// (known), whether it wants the facts of a Plain submission. Package
// conn calls it in its init, before any submission.
func SetWanted(f func(s Sender) (wants, known bool)) { wanted = f }

// WantsFacts reports whether s reads the facts of a submission for more
// than its guard (hooks, a cluster's routing), so that an encoder that
// knows its Sender (dispatch's executors) makes them only for one that
// does. Only the module's own connections without hooks want none; any
// other Sender, a user's among them, is taken to want them.
func WantsFacts(s Sender) bool {
	if w, known := wanted(s); known {
		return w
	}
	return true
}

// checkShared is set by package conn (SetCheckShared): what a shared
// connection's guard would refuse of a submission with its facts.
var checkShared = func(Cmds, int) error { return nil }

// SetCheckShared sets what CheckShared runs. Package conn calls it in its
// init.
func SetCheckShared(f func(w Cmds, maxArg int) error) { checkShared = f }

// CheckShared returns the error a shared connection (a conn.Client's,
// Options.MaxArg maxArg, 0 the default) would refuse w with, its facts
// known, or nil: for a Sender that splits a submission between
// connections (a cluster's primaries), so that a part refused by one is
// refused before any other is sent.
func CheckShared(w Cmds, maxArg int) error { return checkShared(w, maxArg) }

// NameOf returns the name (the first argument) of the command encoded at
// the start of b, or nil when b does not start with an array of bulk
// strings.
func NameOf(b []byte) []byte {
	n, rest, ok := header(b, '*')
	if !ok || n == 0 {
		return nil
	}
	return Bulk(rest)
}

// Bulk returns the bulk string at the start of b (its bytes, without the
// header), or nil when b does not start with one.
func Bulk(b []byte) []byte {
	size, rest, ok := header(b, '$')
	if !ok || len(rest) < size {
		return nil
	}
	return rest[:size:size]
}

// ArgOver finds the first argument longer than max in the commands
// encoded in b: the offset of its command and its length. Bulk headers
// are read, their bytes skipped; bytes that are not commands end the
// search (the guard refuses them elsewhere).
func ArgOver(b []byte, max int) (at, size int, over bool) {
	i := 0
	for i < len(b) {
		n, rest, ok := header(b[i:], '*')
		if !ok {
			return 0, 0, false
		}
		j := len(b) - len(rest)
		for range n {
			l, rest, ok := header(b[j:], '$')
			if !ok {
				return 0, 0, false
			}
			if l > max {
				return i, l, true
			}
			j = len(b) - len(rest) + l + 2
			if j > len(b) {
				return 0, 0, false
			}
		}
		i = j
	}
	return 0, 0, false
}

// Release gives back the Facts Known returned (nil is ignored).
func Release(l *Facts) {
	if l == nil {
		return
	}
	l.Reset()
	if cap(l.facts) > 1<<12 {
		*l = Facts{}
	}
	factsPool.Put(l)
}
