package cmds

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/internal/rawcmd"
	hashslot "github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/resp"
)

// Kind is what a command is, as a set of bits: taken from the server's
// COMMAND INFO flags and from what the command does to its connection.
type Kind uint16

// The kinds. A command may have several (SET is Write; BLPOP is Write and
// Blocking; SUBSCRIBE is ReplyModel, PubSub and NoKeys).
const (
	// ReadOnly commands only read data (COMMAND INFO flag readonly).
	ReadOnly Kind = 1 << iota
	// Write commands may change data (COMMAND INFO flag write).
	Write
	// Blocking commands may wait on the server before their reply, for
	// Command.Timeout (0: for ever). A command that blocks only with an
	// option (XREAD BLOCK) is Blocking only when built with it.
	Blocking
	// ReplyModel commands change how the server replies on the connection
	// (subscriber mode, MONITOR's feed, CLIENT REPLY, a new protocol or
	// database or user, the connection's end): a connection shared by
	// callers cannot carry them.
	ReplyModel
	// NoKeys commands take no keys (no key specs).
	NoKeys
	// MovableKeys commands have keys whose positions depend on their
	// arguments (COMMAND INFO flag movablekeys); Command.KeyPos has them
	// all the same, known at build time.
	MovableKeys
	// Admin commands are administrative (COMMAND INFO flag admin).
	Admin
	// PubSub commands belong to publish/subscribe (COMMAND INFO flag
	// pubsub).
	PubSub
	// TxMulti opens a transaction (MULTI).
	TxMulti
	// TxEnd ends a transaction (EXEC, DISCARD).
	TxEnd
	// TxWatch makes a later EXEC depend on keys (WATCH).
	TxWatch
	// Nondeterministic commands may answer two calls on the same data
	// differently (COMMAND INFO tip nondeterministic_output: TTL,
	// RANDOMKEY, SRANDMEMBER, TIME); a reply that only lists in an order
	// of the server's (HGETALL, SMEMBERS) is not.
	Nondeterministic
)

// Has reports whether k has every bit of o.
func (k Kind) Has(o Kind) bool { return k&o == o }

// Unit is how a duration argument is written.
type Unit uint8

// The units of duration arguments.
const (
	// NoUnit: the command has no duration argument of this role.
	NoUnit Unit = iota
	// Seconds: whole seconds, rounded away from zero.
	Seconds
	// Milliseconds: whole milliseconds, rounded away from zero.
	Milliseconds
	// DecimalSeconds: seconds with up to three decimals (milliseconds
	// rounded up), as the blocking list and sorted-set commands take
	// their timeout; a negative one in whole seconds, away from zero.
	DecimalSeconds
)

// Info is what is known about a command before it is built: its name, its
// kind, where its timeout is, what its reply is. It is generated from the
// servers' command tables and never changes.
type Info struct {
	// Name is the command's name as the server lists it in COMMAND LIST:
	// lower case, a subcommand after "|" ("client|kill").
	Name string
	// Words are the name as sent: "CLIENT", "KILL".
	Words []string
	// Kind is the command's static kind; Command.Kind refines it with
	// the options a command was built with.
	Kind Kind
	// Timeout is the unit of the argument that bounds how long a
	// Blocking command waits, NoUnit when it has none.
	Timeout Unit
	// Reply is the shape of the reply, from the reply table of cmdgen
	// (ReplyUnknown when the table has no entry).
	Reply Shape
	// Servers lists the servers whose command table has the command,
	// "redis-7.0.15" and "valkey-8.0.1".
	Servers []string

	words    []byte   // Words, encoded once (bulk strings)
	slots    int      // argument slots, in the order they are sent
	required uint64   // slots that must be set
	multi    uint64   // slots that take one more run per call
	dep      []int8   // slot → the slot that must be set with it, or -1
	reqIf    []int8   // slot → the slot that needs it set, or -1
	missing  []string // slot → the option name, for errors
	alt      []int8   // slot → the alternative of its dep's choice it belongs to, or -1 (nil: none)
	altName  []string // slot → that alternative's token, for errors
	timeout  int      // the timeout slot, or -1

	keys   []keySpec // the key specs (keyspec.go)
	proc   keysProc  // the servers' own key finder, where the specs fall short
	policy Policy
	agg    Aggregate
}

