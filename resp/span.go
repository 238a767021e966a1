package resp

import "encoding/binary"

// Where the arguments of an encoded command are. The encoders of this
// file record each argument's place as they write it, so that whoever
// needs a command's facts (package cmds: its name, its keys) takes them
// from what the encoder wrote instead of reading the bytes back: the
// RESP layout of a command, its headers' lengths and the offsets they
// give, is known here only.

// Span is where one argument of an encoded command is: bytes
// [Off, Off+Len) of the command's encoding (the RESP array of bulk
// strings, from its '*').
type Span struct{ Off, Len uint32 }

// Of returns the bytes of s in cmd, the command's encoding.
func (s Span) Of(cmd []byte) []byte { return cmd[s.Off : s.Off+s.Len : s.Off+s.Len] }

// Shift returns s moved by d bytes: its place in an encoding d bytes
// longer in front (a command's in a run of commands, or in a run of
// arguments placed after a command's head).
func (s Span) Shift(d uint32) Span { return Span{Off: s.Off + d, Len: s.Len} }

// AppendCommandSpans is AppendCommand that appends to spans, as it
// writes each argument, where the argument's bytes are, counted from
// len(dst) at the call (the command's start).
func AppendCommandSpans(dst []byte, spans []Span, args ...string) ([]byte, []Span) {
	start := len(dst)
	dst = AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = appendHeader(dst, '$', int64(len(a)))
		spans = append(spans, Span{Off: uint32(len(dst) - start), Len: uint32(len(a))})
		dst = append(append(dst, a...), '\r', '\n')
	}
	return dst, spans
}

// AppendCommandBytesSpans is AppendCommandSpans for arguments given as
// byte slices.
func AppendCommandBytesSpans(dst []byte, spans []Span, args ...[]byte) ([]byte, []Span) {
	start := uint32(len(dst))
	dst = AppendArrayHeader(dst, len(args))
	for _, a := range args {
		var sp Span
		dst, sp = AppendBulkSpan(dst, a)
		spans = append(spans, sp.Shift(-start))
	}
	return dst, spans
}

// CommandSpans appends to spans where each of args would be in the
// command AppendCommandBytes encodes of them, and returns the
// encoding's size, without encoding: for the facts of a command whose
// bytes are written elsewhere the same way.
func CommandSpans(spans []Span, args [][]byte) ([]Span, int) {
	at := HeaderLen(len(args))
	for _, a := range args {
		at += HeaderLen(len(a))
		spans = append(spans, Span{Off: uint32(at), Len: uint32(len(a))})
		at += len(a) + 2
	}
	return spans, at
}

// AddSpans is Add that appends to spans where each argument's bytes are
// in the command's encoding (see AppendCommandSpans), and returns them;
// a command of no arguments appends none (Err says why).
func (c *Cmds) AddSpans(spans []Span, args ...string) []Span {
	if c.whole(len(args)) {
		c.b, spans = AppendCommandSpans(c.b, spans, args...)
	}
	return spans
}

// AddBytesSpans is AddBytes that appends to spans where each argument's
// bytes are (see AddSpans).
func (c *Cmds) AddBytesSpans(spans []Span, args ...[]byte) []Span {
	if c.whole(len(args)) {
		c.b, spans = AppendCommandBytesSpans(c.b, spans, args...)
	}
	return spans
}

// whole counts a command of nargs arguments given whole, or, of none,
// records ErrEmptyCommand and reports false.
func (c *Cmds) whole(nargs int) bool {
	c.end()
	if nargs == 0 {
		c.fail(ErrEmptyCommand)
		return false
	}
	c.n++
	return true
}

// AddSpan is Add (of Args) returning where the argument's bytes are in
// the run.
func (a *Args) AddSpan(s string) Span {
	var sp Span
	a.b, sp = AppendBulkStringSpan(a.b, s)
	a.n++
	return sp
}

