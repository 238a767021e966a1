package cmds

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unsafe"

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

	words []byte // Words, encoded once (bulk strings)
	// Where the first two words' bytes are in words, as encoded (the
	// second the zero Span for a command of one word).
	wordSpans [2]resp.Span
	slots     int      // argument slots, in the order they are sent
	required  uint64   // slots that must be set
	multi     uint64   // slots that take one more run per call
	dep       []int8   // slot → the slot that must be set with it, or -1
	reqIf     []int8   // slot → the slot that needs it set, or -1
	missing   []string // slot → the option name, for errors
	alt       []int8   // slot → the alternative of its dep's choice it belongs to, or -1 (nil: none)
	altName   []string // slot → that alternative's token, for errors
	timeout   int      // the timeout slot, or -1
	simple    bool     // no reqIf, dep or timeout: build checks only required

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
		var words []byte
		for i, w := range in.Words {
			var sp resp.Span
			words, sp = resp.AppendBulkStringSpan(words, w)
			if i < len(in.wordSpans) {
				in.wordSpans[i] = sp
			}
		}
		// Room after them for start's copy of wordsCopy bytes.
		in.words = append(make([]byte, 0, max(len(words), wordsCopy)), words...)
		in.simple = in.reqIf == nil && in.dep == nil && in.timeout < 0
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

// What an argument is, for routing.
const (
	isKey     = 1
	isChannel = 2 // a shard channel: routed like a key, not a key
)

// keyRef is a key: its position among the arguments sent (the name's
// words first) and where its bytes are, an offset in main.
type keyRef struct {
	pos    int32
	off, n uint32
}

// maxSlots bounds the argument slots of a command (cmdgen checks it).
const maxSlots = 64

// maxLate bounds the required arguments after options (cmdgen checks
// it).
const maxLate = 4

// lateKey is a key (or shard channel) of a late run: its position and
// offset are in the run, until the run joins main.
type lateKey struct {
	run  int
	kind uint8
	k    keyRef
}

// Builder builds commands into memory it reuses: once its buffers have
// grown to the size of the commands built, building allocates nothing.
// Each command's builder (b.Set(key, value), …) takes the Builder, its
// options may be given in any order, and Build returns the Command,
// encoded in the order the server wants.
//
// A Command views the Builder's memory: it is valid until the Builder
// starts the next command. A builder value's options are refused once
// it is built or its Builder has started another command (see Lifetimes
// in the package doc). A Builder is not safe for concurrent use; the
// zero Builder is ready.
type Builder struct {
	// The arguments are encoded as they come, in main, after room left
	// for the array header: build writes the header in front of them
	// once their count is known, and the command is main's own bytes.
	// main is kept in slot order: a slot given after a later one (an
	// option out of the syntax's order) is encoded at main's end, then
	// moved into its place (settle) when the next slot opens or at
	// build; a slot given again drops what it had (cut).
	main run
	// slow is set while open cannot take its fast path: a late run is
	// pending, or a slot given out of order is still at main's end.
	slow   bool
	inLate bool // the constructor is writing late run nlate-1
	pend   bool // slot pslot's arguments, from p0 (pn0 arguments), are at main's end
	// Required arguments after options (ZADD's members) are encoded at
	// once into late runs, and join main when a later slot opens or at
	// build.
	late     [maxLate]run
	lateSlot [maxLate]int
	nlate    int // late runs written
	flushed  int // late runs moved to main
	lateKeys []lateKey
	// A set slot's arguments run from its begin (as a count of the
	// arguments before it, the name's words included) and off (a byte
	// offset in main) to the next set slot's (or main's end).
	begin   [maxSlots]uint32
	off     [maxSlots]uint32
	keys    []keyRef // in the order of their positions
	chans   []keyRef // shard channels, in the order of their positions
	set     uint64
	last    int // the highest slot set, or -1
	nargs   int
	timeout time.Duration
	// The slot given out of order whose arguments are being written at
	// main's end (pend): where they start, and how many keys and shard
	// channels there were before them.
	pslot    int
	p0       uint32
	pn0      uint32
	pk0, pc0 int
	tmp      []byte // settle's scratch
	// The generation: even while a command is open (started, not yet
	// built; its builder value holds the number), odd once it is built
	// (its Command holds the number). start moves it to the next even
	// number and Build to the odd one after, so that a value or Command
	// of any other number is stale. 64 bits: it does not wrap (2^63
	// commands).
	gen uint64
	// The command built last: its Info, its encoded form and kind, or
	// why it cannot be sent.
	// built is the command's bytes (in main, or big), nil when it cannot
	// be sent, and the error that says why: resp.Cmd's layout, so that
	// Cmd views it as a resp.Cmd without a call or a copy through a
	// temporary.
	info   *Info
	built  cmdLayout
	kind   Kind
	bad    string // why an argument is missing: the zero choice, or none of many
	nan    bool   // a float argument was NaN (bad says so)
	big    []byte // a command of more than maxHeader arguments
	num    [40]byte
	spans2 []Span // Command.Fact's scratch: its Keys
	// mode is the last choice written (enum): CLIENT REPLY's and SCRIPT
	// DEBUG's mode, by which their Fact's kind is refined.
	mode string
	// chosen is, for a choice among blocks with options of their own
	// (Info.alt), which alternative its slot was given last (B.choose):
	// read only for a slot set, which the alternative's method set.
	chosen [maxSlots]uint8
	// dst is the resp.Cmds the Builder is bound to (lend.go), or nil;
	// lent: main is memory dst lent, and priv the Builder's own.
	// taken: dst took the command built last in place (AppendTo) and
	// nothing was written to dst since, so that the next command's
	// memory is right after it: start lends it without asking dst.
	dst   *resp.Cmds
	lent  bool
	taken bool
	priv  []byte
}

