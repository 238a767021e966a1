package cmds

import (
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/echomq/echomq-go/resp"
)

// Span is where one argument of an encoded command is: bytes
// [Off, Off+Len) of the command's encoding (the RESP array of bulk
// strings, from its '*'), as its encoder recorded it while writing
// (package resp, which knows the layout).
type Span = resp.Span

// Fact is what a connection, a cluster router and the hooks need to know
// about one encoded command, known where it is encoded (a builder's
// Command.Fact, or Inspect for a command given as arguments), so that
// nobody parses the command's bytes again.
type Fact struct {
	// Info is the command's entry in the generated table, nil for a
	// command the table does not know (a module's, EMQ.*, a typo, a
	// container such as CLIENT with a subcommand it lacks).
	Info *Info
	// Kind is the command's kind refined by its arguments: XREAD is
	// Blocking only with BLOCK, CLIENT REPLY is ReplyModel only with OFF
	// or SKIP; SYNC, PSYNC and REPLCONF, which the table leaves out, are
	// ReplyModel.
	Kind Kind
	// Timeout is how long a Blocking command may wait on the server; 0
	// means for ever (or not Blocking, or a timeout the server would
	// refuse at once).
	Timeout time.Duration
	// Size is the length in bytes of the command's encoding: the next
	// command of a submission starts Size bytes later.
	Size uint32
	// Name is the command's first argument, its name as sent.
	Name Span
	// Arg1 is its second argument (EVALSHA's SHA1, a subcommand), the
	// zero Span when it has none.
	Arg1 Span
	// Keys are its keys, then its shard channels (SPUBLISH's), where
	// they are in its encoding. The slice views memory of whoever made
	// the Fact: copy the Fact's Keys to keep it past that.
	Keys []Span
}

// Key returns key i of the command encoded in cmd.
func (f *Fact) Key(cmd []byte, i int) []byte { return f.Keys[i].Of(cmd) }

// Fact returns what is known about the command, its key positions as
// offsets in Cmd().Bytes(). Its Keys view the Builder's memory, valid
// until the Builder starts the next command. A command with an Err has
// the zero Fact.
func (c Command) Fact() Fact {
	var f Fact
	if b := c.ok(); b != nil {
		b.spans2 = c.fill(&f, b.spans2[:0])
	}
	return f
}

// AppendFact appends the command's Fact to facts and its keys' spans to
// keys (the Fact's Keys view them), and returns both: Fact without a copy
// of the keys, for a list of commands that owns its memory (a pipeline's).
// A command with an Err appends nothing.
func (c Command) AppendFact(facts []Fact, keys []Span) ([]Fact, []Span) {
	if b := c.ok(); b == nil || len(b.built.b) == 0 {
		return facts, keys
	}
	facts = append(facts, Fact{})
	return facts, c.fill(&facts[len(facts)-1], keys)
}

// fill sets *f to the command's Fact, its keys' spans appended to keys,
// from what the Builder recorded as it wrote the command.
func (c *Command) fill(f *Fact, keys []Span) []Span {
	bd := c.ok()
	if bd == nil {
		return keys
	}
	b := bd.built.b
	if len(b) == 0 {
		return keys
	}
	in := bd.info
	f.Info, f.Kind, f.Timeout, f.Size = in, bd.kind, bd.timeout, uint32(len(b))
	// Every offset the Builder noted is one in its main run, whose tail
	// the command's bytes are (or, past maxHeader arguments, a copy of
	// it behind a longer header): the same shift for each.
	shift := uint32(len(bd.main.b) - len(b))
	words := uint32(headRoom) - shift // where the words start in b
	f.Name = in.wordSpans[0].Shift(words)
	switch {
	case len(in.Words) > 1:
		f.Arg1 = in.wordSpans[1].Shift(words)
	case bd.nargs == 0:
	case len(bd.keys) > 0 && int(bd.keys[0].pos) == 1:
		f.Arg1 = Span{Off: bd.keys[0].off - shift, Len: bd.keys[0].n}
	case len(bd.chans) > 0 && int(bd.chans[0].pos) == 1:
		f.Arg1 = Span{Off: bd.chans[0].off - shift, Len: bd.chans[0].n}
	default:
		// Written by whichever option came first in the syntax: its
		// place is known, its length is in the header resp wrote.
		f.Arg1 = resp.BulkAt(b, words+uint32(len(in.words)))
	}
	if in == infoClientReplyP || in == infoScriptDebugP {
		f.Kind = refineLast(f.Kind, in, unsafe.Slice(unsafe.StringData(bd.mode), len(bd.mode)))
	}
	start := len(keys)
	for _, k := range bd.keys {
		keys = append(keys, Span{Off: k.off - shift, Len: k.n})
	}
	for _, k := range bd.chans {
		keys = append(keys, Span{Off: k.off - shift, Len: k.n})
	}
	if len(keys) > start {
		f.Keys = keys[start:len(keys):len(keys)]
	}
	return keys
}