// byName finds an Info by its name.
var byName = make(map[string]*Info, len(commands))

// Encode the names once; index them.
func init() {
	for _, in := range commands {
		for _, w := range in.Words {
			in.words = resp.AppendBulkString(in.words, w)
		}
		byName[in.Name] = in
	}
}

// Lookup returns the Info of a generated command by its COMMAND LIST
// name, in lower case with its subcommand after "|" ("get",
// "client|kill"), or nil.
func Lookup(name string) *Info { return byName[name] }

// Errors of commands built without what they need. They are never sent.
var (
	// ErrMissing is matched (errors.Is) by the error of a command built
	// without a required choice (XADD without an ID choice).
	ErrMissing = errors.New("cmds: command built without a required argument")
	// ErrAlone is matched by the error of a command built with an option
	// but without the option it belongs to (XADD's LIMIT without MAXLEN).
	ErrAlone = errors.New("cmds: option given without the option it belongs to")
	// ErrNaN is matched by the error of a command given NaN for a number
	// (a score, an increment, a coordinate): no server takes it.
	ErrNaN = errors.New("cmds: NaN is not a number the server takes")
)

type buildError struct {
	kind error
	cmd  string
	opt  string
}

func (e *buildError) Error() string { return e.kind.Error() + ": " + e.cmd + ": " + e.opt }
func (e *buildError) Unwrap() error { return e.kind }

// arg is one argument of a command built out of order: a static token or
// bytes in raw.
type arg struct {
	tok    string
	off, n uint32
	kind   uint8 // isKey, isChannel or 0
}

// What an argument is, for routing.
const (
	isKey     = 1
	isChannel = 2 // a shard channel: routed like a key, not a key
)

// keyRef is a key: its index among the arguments, its position among
// those sent, and where its bytes are: an offset in main (in its late
// run, for a late run's, until the run joins main).
type keyRef struct {
	arg, pos int32
	off, n   uint32
}

// maxSlots bounds the argument slots of a command (cmdgen checks it).
const maxSlots = 64

// maxLate bounds the required arguments after options (cmdgen checks
// it).
const maxLate = 4

// lateKey is a key (or shard channel) of a late run.
type lateKey struct {
	run  int
	kind uint8
	k    keyRef
}

// span is a run of arguments given for one slot.
type span struct {
	slot       int32 // -1: replaced
	start, end uint32
}

// Builder builds commands into memory it reuses: once its buffers have
// grown to the size of the commands built, building allocates nothing.
// Each command's builder (b.Set(key, value), …) takes the Builder, its
// options may be given in any order, and Build returns the Command,
// encoded in the order the server wants.
//
// A Command views the Builder's memory: it is valid until the Builder
// starts the next command. A Builder is not safe for concurrent use; the
// zero Builder is ready.
type Builder struct {
	// While the options come in the order of the syntax (the common
	// case), the arguments are encoded as they come, in main, after
	// room left for the array header: build writes the header in front
	// of them once their count is known, and the command is main's own
	// bytes. The first option out of order (or a choice made again)
	// spills them into raw and args, from which build writes them into
	// main in slot order.
	ordered bool
	inLate  bool // the constructor is writing late run nlate-1
	main    run
	// Required arguments after options (ZADD's members) are encoded at
	// once into late runs, and join main when a later slot opens or at
	// build.
	late     [maxLate]run
	lateSlot [maxLate]int
	nlate    int // late runs written
	flushed  int // late runs moved to main
	lateKeys []lateKey
	// In order, a slot's arguments run from begin[slot] to the begin of
	// the next slot set (or the end); out of order, spans say where each
	// run of a slot's arguments is in args.
	begin   [maxSlots]uint32
	raw     []byte // out of order: every argument's bytes
	args    []arg  // out of order: the arguments
	spans   []span
	keys    []keyRef
	chans   []keyRef // shard channels
	set     uint64
	nargs   int
	cur     int // index in spans of the open span, or -1
	last    int // the slot opened last
	timeout time.Duration
	// The command built last: its number (Command.gen), its Info, its
	// encoded form and kind, or why it cannot be sent.
	gen    uint32
	info   *Info
	cmd    resp.Cmd
	kind   Kind
	err    error
	bad    string // why an argument is missing: the zero choice, or none of many
	nan    bool   // a float argument was NaN (bad says so)
	big    []byte // a command of more than maxHeader arguments
	num    [40]byte
	spans2 []Span // Command.Fact's scratch: its Keys
	// chosen is, for a choice among blocks with options of their own
	// (Info.alt), which alternative its slot was given last (B.choose):
	// read only for a slot set, which the alternative's method set.
	chosen [maxSlots]uint8
}