// run is a run of encoded arguments (bulk strings) and their count.
type run struct {
	b []byte
	n int
}

// add appends s as a bulk string (Builder.str has the fast path of
// short ones).
//
// It leaves room after s for the fast path of the next short argument.
func (r *run) add(s string) { r.addSpan(s) }

// addSpan is add returning where s's bytes are in the run.
func (r *run) addSpan(s string) uint32 {
	var sp resp.Span
	r.b, sp = resp.AppendBulkStringSpan(slices.Grow(r.b, len(s)+32), s)
	r.n++
	return sp.Off
}

func (r *run) addBytes(p []byte) { r.b = resp.AppendBulk(r.b, p); r.n++ }

// addInt appends i's decimal text as a bulk string (Builder.int has the
// fast path of small ones).
func (r *run) addInt(i int64) {
	r.b = resp.AppendBulkInt(r.b, i)
	r.n++
}

func (r *run) reset() { r.b, r.n = r.b[:0], 0 }

// headRoom is the room main keeps in front of the arguments for the
// array header: "*n\r\n" for up to maxHeader arguments.
const (
	headRoom  = 8
	maxHeader = 99999
)

// newCmd makes a resp.Cmd of bytes build encoded whole (internal/rawcmd):
// the constructor package resp gives, the reference for makeCmd.
var newCmd = rawcmd.New.(func(b []byte) resp.Cmd)

// failedCmd makes a resp.Cmd that carries err and no bytes.
var failedCmd = rawcmd.Failed.(func(err error) resp.Cmd)

// cmdLayout is resp.Cmd's layout: its bytes, then its error. The
// Builder keeps its command as one (Builder.built), which cmd views as a
// resp.Cmd in place of a call of newCmd or failedCmd (a call through a
// func value, which no caller can inline: Command.Cmd and Command.Err
// were each a call, three per typed command queued); init checks it
// against them.
type cmdLayout struct {
	b   []byte
	err error
}

// cmd is l as a resp.Cmd.
func (l *cmdLayout) cmd() resp.Cmd { return *(*resp.Cmd)(unsafe.Pointer(l)) }

// makeCmd is newCmd(b) for err nil, failedCmd(err) for b nil.
func makeCmd(b []byte, err error) resp.Cmd {
	l := cmdLayout{b, err}
	return l.cmd()
}