// AddBytesSpan is AddBytes returning where the argument's bytes are in
// the run.
func (a *Args) AddBytesSpan(p []byte) Span {
	var sp Span
	a.b, sp = AppendBulkSpan(a.b, p)
	a.n++
	return sp
}

// AppendBulkSpan is AppendBulk returning where b's bytes are in the
// result.
func AppendBulkSpan(dst, b []byte) ([]byte, Span) {
	dst = appendHeader(dst, '$', int64(len(b)))
	sp := Span{Off: uint32(len(dst)), Len: uint32(len(b))}
	return append(append(dst, b...), '\r', '\n'), sp
}

// BeginAt is Begin returning how long the command's array header is:
// where its first argument's bulk header starts, from the command's
// start.
func (c *Cmds) BeginAt(nargs int) int {
	at := len(c.b)
	c.Begin(nargs)
	return len(c.b) - at
}

// ArgIntSpan is ArgInt returning where the integer's digits are, from
// the start of the Cmds' bytes.
func (c *Cmds) ArgIntSpan(i int64) Span {
	c.ArgInt(i)
	// The digits end before the CRLF the bulk string ends with.
	n := uint32(digits(i))
	return Span{Off: uint32(len(c.b)) - 2 - n, Len: n}
}

// BulkIntSpan is where the digits of i are in the bulk string
// AppendBulkInt writes of it, and the bulk string's size.
func BulkIntSpan(i int64) (Span, int) {
	n := digits(i)
	h := HeaderLen(n)
	return Span{Off: uint32(h), Len: uint32(n)}, h + n + 2
}

// digits is the length of i's decimal text.
func digits(i int64) int {
	n := 1
	if i < 0 {
		n++
	}
	for i <= -10 || i >= 10 {
		i /= 10
		n++
	}
	return n
}

// BulkAt returns where the bytes of the bulk string encoded at b[off:]
// by this package are, reading its header: for an encoder that placed
// an argument (a builder's first one, whichever option wrote it) but
// did not keep its length. b[off:] must start with a whole bulk string.
func BulkAt(b []byte, off uint32) Span {
	n, j := uint32(0), off+1
	for ; b[j] != '\r'; j++ {
		n = n*10 + uint32(b[j]-'0')
	}
	return Span{Off: j + 2, Len: n}
}

// AppendBulkStringSpan is AppendBulkString returning where s's bytes
// are in the result.
func AppendBulkStringSpan(dst []byte, s string) ([]byte, Span) {
	dst = appendHeader(dst, '$', int64(len(s)))
	at := uint32(len(dst))
	return append(append(dst, s...), '\r', '\n'), Span{Off: at, Len: uint32(len(s))}
}

// AddCmds appends every command of o, and o's Err.
func (c *Cmds) AddCmds(o *Cmds) {
	c.end()
	if err := o.Err(); err != nil {
		c.fail(err)
		return
	}
	c.b = append(c.b, o.b...)
	c.n += o.n
}

// SplitCommand reads the command encoded at the start of b, an array of
// bulk strings: it appends to spans where each argument's bytes are
// (from the command's start) and returns them, with the command's size.
// ok is false when b does not start with a whole such command; a
// command of no arguments is whole. This is the one reader of commands
// encoded elsewhere (a user's bytes), for the module's encoders record
// their spans as they write.
func SplitCommand(b []byte, spans []Span) (_ []Span, size int, ok bool) {
	n, i, ok := ReadHeader(b, 0, '*')
	if !ok {
		return spans, 0, false
	}
	for range n {
		var l int
		if l, i, ok = ReadHeader(b, i, '$'); !ok || len(b)-i < l+2 || b[i+l] != '\r' || b[i+l+1] != '\n' {
			return spans, 0, false
		}
		spans = append(spans, Span{Off: uint32(i), Len: uint32(l)})
		i += l + 2
	}
	return spans, i, true
}