// run is a run of encoded arguments (bulk strings) and their count.
type run struct {
	b []byte
	n int
}

func (r *run) add(s string)      { r.b = resp.AppendBulkString(r.b, s); r.n++ }
func (r *run) addBytes(p []byte) { r.b = resp.AppendBulk(r.b, p); r.n++ }
func (r *run) addInt(i int64)    { r.b = resp.AppendBulkInt(r.b, i); r.n++ }
func (r *run) reset()            { r.b, r.n = r.b[:0], 0 }

// headRoom is the room main keeps in front of the arguments for the
// array header: "*n\r\n" for up to maxHeader arguments.
const (
	headRoom  = 8
	maxHeader = 99999
)

// newCmd makes a resp.Cmd of bytes build encoded whole (internal/rawcmd).
var newCmd = rawcmd.New.(func(b []byte) resp.Cmd)

// failedCmd makes a resp.Cmd that carries err and no bytes.
var failedCmd = rawcmd.Failed.(func(err error) resp.Cmd)

// start begins a command, its name first.
func (b *Builder) start(info *Info) {
	if cap(b.main.b) < headRoom {
		b.main.b = make([]byte, headRoom, 64)
	}
	b.main.b = append(b.main.b[:headRoom], info.words...)
	b.main.n = len(info.Words)
	b.gen++
	b.info, b.cmd = info, resp.Cmd{}
	// One by one, so that each is only a new length (raw, args and
	// spans are emptied by spill, which starts them).
	b.keys = b.keys[:0]
	b.chans = b.chans[:0]
	b.set, b.cur, b.last, b.timeout = 0, -1, -1, 0
	if b.err != nil || b.bad != "" {
		b.err, b.bad, b.nan = nil, "", false
	}
	b.ordered, b.inLate = true, false
	if b.nlate > 0 {
		for i := 0; i < b.nlate; i++ {
			b.late[i].reset()
		}
		b.nlate, b.flushed = 0, 0
		b.lateKeys = b.lateKeys[:0]
	}
}

// to returns the run the next argument goes to: main while in order,
// the late run being written, or nil out of order (raw and args).
func (b *Builder) to() *run {
	switch {
	case b.inLate:
		return &b.late[b.nlate-1]
	case b.ordered:
		return &b.main
	}
	return nil
}

// later sets aside the arguments of a required slot that comes after
// options; they join the others when a later slot opens, or at build.
func (b *Builder) later(slot int) {
	b.close()
	b.lateSlot[b.nlate] = slot
	b.nlate++
	b.inLate = true
}

// flushLate moves the late runs of slots before limit into place.
func (b *Builder) flushLate(limit int) {
	for b.flushed < b.nlate && b.lateSlot[b.flushed] < limit {
		run := b.flushed
		b.flushed++
		b.openSpan(b.lateSlot[run], false)
		late := &b.late[run]
		if b.ordered {
			base, size := int32(b.main.n), uint32(len(b.main.b))
			b.main.b = append(b.main.b, late.b...)
			b.main.n += late.n
			for _, lk := range b.lateKeys {
				if lk.run == run {
					k := lk.k
					k.arg += base
					k.pos = k.arg
					k.off += size
					if lk.kind == isKey {
						b.keys = append(b.keys, k)
					} else {
						b.chans = append(b.chans, k)
					}
				}
			}
		} else {
			base := len(b.args)
			b.decode(late.b, late.n)
			for _, lk := range b.lateKeys {
				if lk.run == run {
					b.args[base+int(lk.k.arg)].kind = lk.kind
				}
			}
		}
		b.close()
	}
}