// The layout check: makeCmd must make what resp's constructors make.
func init() {
	p, e := []byte("*1\r\n$4\r\nPING\r\n"), errors.New("cmds: layout check")
	a, b := newCmd(p), makeCmd(p, nil)
	f, g := failedCmd(e), makeCmd(nil, e)
	if unsafe.Sizeof(resp.Cmd{}) != unsafe.Sizeof(cmdLayout{}) ||
		len(a.Bytes()) != len(b.Bytes()) || &a.Bytes()[0] != &b.Bytes()[0] || b.Err() != nil ||
		f.Err() != g.Err() || g.Bytes() != nil {
		panic("cmds: resp.Cmd is no longer {b []byte; err error}: update cmdLayout")
	}
}

// wordsCopy is how many bytes of a command's encoded name start copies
// at once, without a call, when the name is no longer and both have the
// room (Info.words has).
const wordsCopy = 32

// start begins a command, its name first.
func (b *Builder) start(info *Info) {
	if b.dst != nil {
		if m := b.main.b; b.taken && b.lent && cap(m)-len(m) >= lendRoom {
			// The next command goes where dst's did end: the bytes
			// after the command it took, which ends main.
			b.main.b, b.taken = m[len(m)-(headRoom-4):len(m)+4], false
		} else {
			b.lend()
		}
	}
	if cap(b.main.b) < headRoom+wordsCopy {
		b.main.b = make([]byte, headRoom, 64)
	}
	if m, w := b.main.b, info.words; len(w) <= wordsCopy && cap(w) >= wordsCopy {
		d, w := m[headRoom:headRoom+wordsCopy], w[:wordsCopy]
		le := binary.LittleEndian // four moves, not a call of memmove
		le.PutUint64(d[0:], le.Uint64(w[0:]))
		le.PutUint64(d[8:], le.Uint64(w[8:]))
		le.PutUint64(d[16:], le.Uint64(w[16:]))
		le.PutUint64(d[24:], le.Uint64(w[24:]))
		b.main.b = b.main.b[:headRoom+len(info.words)]
	} else {
		b.main.b = append(m[:headRoom], w...)
	}
	b.main.n = len(info.Words)
	b.gen = b.gen&^1 + 2
	b.info = info
	// One by one, so that each is only a new length. The command's
	// bytes are set by build (no Command of this number exists before
	// it).
	b.keys = b.keys[:0]
	b.chans = b.chans[:0]
	b.set, b.last, b.timeout = 0, -1, 0
	if b.built.err != nil || b.bad != "" {
		b.built.err, b.bad, b.nan = nil, "", false
	}
	b.slow, b.inLate, b.pend = false, false, false
	if b.nlate > 0 {
		for i := 0; i < b.nlate; i++ {
			b.late[i].reset()
		}
		b.nlate, b.flushed = 0, 0
		b.lateKeys = b.lateKeys[:0]
	}
}

// later sets aside the arguments of a required slot that comes after
// options; they join the others when a later slot opens, or at build.
func (b *Builder) later(slot int) {
	b.lateSlot[b.nlate] = slot
	b.nlate++
	b.inLate, b.slow = true, true
}

// flushLate moves the late runs of slots before limit into place.
func (b *Builder) flushLate(limit int) {
	for b.flushed < b.nlate && b.lateSlot[b.flushed] < limit {
		run := b.flushed
		b.flushed++
		b.place(b.lateSlot[run], false)
		late := &b.late[run]
		base, size := int32(b.main.n), uint32(len(b.main.b))
		b.main.b = append(b.main.b, late.b...)
		b.main.n += late.n
		for _, lk := range b.lateKeys {
			if lk.run == run {
				k := lk.k
				k.pos += base
				k.off += size
				if lk.kind == isKey {
					b.keys = append(b.keys, k)
				} else {
					b.chans = append(b.chans, k)
				}
			}
		}
		if b.pend {
			// Not reached: no slot after a late one is set before the
			// late run joins. Kept so that main stays in slot order
			// whatever the generated code does.
			b.settle()
		}
	}
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
	b.mode = tok
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
	if slot > b.last && !b.slow {
		// The common case: the next slot in syntax order, with nothing
		// pending.
		b.at(slot)
		return
	}
	b.reopen(slot, multi)
}