// The Infos whose kind depends on their arguments.
var (
	infoClientReplyP = &infoClientReply
	infoScriptDebugP = &infoScriptDebug
	infoXreadP       = &infoXread
	infoXreadgroupP  = &infoXreadgroup
	infoBlmpopP      = &infoBlmpop
	infoBzmpopP      = &infoBzmpop
)

// refineLast refines the kind of CLIENT REPLY (ReplyModel only with OFF
// or SKIP) and SCRIPT DEBUG (ReplyModel but with NO) by their mode.
func refineLast(k Kind, in *Info, mode []byte) Kind {
	switch in {
	case infoClientReplyP:
		if !equalFold(mode, "OFF") && !equalFold(mode, "SKIP") {
			k &^= ReplyModel
		}
	case infoScriptDebugP:
		if equalFold(mode, "NO") {
			k &^= ReplyModel
		}
	}
	return k
}

// Inspect returns the Fact of the command whose arguments are args
// (args[0] its name; a subcommand after it), as package resp encodes it
// (an array of bulk strings), looking its name up in the generated table
// in any case. The Fact's Keys are appended to keys, which is returned.
// No args is the zero Fact. For a command this module encodes, the
// encoder records where it wrote each argument instead (AppendFactOf).
func Inspect(args [][]byte, keys []Span) (Fact, []Span) {
	var f Fact
	if len(args) == 0 {
		return f, keys
	}
	var at [16]Span
	spans, size := resp.CommandSpans(at[:0], args)
	keys = lookupArgs(args).fill(&f, args, spans, uint32(size), keys)
	return f, keys
}

// AppendInspect appends the Fact of the command whose arguments are args
// to facts and its keys' spans to keys, as Inspect finds them, without
// copying the Fact: for a list of commands that owns its memory (a
// pipeline's), as Command.AppendFact. No args appends the zero Fact.
func AppendInspect(facts []Fact, keys []Span, args [][]byte) ([]Fact, []Span) {
	f, keys := Inspect(args, keys)
	return append(facts, f), keys
}

// Fact returns the Fact of a command of this Info given as args (args[0]
// its name), as Inspect does but without looking the name up: in is
// trusted to be the command's. A nil Info is a command the table does not
// know.
func (in *Info) Fact(args [][]byte, keys []Span) (Fact, []Span) {
	var f Fact
	if len(args) == 0 {
		return f, keys
	}
	var at [16]Span
	spans, size := resp.CommandSpans(at[:0], args)
	keys = in.fill(&f, args, spans, uint32(size), keys)
	return f, keys
}

// AppendFact is AppendInspect for a command of this Info: its name is
// not looked up.
func (in *Info) AppendFact(facts []Fact, keys []Span, args [][]byte) ([]Fact, []Span) {
	f, keys := in.Fact(args, keys)
	return append(facts, f), keys
}

// AppendFactOf appends to facts the Fact of the command encoded in enc
// (the whole command, its bytes and no more), whose arguments its
// encoder wrote at spans (as resp's AppendCommandSpans records them),
// looking its name up; its keys' spans go to keys. Nothing is read
// from enc but the arguments at spans. views is scratch memory for the
// arguments' views, returned for reuse (cleared: it keeps nothing of
// enc). A command of no arguments appends nothing.
func AppendFactOf(facts []Fact, keys []Span, enc []byte, spans []Span, views [][]byte) ([]Fact, []Span, [][]byte) {
	return appendFactOf(nil, true, facts, keys, enc, spans, views)
}

// AppendFactOf is AppendFactOf for a command of this Info (nil: one the
// table does not know): its name is not looked up.
func (in *Info) AppendFactOf(facts []Fact, keys []Span, enc []byte, spans []Span, views [][]byte) ([]Fact, []Span, [][]byte) {
	return appendFactOf(in, false, facts, keys, enc, spans, views)
}

func appendFactOf(in *Info, lookup bool, facts []Fact, keys []Span, enc []byte, spans []Span, views [][]byte) ([]Fact, []Span, [][]byte) {
	if len(spans) == 0 {
		return facts, keys, views
	}
	views = views[:0]
	for _, sp := range spans {
		views = append(views, sp.Of(enc))
	}
	if lookup {
		in = lookupArgs(views)
	}
	facts = append(facts, Fact{})
	keys = in.fill(&facts[len(facts)-1], views, spans, uint32(len(enc)), keys)
	clear(views)
	return facts, keys, views[:0]
}