// count returns the number of arguments given so far, the name's words
// included.
func (b *Builder) count() int {
	if b.ordered {
		return b.main.n
	}
	return len(b.args)
}

// enum writes the token of a choice; the zero choice (no token) is an
// error of the command.
func (b *Builder) enum(tok, what string) {
	if tok == "" {
		if b.bad == "" {
			b.bad = what + " (the zero choice)"
		}
		return
	}
	b.tok(tok)
}

// choose notes that the choice of slot was given its alternative k, on
// which options of their own may depend (Info.alt).
func (b *Builder) choose(slot, k int) { b.chosen[slot] = uint8(k) }

// none records that a required argument that takes one or more values
// was given none (DEL with no key).
func (b *Builder) none(what string) {
	if b.bad == "" {
		b.bad = what + " (none given)"
	}
}

// open starts the arguments of slot; a slot that takes one value drops
// what an earlier call gave it (the last call wins, as between NX and
// XX), a repeated one (multi) adds to it.
func (b *Builder) open(slot int, multi bool) {
	if b.ordered && slot > b.last && b.flushed == b.nlate {
		// The common case: the next slot in syntax order, with no late
		// run pending (so none being written).
		b.begin[slot] = uint32(b.main.n)
		b.set |= 1 << uint(slot)
		b.last = slot
		return
	}
	b.reopen(slot, multi)
}

// reopen is open for a slot out of order, one given again, or one after
// late runs.
func (b *Builder) reopen(slot int, multi bool) {
	b.inLate = false
	b.close()
	if b.flushed < b.nlate {
		b.flushLate(slot)
	}
	b.openSpan(slot, multi)
}

func (b *Builder) openSpan(slot int, multi bool) {
	b.close()
	bit := uint64(1) << uint(slot)
	replace := b.set&bit != 0 && !multi
	if b.ordered {
		if slot > b.last || slot == b.last && multi {
			if slot > b.last {
				b.begin[slot] = uint32(b.main.n)
			}
			b.set |= bit
			b.last = slot
			return
		}
		b.spill()
	}
	b.last = slot
	if replace {
		for i := range b.spans {
			if b.spans[i].slot == int32(slot) {
				b.spans[i].slot = -1
			}
		}
	}
	b.set |= bit
	n := uint32(b.count())
	b.spans = append(b.spans, span{slot: int32(slot), start: n, end: n})
	b.cur = len(b.spans) - 1
}

func (b *Builder) close() {
	if b.cur >= 0 {
		b.spans[b.cur].end = uint32(b.count())
		b.cur = -1
	}
}

// spill turns the arguments encoded in order into raw and args, and the
// slots' beginnings into spans.
func (b *Builder) spill() {
	b.ordered = false
	b.raw = b.raw[:0]
	b.args = b.args[:0]
	b.spans = b.spans[:0]
	for set := b.set; set != 0; {
		slot := bits.TrailingZeros64(set)
		set &^= 1 << uint(slot)
		end := uint32(b.main.n)
		if set != 0 {
			end = b.begin[bits.TrailingZeros64(set)]
		}
		b.spans = append(b.spans, span{slot: int32(slot), start: b.begin[slot], end: end})
	}
	b.decode(b.main.b[headRoom:], b.main.n)
	for _, k := range b.keys {
		b.args[k.arg].kind = isKey
	}
	for _, k := range b.chans {
		b.args[k.arg].kind = isChannel
	}
	b.keys, b.chans = b.keys[:0], b.chans[:0]
	b.main.b, b.main.n = b.main.b[:headRoom], 0
}

// decode appends the n arguments (bulk strings) encoded in enc to raw
// and args.
func (b *Builder) decode(enc []byte, n int) {
	i := 0
	for range n {
		i++ // '$'
		l := 0
		for ; enc[i] != '\r'; i++ {
			l = l*10 + int(enc[i]-'0')
		}
		i += 2
		off := len(b.raw)
		b.raw = append(b.raw, enc[i:i+l]...)
		b.args = append(b.args, arg{off: uint32(off), n: uint32(l)})
		i += l + 2
	}
}