// ReadHeader reads the header "<kind><decimal>\r\n" (an array's or a
// bulk string's, as this package writes them) at b[i:]: its number and
// where the bytes after it start; ok is false when b[i:] does not start
// with one.
func ReadHeader(b []byte, i int, kind byte) (n, next int, ok bool) {
	if len(b)-i < 4 || b[i] != kind {
		return 0, i, false
	}
	// One or two digits, most headers, without the loop.
	if len(b)-i >= 5 {
		d0, d1 := b[i+1]-'0', b[i+2]-'0'
		switch {
		case d0 <= 9 && b[i+2] == '\r' && b[i+3] == '\n':
			return int(d0), i + 4, true
		case d0 <= 9 && d1 <= 9 && b[i+3] == '\r' && b[i+4] == '\n':
			return int(d0)*10 + int(d1), i + 5, true
		}
	}
	j := i + 1
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		if n > 1<<40 {
			return 0, i, false
		}
		n = n*10 + int(b[j]-'0')
	}
	if j == i+1 || j+1 >= len(b) || b[j] != '\r' || b[j+1] != '\n' {
		return 0, i, false
	}
	return n, j + 2, true
}

// Size returns how many bytes the command has so far: right after
// BuildCommand, its array header's length (where its first argument
// starts).
func (b CmdBuilder) Size() int { return len(b.b) }

// ShortBulkRoom is the room PutShortBulk needs.
const ShortBulkRoom = 16

// PutShortBulk writes s, shorter than 10 bytes, as a bulk string at the
// start of p, which has ShortBulkRoom bytes, and returns the bulk
// string's size; s's bytes are at ShortBulkAt. It is the builders' one
// step for the common short argument (a token, a small key).
func PutShortBulk(p []byte, s string) int {
	p = p[:ShortBulkRoom]
	p[0], p[1], p[2], p[3] = '$', byte('0'+len(s)), '\r', '\n'
	copy(p[4:14], s)
	p[4+len(s)], p[5+len(s)] = '\r', '\n'
	return 6 + len(s)
}

// ShortBulkAt is where the bytes of the string PutShortBulk wrote are,
// from its start.
const ShortBulkAt = 4

// PutArrayHeader writes the header of an array of n elements (n >= 0)
// so that it ends at b[end], in room left in front of the elements
// (8 bytes hold every header up to 99999 elements), and returns where
// it starts: for an encoder that learns the count once the elements
// are written. PutShortArrayHeader is its inlined step for n < 10.
func PutArrayHeader(b []byte, end, n int) int {
	if n < 10 {
		return PutShortArrayHeader(b, end, n)
	}
	return putArrayHeaderLong(b, end, n)
}

// PutShortArrayHeader is PutArrayHeader for 0 <= n < 10: "*<digit>\r\n"
// in one store.
func PutShortArrayHeader(b []byte, end, n int) int {
	binary.LittleEndian.PutUint32(b[end-4:end], '*'|uint32('0'+n)<<8|'\r'<<16|'\n'<<24)
	return end - 4
}

func putArrayHeaderLong(b []byte, end, n int) int {
	i := end - 2
	b[i], b[i+1] = '\r', '\n'
	for v := n; v > 0; v /= 10 {
		i--
		b[i] = byte('0' + v%10)
	}
	i--
	b[i] = '*'
	return i
}

// BulkArg returns the bytes of the bulk string encoded at the start of
// p, or nil when p does not start with a whole one: an encoder's look at
// an argument it wrote (a Batch's name of a command given argument by
// argument). ShortBulkArg is its inlined step.
func BulkArg(p []byte) []byte {
	if a, ok := ShortBulkArg(p); ok {
		return a
	}
	n, at, ok := ReadHeader(p, 0, '$')
	if !ok || len(p)-at < n {
		return nil
	}
	return p[at : at+n]
}

// ShortBulkArg is BulkArg of a bulk string of under 10 bytes followed by
// at least as many (ok false: call BulkArg).
func ShortBulkArg(p []byte) (arg []byte, ok bool) {
	if len(p) >= 13 && p[0] == '$' && p[2] == '\r' && p[1]-'0' <= 9 {
		return p[4 : 4+p[1]-'0'], true
	}
	return nil, false
}