// at opens slot in a command's constructor, in order with nothing
// pending: open's fast path, for the generated code that knows it.
func (b *Builder) at(slot int) {
	b.begin[slot&(maxSlots-1)] = uint32(b.main.n)
	b.off[slot&(maxSlots-1)] = uint32(len(b.main.b))
	b.set |= 1 << uint(slot&(maxSlots-1))
	b.last = slot
}

// opt opens slot and writes its token t: an option's open and tok in
// one call, for the builder value of generation g, which it returns;
// when that value is stale it writes nothing and returns staleGen.
func (b *Builder) opt(g uint64, slot int, multi bool, t string) uint64 {
	if b.stale(g) {
		return staleGen
	}
	if slot > b.last && !b.slow {
		b.at(slot)
	} else {
		b.reopen(slot, multi)
	}
	b.str(t)
	return g
}

// reopen is open for a slot out of order, one given again, or one after
// late runs or a slot out of order.
func (b *Builder) reopen(slot int, multi bool) {
	b.inLate = false
	if b.pend {
		b.settle()
	}
	if b.flushed < b.nlate {
		b.flushLate(slot)
	}
	b.place(slot, multi)
	b.slow = b.pend || b.flushed < b.nlate
}

// place opens slot with main in slot order: after the highest slot set,
// at main's end; the highest given again, at its end too (its arguments
// cut first, unless it takes more); any other, at main's end for now,
// moved into place by settle.
func (b *Builder) place(slot int, multi bool) {
	slot &= maxSlots - 1
	bit := uint64(1) << uint(slot)
	switch {
	case slot > b.last:
		b.begin[slot], b.off[slot] = uint32(b.main.n), uint32(len(b.main.b))
		b.set |= bit
		b.last = slot
		return
	case b.set&bit != 0:
		if !multi {
			b.cut(slot)
		}
		if slot == b.last {
			return
		}
	default:
		nx := b.next(slot)
		b.begin[slot], b.off[slot] = b.begin[nx], b.off[nx]
		b.set |= bit
	}
	b.pend, b.pslot = true, slot
	b.p0, b.pn0 = uint32(len(b.main.b)), uint32(b.main.n)
	b.pk0, b.pc0 = len(b.keys), len(b.chans)
}

// next returns the first slot set after slot, which must exist.
func (b *Builder) next(slot int) int {
	return bits.TrailingZeros64(b.set &^ (2<<uint(slot) - 1))
}

// end returns where slot's arguments end: the next set slot's begin and
// offset, or main's end.
func (b *Builder) end(slot int) (uint32, uint32) {
	if slot >= b.last {
		return uint32(b.main.n), uint32(len(b.main.b))
	}
	nx := b.next(slot)
	return b.begin[nx], b.off[nx]
}

// shift moves the beginnings of the slots set after slot by n
// arguments and by bytes.
func (b *Builder) shift(slot int, n, bytes uint32) {
	for set := b.set &^ (2<<uint(slot) - 1); set != 0; set &= set - 1 {
		t := bits.TrailingZeros64(set)
		b.begin[t] += n
		b.off[t] += bytes
	}
}

// cut drops the arguments slot was given.
func (b *Builder) cut(slot int) {
	a0, o0 := b.begin[slot], b.off[slot]
	a1, o1 := b.end(slot)
	if a1 == a0 {
		return
	}
	n, size := a1-a0, o1-o0
	b.main.b = append(b.main.b[:o0], b.main.b[o1:]...)
	b.main.n -= int(n)
	b.shift(slot, -n, -size)
	b.keys = cutRefs(b.keys, a0, a1, n, size)
	b.chans = cutRefs(b.chans, a0, a1, n, size)
}

// cutRefs drops the refs at positions a0 to a1 (n arguments, size bytes)
// and moves those after them back.
func cutRefs(refs []keyRef, a0, a1, n, size uint32) []keyRef {
	j := 0
	for _, k := range refs {
		switch p := uint32(k.pos); {
		case p >= a1:
			k.pos -= int32(n)
			k.off -= size
		case p >= a0:
			continue
		}
		refs[j] = k
		j++
	}
	return refs[:j]
}