// fill sets the zero *f to the Fact of a command of this Info given as
// args (at least its name), whose encoding of size bytes has them at
// spans; its keys' spans are appended to keys.
func (in *Info) fill(f *Fact, args [][]byte, spans []Span, size uint32, keys []Span) []Span {
	f.Info, f.Size, f.Name = in, size, spans[0]
	if len(spans) > 1 {
		f.Arg1 = spans[1]
	}
	if in == nil {
		// Left out of the table, internal to replication: SYNC and PSYNC
		// make the connection a replication stream, REPLCONF ACK and
		// GETACK are answered with nothing.
		if equalFold(args[0], "SYNC") || equalFold(args[0], "PSYNC") || equalFold(args[0], "REPLCONF") {
			f.Kind = ReplyModel | NoKeys
		}
		return keys
	}
	f.Kind = in.Kind
	if in.Kind&(Blocking|ReplyModel) != 0 {
		f.Kind, f.Timeout = refine(in, f.Kind, args)
	}
	if in.Kind&NoKeys == 0 {
		var idx [16]int32
		pos := in.appendKeys(args, idx[:0], true) // keys, then shard channels
		start := len(keys)
		for _, p := range pos {
			if int(p) < len(spans) {
				keys = append(keys, spans[p])
			}
		}
		if len(keys) > start {
			f.Keys = keys[start:len(keys):len(keys)]
		}
	}
	return keys
}

// refine computes the kind and timeout of a Blocking or ReplyModel
// command from its arguments.
func refine(in *Info, k Kind, args [][]byte) (Kind, time.Duration) {
	switch in {
	case infoClientReplyP, infoScriptDebugP:
		if len(args) < 3 {
			return k &^ ReplyModel, 0
		}
		return refineLast(k, in, args[2]), 0
	case infoXreadP, infoXreadgroupP:
		// As the servers parse the options: each takes its values, so a
		// group or consumer named STREAMS or BLOCK is a name.
		for i := 1; i+1 < len(args); i++ {
			switch {
			case equalFold(args[i], "STREAMS"):
				return k &^ Blocking, 0
			case equalFold(args[i], "BLOCK"):
				return k, millis(args[i+1])
			case equalFold(args[i], "COUNT"):
				i++
			case equalFold(args[i], "GROUP"):
				i += 2
			}
		}
		return k &^ Blocking, 0
	}
	if k&Blocking == 0 {
		return k, 0
	}
	switch in.Timeout {
	case DecimalSeconds:
		if in == infoBlmpopP || in == infoBzmpopP {
			if len(args) > 1 {
				return k, seconds(args[1])
			}
			return k, 0
		}
		return k, seconds(args[len(args)-1])
	case Milliseconds:
		return k, millis(args[len(args)-1])
	case Seconds:
		return k, wholeSeconds(args[len(args)-1])
	}
	return k, 0
}

// seconds reads a timeout in seconds (a decimal, maybe fractional); a
// text the server would refuse counts as no timeout, which is the safe
// side: the server answers it with an error at once.
func seconds(b []byte) time.Duration {
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	if err != nil || f <= 0 || f > math.MaxInt64/float64(time.Second) {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// millis reads a timeout in milliseconds.
func millis(b []byte) time.Duration {
	n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(b), len(b)), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/int64(time.Millisecond) {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// wholeSeconds reads a timeout in whole seconds.
func wholeSeconds(b []byte) time.Duration {
	n, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(b), len(b)), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/int64(time.Second) {
		return 0
	}
	return time.Duration(n) * time.Second
}

// equalFold reports whether b is upper, ignoring the case of ASCII
// letters; upper is in upper case.
func equalFold(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// The name index: the generated commands by the first letter and length
// of their first word, so that a look-up compares a name with one or two
// candidates, without a map or an allocation.
type nameEntry struct {
	word string  // the first word, upper case
	info *Info   // a command without subcommands
	subs []*Info // a container's subcommands
}

const maxIndexed = 24

var nameIndex [27][maxIndexed + 1][]nameEntry

func letter(c byte) int {
	c |= 0x20
	if 'a' <= c && c <= 'z' {
		return int(c - 'a')
	}
	return 26
}

func init() {
	for _, in := range commands {
		w := in.Words[0]
		if len(w) > maxIndexed {
			continue
		}
		bucket := &nameIndex[letter(w[0])][len(w)]
		i := 0
		for i < len(*bucket) && (*bucket)[i].word != w {
			i++
		}
		if i == len(*bucket) {
			*bucket = append(*bucket, nameEntry{word: w})
		}
		e := &(*bucket)[i]
		if len(in.Words) == 1 {
			e.info = in
		} else {
			e.subs = append(e.subs, in)
		}
	}
}

// lookupArgs finds the Info of the command args name, its subcommand
// included, or nil.
func lookupArgs(args [][]byte) *Info {
	name := args[0]
	if len(name) == 0 || len(name) > maxIndexed {
		return nil
	}
	for i := range nameIndex[letter(name[0])][len(name)] {
		e := &nameIndex[letter(name[0])][len(name)][i]
		if !equalFold(name, e.word) {
			continue
		}
		if e.subs == nil || len(args) < 2 {
			return e.info
		}
		for _, s := range e.subs {
			if equalFold(args[1], s.Words[1]) {
				return s
			}
		}
		return e.info
	}
	return nil
}