func (b *Builder) tok(t string) {
	if r := b.to(); r != nil {
		r.add(t)
		return
	}
	b.args = append(b.args, arg{tok: t})
}

func (b *Builder) str(s string) {
	if r := b.to(); r != nil {
		r.add(s)
		return
	}
	off := len(b.raw)
	b.raw = append(b.raw, s...)
	b.args = append(b.args, arg{off: uint32(off), n: uint32(len(s))})
}

func (b *Builder) key(s string) { b.routed(s, &b.keys, isKey) }

// channel writes a shard channel (SPUBLISH's), which a cluster routes as
// it routes a key.
func (b *Builder) channel(s string) { b.routed(s, &b.chans, isChannel) }

func (b *Builder) routed(s string, list *[]keyRef, kind uint8) {
	if b.inLate {
		// A late run (only a command's constructor writes one, in order).
		r := &b.late[b.nlate-1]
		k := keyRef{arg: int32(r.n), off: uint32(len(r.b) + resp.HeaderLen(len(s))), n: uint32(len(s))}
		b.lateKeys = append(b.lateKeys, lateKey{run: b.nlate - 1, kind: kind, k: k})
		r.add(s)
		return
	}
	if b.ordered {
		// Where the bytes are in main: after the bulk header.
		off := len(b.main.b) + resp.HeaderLen(len(s))
		*list = append(*list, keyRef{arg: int32(b.main.n), pos: int32(b.main.n), off: uint32(off), n: uint32(len(s))})
		b.main.add(s)
		return
	}
	b.str(s)
	b.args[len(b.args)-1].kind = kind
}

// bytes writes a formatted number.
func (b *Builder) bytes(p []byte) {
	if r := b.to(); r != nil {
		r.addBytes(p)
		return
	}
	off := len(b.raw)
	b.raw = append(b.raw, p...)
	b.args = append(b.args, arg{off: uint32(off), n: uint32(len(p))})
}

func (b *Builder) int(i int64) {
	if r := b.to(); r != nil {
		r.addInt(i)
		return
	}
	b.bytes(strconv.AppendInt(b.num[:0], i, 10))
}

// float writes f the shortest way that reads back as f; infinities as
// +inf and -inf, as the server reads them. NaN, which no server reads,
// is an error of the command (ErrNaN).
func (b *Builder) float(f float64) {
	switch {
	case f != f:
		if b.bad == "" {
			b.bad, b.nan = "a float argument", true
		}
		b.tok("nan")
	case math.IsInf(f, 1):
		b.tok("+inf")
	case math.IsInf(f, -1):
		b.tok("-inf")
	default:
		b.bytes(strconv.AppendFloat(b.num[:0], f, 'f', -1, 64))
	}
}