// settle moves the arguments of the slot given out of order from main's
// end to their place, before the next slot set.
func (b *Builder) settle() {
	b.pend = false
	slot := b.pslot
	nx := b.next(slot)
	at, atN := b.off[nx], b.begin[nx]
	p0, n0 := b.p0, b.pn0
	size, n := uint32(len(b.main.b))-p0, uint32(b.main.n)-n0
	m := b.main.b
	switch {
	case size == 0:
	case size <= 16:
		var t [16]byte
		copy(t[:], m[p0:])
		copy(m[at+size:], m[at:p0])
		copy(m[at:], t[:size])
	default:
		b.tmp = append(b.tmp[:0], m[p0:]...)
		copy(m[at+size:], m[at:p0])
		copy(m[at:], b.tmp)
	}
	for set := b.set &^ (2<<uint(slot) - 1); set != 0; set &= set - 1 {
		t := bits.TrailingZeros64(set)
		b.begin[t] += n
		b.off[t] += size
	}
	if k := b.pk0; k < len(b.keys) || k > 0 && uint32(b.keys[k-1].pos) >= atN {
		moveRefs(b.keys, k, atN, n, size, n0-atN, p0-at)
	}
	if k := b.pc0; k < len(b.chans) || k > 0 && uint32(b.chans[k-1].pos) >= atN {
		moveRefs(b.chans, k, atN, n, size, n0-atN, p0-at)
	}
}

// moveRefs is settle for refs: refs[k0:] were written at main's end and
// move back by back arguments and backBytes, to before the refs at
// positions from atN, which move on by n arguments and size bytes.
func moveRefs(refs []keyRef, k0 int, atN, n, size, back, backBytes uint32) {
	j := k0
	for i := k0 - 1; i >= 0 && uint32(refs[i].pos) >= atN; i-- {
		refs[i].pos += int32(n)
		refs[i].off += size
		j = i
	}
	for i := k0; i < len(refs); i++ {
		refs[i].pos -= int32(back)
		refs[i].off -= backBytes
	}
	if j < k0 && k0 < len(refs) {
		// refs[j:k0] and refs[k0:] change places.
		slices.Reverse(refs[j:k0])
		slices.Reverse(refs[k0:])
		slices.Reverse(refs[j:])
	}
}

// out returns the run the next argument goes to: the late run being
// written, or main.
func (b *Builder) out() *run {
	if b.inLate {
		return &b.late[(b.nlate-1)&(maxLate-1)]
	}
	return &b.main
}

func (b *Builder) tok(t string) { b.str(t) }

// str writes s; a short one (the common token, key or value) in one
// call, its bytes written in room there is.
func (b *Builder) str(s string) {
	if r := b.out(); !r.addShort(s) {
		r.add(s)
	}
}

// addShort adds s in one step when it is short (under 10 bytes) and the
// run has room for it, and reports whether it did.
func (r *run) addShort(s string) bool {
	l := len(r.b)
	if len(s) >= 10 || cap(r.b)-l < resp.ShortBulkRoom {
		return false
	}
	r.b = r.b[:l+resp.PutShortBulk(r.b[l:l+resp.ShortBulkRoom], s)]
	r.n++
	return true
}

func (b *Builder) key(s string) { b.routed(s, &b.keys, isKey) }

// channel writes a shard channel (SPUBLISH's), which a cluster routes as
// it routes a key.
func (b *Builder) channel(s string) { b.routed(s, &b.chans, isChannel) }

func (b *Builder) routed(s string, list *[]keyRef, kind uint8) {
	if b.inLate {
		// A late run (only a command's constructor writes one, in order).
		r := &b.late[(b.nlate-1)&(maxLate-1)]
		k := keyRef{pos: int32(r.n), n: uint32(len(s))}
		k.off = r.addSpan(s)
		b.lateKeys = append(b.lateKeys, lateKey{run: b.nlate - 1, kind: kind, k: k})
		return
	}
	// Where the bytes are in main: after the bulk header.
	r := &b.main
	if l, n := len(r.b), r.n; r.addShort(s) {
		*list = append(*list, keyRef{pos: int32(n), off: uint32(l + resp.ShortBulkAt), n: uint32(len(s))})
		return
	}
	pos := int32(r.n)
	*list = append(*list, keyRef{pos: pos, off: r.addSpan(s), n: uint32(len(s))})
}

// bytes writes a formatted number.
func (b *Builder) bytes(p []byte) { b.out().addBytes(p) }

// int writes i's decimal text; one or two digits in one call.
func (b *Builder) int(i int64) {
	r := b.out()
	switch {
	case 0 <= i && i < 10:
		r.b = append(r.b, '$', '1', '\r', '\n', byte('0'+i), '\r', '\n')
	case 10 <= i && i < 100:
		r.b = append(r.b, '$', '2', '\r', '\n', byte('0'+i/10), byte('0'+i%10), '\r', '\n')
	default:
		r.addInt(i)
		return
	}
	r.n++
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

// secs writes a duration in whole seconds, rounded away from zero (ceilDiv).
func (b *Builder) secs(d time.Duration) { b.int(ceilDiv(d, time.Second)) }

// millis writes a duration in whole milliseconds, rounded away from zero.
func (b *Builder) millis(d time.Duration) { b.int(ceilDiv(d, time.Millisecond)) }

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

// staleGen is the generation of a builder value that was given an
// option when stale, and of a Command built of one: no Builder is ever
// at it (start moves a Builder from 0 to 2).
const staleGen = 1

// stale reports whether a builder value of generation g is not the
// command b has open: b built it or started another since (or the value
// is the zero value). Its options are then refused.
func (b *Builder) stale(g uint64) bool { return b == nil || b.gen != g }

// build encodes the command begun with start, whose builder value has
// generation g.
func (b *Builder) build(info *Info, g uint64) Command {
	if b.stale(g) {
		return b.notOpen(g)
	}
	b.gen = g | 1
	if !b.slow && b.bad == "" && info.required&^b.set == 0 && info.simple {
		// The common case: in order, nothing missing, nothing to check,
		// no timeout.
		b.inLate = false
		b.nargs = b.main.n - len(info.Words)
		var cmd []byte
		if n, out := b.main.n, b.main.b; n < 10 {
			cmd = out[resp.PutShortArrayHeader(out, headRoom, n):]
		} else {
			cmd = b.head()
		}
		b.built.b, b.kind = cmd, info.Kind
		return Command{b: b, gen: b.gen}
	}
	return b.buildAll(info)
}

// notOpen is Build of a builder value that is not the command b has
// open: the Command b built of it when that is the last b built and no
// option was refused since (Build again), else a stale Command.
//
//go:noinline
func (b *Builder) notOpen(g uint64) Command {
	switch {
	case b == nil:
		return Command{} // the zero builder value
	case g|1 == b.gen:
		return Command{b: b, gen: b.gen}
	}
	return Command{b: b, gen: staleGen}
}

// buildAll is build for every other case: late runs to place or a slot
// out of order to settle, arguments to check, a timeout that may be
// absent.
func (b *Builder) buildAll(info *Info) Command {
	b.inLate = false
	if b.pend {
		b.settle()
	}
	if b.flushed < b.nlate {
		b.flushLate(maxSlots)
	}
	b.slow = false
	b.kind = info.Kind
	if b.bad != "" || info.required&^b.set != 0 || info.reqIf != nil || info.dep != nil {
		if b.built.err = b.check(info); b.built.err != nil {
			b.built.b = nil
			return Command{b: b, gen: b.gen}
		}
	}
	if info.timeout >= 0 && b.kind&Blocking != 0 && b.set&(1<<uint(info.timeout)) == 0 && info.required&(1<<uint(info.timeout)) == 0 {
		b.kind &^= Blocking // XREAD without BLOCK
	}
	b.nargs = b.main.n - len(info.Words)
	b.built.b = b.head()
	return Command{b: b, gen: b.gen}
}

// head writes the array header in front of the arguments in main and
// returns the command's bytes. The keys' offsets stay offsets in main,
// which holds the arguments even when the header does not fit in front
// of them.
func (b *Builder) head() []byte {
	if b.main.n > maxHeader || b.lent && b.main.n >= 10 {
		return b.headBig()
	}
	return b.main.b[resp.PutArrayHeader(b.main.b, headRoom, b.main.n):]
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
// (name, kind, timeout, key positions). It is immutable: no option given
// to its builder value after Build changes it (such an option is
// refused). It views the memory of the Builder that built it and is
// valid until that Builder starts the next command; used later, it is
// refused (its Err matches ErrStale, its Cmd has no bytes and that
// error, and it names nothing).
//
// A Command is its Builder and the number of the command the Builder
// built: copied for next to nothing from a command's builder type to
// Build to a batch.
type Command struct {
	b   *Builder
	gen uint64
}

// ErrStale is matched by the Err of a Command used after its Builder
// started the next command, and of one built of a builder value given
// an option after its Build or after its Builder started another
// command.
var ErrStale = errors.New("cmds: stale command: its Builder built it or started the next one")

// live returns c's Builder while c is the command it built last, or nil.
func (c Command) live() *Builder {
	if c.b != nil && c.b.gen == c.gen {
		return c.b
	}
	return nil
}

// ok returns c's Builder when c is its last command and was built
// without an error, or nil.
func (c Command) ok() *Builder {
	if b := c.live(); b != nil && b.built.err == nil {
		return b
	}
	return nil
}

// Cmd returns the encoded command, as conn.Conn.DoFunc takes it. A command
// with an Err is a resp.Cmd of no bytes whose Err is that error, which a
// connection refuses with it (a stale Command's matches ErrStale).
func (c Command) Cmd() resp.Cmd {
	// Made here, not copied from the Builder: the Cmd goes to the caller
	// in registers. A command with an Err carries it.
	if b := c.b; b != nil && b.gen == c.gen {
		return b.built.cmd()
	}
	return c.staleCmd()
}

// staleCmd is Cmd of a Command that is not its Builder's last.
func (c Command) staleCmd() resp.Cmd {
	if c.b != nil {
		return makeCmd(nil, ErrStale)
	}
	return resp.Cmd{}
}

// AppendTo appends the command to cmds (resp.Cmds.AddCmd) and returns
// its kind (Kind), with one look at whether c is still its Builder's
// last command: for the code that queues a Command (a pipeline.Batch).
// A command with an Err is not appended: AppendTo returns the Err and
// kind 0.
func (c Command) AppendTo(cmds *resp.Cmds) (Kind, error) {
	if b := c.b; b != nil && b.gen == c.gen && b.built.err == nil {
		if b.taken = b.lent && cmds == b.dst && takeCmds(cmds, b.built.b); !b.taken {
			cmds.AddCmd(b.built.cmd())
		}
		return b.kind, nil
	}
	return 0, c.Err()
}

// Err returns why the command cannot be sent (an error matching
// ErrMissing, ErrAlone or ErrStale), or nil.
func (c Command) Err() error {
	if b := c.b; b != nil && b.gen == c.gen {
		return b.built.err // nil: built, its bytes a whole command
	}
	if c.b != nil {
		return ErrStale
	}
	return resp.ErrEmptyCommand // the zero Command: no arguments
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
	if b := c.ok(); b != nil {
		return b.nargs
	}
	return 0
}

// Keys returns the number of keys the command names.
func (c Command) Keys() int {
	if b := c.ok(); b != nil {
		return len(b.keys)
	}
	return 0
}

// KeyPos returns the position of key i among the command's arguments
// (the name's words first: in GET k, k is at 1), as COMMAND GETKEYS
// finds it; -1 when i is not in [0, Keys()) (a stale command names no
// keys).
func (c Command) KeyPos(i int) int {
	b := c.ok()
	if b == nil || uint(i) >= uint(len(b.keys)) {
		return -1
	}
	return int(b.keys[i].pos)
}

// Key returns key i, a view of the Builder's memory; nil when i is not
// in [0, Keys()).
func (c Command) Key(i int) []byte {
	b := c.ok()
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
	if b := c.ok(); b != nil {
		return len(b.chans)
	}
	return 0
}

// ShardChannel returns shard channel i, a view of the Builder's memory;
// nil when i is not in [0, ShardChannels()).
func (c Command) ShardChannel(i int) []byte {
	b := c.ok()
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
	b := c.ok()
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
	if b := c.ok(); b != nil {
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