// dur writes a duration in unit u, rounding away from zero.
func (b *Builder) dur(d time.Duration, u Unit) {
	switch u {
	case Seconds:
		b.int(ceilDiv(d, time.Second))
	case Milliseconds:
		b.int(ceilDiv(d, time.Millisecond))
	case DecimalSeconds:
		if d < 0 {
			// Whole seconds: the servers multiply a decimal by 1000 in
			// floating point and truncate, so -0.001 would be read as 0,
			// for ever.
			b.int(ceilDiv(d, time.Second))
			return
		}
		ms := ceilDiv(d, time.Millisecond)
		n := strconv.AppendInt(b.num[:0], ms/1000, 10)
		if f := ms % 1000; f != 0 {
			n = append(n, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
			for n[len(n)-1] == '0' {
				n = n[:len(n)-1]
			}
		}
		b.bytes(n)
	}
}

// timeoutDur writes the timeout of a Blocking command.
func (b *Builder) timeoutDur(d time.Duration, u Unit) {
	b.timeout = d
	b.dur(d, u)
}

// unix writes a point in time in whole seconds (truncated, as
// time.Time.Unix) or milliseconds (time.Time.UnixMilli).
func (b *Builder) unix(t time.Time, milli bool) {
	if milli {
		b.int(t.UnixMilli())
		return
	}
	b.int(t.Unix())
}

// ceilDiv divides d by unit, rounding away from zero, so that no
// duration but 0 is written as 0: a positive one would wait for ever
// (BLPOP, XREAD BLOCK, WAIT take 0 so), a negative one is still
// negative, which the server refuses as a timeout.
func ceilDiv(d, unit time.Duration) int64 {
	q := d / unit
	switch r := d % unit; {
	case r > 0:
		q++
	case r < 0:
		q--
	}
	return int64(q)
}

// build encodes the command begun with start.
func (b *Builder) build(info *Info) Command {
	if b.ordered && b.flushed == b.nlate && b.bad == "" && info.required&^b.set == 0 && info.reqIf == nil && info.dep == nil && info.timeout < 0 {
		// The common case: in order, nothing missing, no timeout.
		b.inLate = false
		b.nargs = b.main.n - len(info.Words)
		b.cmd, b.kind = newCmd(b.head()), info.Kind
		return Command{b: b, gen: b.gen}
	}
	return b.buildAll(info)
}

// buildAll is build for every other case: late runs to place,
// arguments to check or to write again in slot order, a timeout that
// may be absent.
func (b *Builder) buildAll(info *Info) Command {
	b.close()
	b.inLate = false
	if b.flushed < b.nlate {
		b.flushLate(maxSlots)
	}
	b.kind = info.Kind
	if b.bad != "" || info.required&^b.set != 0 || info.reqIf != nil || info.dep != nil {
		if b.err = b.check(info); b.err != nil {
			return Command{b: b, gen: b.gen}
		}
	}
	if info.timeout >= 0 && b.kind&Blocking != 0 && b.set&(1<<uint(info.timeout)) == 0 && info.required&(1<<uint(info.timeout)) == 0 {
		b.kind &^= Blocking // XREAD without BLOCK
	}
	if !b.ordered {
		b.emit(info)
	}
	b.nargs = b.main.n - len(info.Words)
	b.cmd = newCmd(b.head())
	return Command{b: b, gen: b.gen}
}

// head writes the array header in front of the arguments in main and
// returns the command's bytes. The keys' offsets stay offsets in main,
// which holds the arguments even when the header does not fit in front
// of them.
func (b *Builder) head() []byte {
	n, out := b.main.n, b.main.b
	if n < 10 {
		out[headRoom-4], out[headRoom-3], out[headRoom-2], out[headRoom-1] = '*', byte('0'+n), '\r', '\n'
		return out[headRoom-4:]
	}
	return b.headLong()
}

// headLong is head for 10 arguments or more.
func (b *Builder) headLong() []byte {
	n, out := b.main.n, b.main.b
	if n > maxHeader {
		return b.headBig()
	}
	i := headRoom - 2
	out[i], out[i+1] = '\r', '\n'
	for v := n; v > 0; v /= 10 {
		i--
		out[i] = byte('0' + v%10)
	}
	i--
	out[i] = '*'
	return out[i:]
}

// headBig returns a command of more than maxHeader arguments: its
// header, then a copy of its arguments.
//
//go:noinline
func (b *Builder) headBig() []byte {
	b.big = resp.AppendArrayHeader(b.big[:0], b.main.n)
	b.big = append(b.big, b.main.b[headRoom:]...)
	return b.big
}

// emit writes the arguments of a command built out of order into main,
// in slot order, noting the keys.
func (b *Builder) emit(info *Info) {
	b.main.b = append(b.main.b[:headRoom], info.words...)
	b.main.n = len(info.Words)
	for slot := 0; slot < info.slots; slot++ {
		if b.set&(1<<uint(slot)) == 0 {
			continue
		}
		for _, s := range b.spans {
			if s.slot != int32(slot) {
				continue
			}
			for i := s.start; i < s.end; i++ {
				a := &b.args[i]
				if a.tok != "" {
					b.main.add(a.tok)
					continue
				}
				k := keyRef{arg: int32(i), pos: int32(b.main.n), off: uint32(len(b.main.b) + resp.HeaderLen(int(a.n))), n: a.n}
				b.main.addBytes(b.raw[a.off : a.off+a.n])
				switch a.kind {
				case isKey:
					b.keys = append(b.keys, k)
				case isChannel:
					b.chans = append(b.chans, k)
				}
			}
		}
	}
}

func (b *Builder) check(info *Info) error {
	if b.nan {
		return &buildError{kind: ErrNaN, cmd: info.Name, opt: b.bad}
	}
	if b.bad != "" {
		return &buildError{kind: ErrMissing, cmd: info.Name, opt: b.bad}
	}
	if miss := info.required &^ b.set; miss != 0 {
		return &buildError{kind: ErrMissing, cmd: info.Name, opt: info.missing[bits.TrailingZeros64(miss)]}
	}
	for slot, p := range info.reqIf {
		if p >= 0 && b.set&(1<<uint(p)) != 0 && b.set&(1<<uint(slot)) == 0 {
			return &buildError{kind: ErrMissing, cmd: info.Name, opt: info.missing[slot]}
		}
	}
	for slot, d := range info.dep {
		if d < 0 || b.set&(1<<uint(slot)) == 0 {
			continue
		}
		if b.set&(1<<uint(d)) == 0 {
			return &buildError{kind: ErrAlone, cmd: info.Name, opt: info.missing[slot] + " without " + info.missing[d]}
		}
		if info.alt != nil && info.alt[slot] >= 0 && b.chosen[d] != uint8(info.alt[slot]) {
			// An option of one alternative of a choice given with
			// another (SLOT-STATS's LIMIT with SLOTSRANGE).
			return &buildError{kind: ErrAlone, cmd: info.Name, opt: info.missing[slot] + " without " + info.altName[slot]}
		}
	}
	return nil
}

// Command is a built command: its encoded form and what is known about it
// (name, kind, timeout, key positions). It views the memory of the Builder
// that built it and is valid until that Builder starts the next command;
// used later, it is refused (its Err matches ErrStale, its Cmd has no
// bytes and that error, and it names nothing).
//
// A Command is its Builder and the number of the command the Builder
// built: copied for next to nothing from a command's builder type to
// Build to a batch.
type Command struct {
	b   *Builder
	gen uint32
}

// ErrStale is matched by the Err of a Command used after its Builder
// started the next command.
var ErrStale = errors.New("cmds: command used after its Builder started the next one")

// live returns c's Builder while c is the command it built last, or nil.
func (c Command) live() *Builder {
	if c.b != nil && c.b.gen == c.gen {
		return c.b
	}
	return nil
}

// built returns c's Builder when c is its last command and was built
// without an error, or nil.
func (c Command) built() *Builder {
	if b := c.live(); b != nil && b.err == nil {
		return b
	}
	return nil
}

// Cmd returns the encoded command, as conn.Conn.DoFunc takes it. A command
// with an Err is a resp.Cmd of no bytes whose Err is that error, which a
// connection refuses with it (a stale Command's matches ErrStale).
func (c Command) Cmd() resp.Cmd {
	if b := c.live(); b != nil {
		if b.err != nil {
			return failedCmd(b.err)
		}
		return b.cmd
	}
	if c.b != nil {
		return failedCmd(ErrStale)
	}
	return resp.Cmd{}
}

// Err returns why the command cannot be sent (an error matching
// ErrMissing, ErrAlone or ErrStale), or nil.
func (c Command) Err() error {
	b := c.live()
	switch {
	case b != nil && b.err != nil:
		return b.err
	case b != nil:
		return b.cmd.Err()
	case c.b != nil:
		return ErrStale
	}
	return resp.Cmd{}.Err() // the zero Command: no arguments
}

// Info returns what is known about the command before it is built (nil
// for the zero Command or a stale one).
func (c Command) Info() *Info {
	if b := c.live(); b != nil {
		return b.info
	}
	return nil
}

// Name returns the command's name as COMMAND LIST has it ("get",
// "client|kill").
func (c Command) Name() string {
	if b := c.live(); b != nil {
		return b.info.Name
	}
	return ""
}

// Kind returns the command's kind, with the options it was built with
// (XREAD is Blocking only with BLOCK).
func (c Command) Kind() Kind {
	if b := c.live(); b != nil {
		return b.kind
	}
	return 0
}

// Timeout returns how long a Blocking command may wait on the server, as
// given to its builder; 0 means for ever (or not Blocking).
func (c Command) Timeout() time.Duration {
	if b := c.live(); b != nil {
		return b.timeout
	}
	return 0
}

// Args returns the number of arguments after the name's words.
func (c Command) Args() int {
	if b := c.built(); b != nil {
		return b.nargs
	}
	return 0
}

// Keys returns the number of keys the command names.
func (c Command) Keys() int {
	if b := c.built(); b != nil {
		return len(b.keys)
	}
	return 0
}

// KeyPos returns the position of key i among the command's arguments
// (the name's words first: in GET k, k is at 1), as COMMAND GETKEYS
// finds it; -1 when i is not in [0, Keys()) (a stale command names no
// keys).
func (c Command) KeyPos(i int) int {
	b := c.built()
	if b == nil || uint(i) >= uint(len(b.keys)) {
		return -1
	}
	return int(b.keys[i].pos)
}

// Key returns key i, a view of the Builder's memory; nil when i is not
// in [0, Keys()).
func (c Command) Key(i int) []byte {
	b := c.built()
	if b == nil || uint(i) >= uint(len(b.keys)) {
		return nil
	}
	k := b.keys[i]
	return b.main.b[k.off : k.off+k.n : k.off+k.n]
}

// ShardChannels returns the number of shard channels the command names
// (SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE): not keys, but a cluster sends the
// command to the node serving their slot, as for a key.
func (c Command) ShardChannels() int {
	if b := c.built(); b != nil {
		return len(b.chans)
	}
	return 0
}

// ShardChannel returns shard channel i, a view of the Builder's memory;
// nil when i is not in [0, ShardChannels()).
func (c Command) ShardChannel(i int) []byte {
	b := c.built()
	if b == nil || uint(i) >= uint(len(b.chans)) {
		return nil
	}
	k := b.chans[i]
	return b.main.b[k.off : k.off+k.n : k.off+k.n]
}

// Slot returns the cluster hash slot of the command's keys and shard
// channels, hash tags honoured: has is false when it names none, cross is
// true when they hash to more than one slot (slot is then the first's).
// It reads the keys the builder kept, without parsing the command.
func (c Command) Slot() (slot uint16, has, cross bool) {
	b := c.built()
	if b == nil {
		return 0, false, false
	}
	for i := range b.keys {
		s := hashslot.Of(c.Key(i))
		if !has {
			slot, has = s, true
		} else if s != slot {
			cross = true
		}
	}
	for i := range b.chans {
		s := hashslot.Of(c.ShardChannel(i))
		if !has {
			slot, has = s, true
		} else if s != slot {
			cross = true
		}
	}
	return slot, has, cross
}

// AppendKeyPos appends the position of every key to dst.
func (c Command) AppendKeyPos(dst []int) []int {
	if b := c.built(); b != nil {
		for _, p := range b.keys {
			dst = append(dst, int(p.pos))
		}
	}
	return dst
}

// String returns the command as text, its arguments quoted, for logs and
// tests.
func (c Command) String() string {
	if err := c.Err(); err != nil {
		return "(" + err.Error() + ")"
	}
	return string(appendText(nil, c.Cmd().Bytes()))
}

// appendText renders an encoded command (an array of bulk strings) as its
// arguments, quoted where they hold spaces or bytes that are not printable.
func appendText(dst, b []byte) []byte {
	v, _, err := resp.Parse(b, resp.Limits{})
	if err != nil {
		return append(dst, "(malformed)"...)
	}
	for i, e := range v.Elems {
		if i > 0 {
			dst = append(dst, ' ')
		}
		if plain(e.Str) {
			dst = append(dst, e.Str...)
		} else {
			dst = strconv.AppendQuote(dst, string(e.Str))
		}
	}
	return dst
}

func plain(p []byte) bool {
	if len(p) == 0 {
		return false
	}
	for _, c := range p {
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
