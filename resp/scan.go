package resp

import (
	"bytes"
	"math"
	"strconv"
	"unsafe"
)

// Limits bound what a decoder materialises, so that a hostile or broken
// peer gets an error instead of a crash or an allocation it never paid
// for. A zero field takes its default; a field above math.MaxInt/2 is
// lowered to it, and MaxBulk and MaxAggregate to their hard bounds
// (HardMaxBulk, HardMaxAggregate).
//
// A well-formed reply that breaks MaxBulk, MaxAggregate, MaxDepth,
// MaxValues or MaxReplyBytes is not a protocol error: the decoder skips
// the rest of it on the wire, in bounded memory (it validates its
// structure as it goes but builds no Values and buffers none of its
// strings), and returns in its place a Value of type TooLarge whose Err is
// a *ReplyTooLargeError (errors.Is ErrReplyTooLarge) naming the limit. The
// stream stays in sync: the next reply decodes as usual. Only a line
// longer than MaxLine, a length above the hard bounds and malformed bytes
// are a *ProtocolError, after which the stream cannot be trusted.
type Limits struct {
	// MaxBulk is the longest bulk string, bulk error or verbatim string,
	// in bytes. Default 512 MiB, the server's own proto-max-bulk-len. A
	// longer one is skipped (streamed past); one longer than HardMaxBulk
	// is a protocol error.
	MaxBulk int
	// MaxAggregate is the most elements one array, set or push may
	// declare, and the most pairs for a map or attribute. Default 1<<22.
	// A larger one is skipped; one larger than HardMaxAggregate is a
	// protocol error.
	MaxAggregate int
	// MaxDepth is the deepest nesting of aggregates. Default 128. A reply
	// nested deeper is skipped.
	MaxDepth int
	// MaxLine is the longest line: a simple string, simple error, number
	// or header. Default 64 KiB. A longer line is a protocol error: a line
	// is found by buffering it whole.
	MaxLine int
	// MaxValues is the most values one reply may hold in all, nested ones
	// included. Default 1<<22. A reply with more is skipped.
	MaxValues int
	// MaxReplyBytes is the most memory the decoded Values of one reply may
	// take: every element of its aggregates, nested ones included, counts
	// unsafe.Sizeof(Value{}) bytes (72 on 64-bit platforms), whatever its
	// type; an attribute counts its pairs and one Value of its own. These
	// are exactly the Values that Value.Clone or Arena.Retain of the reply
	// copies, and a Reader's value arena holds them and the top-level
	// value: it never grows past MaxReplyBytes plus one Value. Each
	// aggregate's header is checked on the elements it declares, before
	// any of them is read or anything is allocated for them.
	//
	// String bytes are not counted: a decoded string views the bytes it
	// was read from, which MaxBulk and the bytes that actually arrived
	// bound (a clone copies them once). Default 64 MiB: 932,067 elements
	// on 64-bit platforms, fewer than the default MaxValues. A reply over
	// it is skipped from the header that breaks it.
	MaxReplyBytes int
}

// valueSize is what each aggregate element counts against MaxReplyBytes.
const valueSize = int(unsafe.Sizeof(Value{}))

// maxLimit caps every Limits field: a larger one is lowered to it, so that
// the scanner's arithmetic on lengths and counts cannot overflow.
const maxLimit = math.MaxInt >> 1

// Hard bounds: a length above them is no reply a server sends but a broken
// or hostile stream, refused with a *ProtocolError however high the
// Limits; a MaxBulk or MaxAggregate above them is lowered to them. Below
// them, a length over the Limits is skipped (see Limits).
const (
	// HardMaxBulk is the longest string a decoder skips: 1 TiB.
	HardMaxBulk = 1 << 40
	// HardMaxAggregate is the most elements (pairs for a map or
	// attribute) one aggregate may declare: 2^32, past the most a
	// server's collection holds.
	HardMaxAggregate = 1 << 32
)

// maxOwed bounds the values a skipped reply may still owe, so that the
// count cannot overflow: past it, the stream is refused.
const maxOwed = 1 << 62

// Default limits.
const (
	DefaultMaxBulk       = 512 << 20
	DefaultMaxAggregate  = 1 << 22
	DefaultMaxDepth      = 128
	DefaultMaxLine       = 64 << 10
	DefaultMaxValues     = 1 << 22
	DefaultMaxReplyBytes = 64 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxBulk <= 0 {
		l.MaxBulk = DefaultMaxBulk
	}
	if l.MaxAggregate <= 0 {
		l.MaxAggregate = DefaultMaxAggregate
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxLine <= 0 {
		l.MaxLine = DefaultMaxLine
	}
	if l.MaxValues <= 0 {
		l.MaxValues = DefaultMaxValues
	}
	if l.MaxReplyBytes <= 0 {
		l.MaxReplyBytes = DefaultMaxReplyBytes
	}
	l.MaxBulk = int(min(int64(l.MaxBulk), HardMaxBulk))
	l.MaxAggregate = int(min(int64(l.MaxAggregate), HardMaxAggregate))
	l.MaxDepth = min(l.MaxDepth, maxLimit)
	l.MaxLine = min(l.MaxLine, maxLimit)
	l.MaxValues = min(l.MaxValues, maxLimit)
	l.MaxReplyBytes = min(l.MaxReplyBytes, maxLimit)
	return l
}

// maxElems is the most aggregate elements one reply may declare under
// MaxReplyBytes.
func (l Limits) maxElems() int { return l.MaxReplyBytes / valueSize }

// scanner finds where one frame ends and counts its values. It is
// resumable: fed a growing prefix of the same frame, it carries on where it
// stopped, so a frame that arrives in many pieces is scanned once.
//
// Once the frame breaks a skippable limit the scanner skips it: it goes
// on validating the frame's lines but counts only the values still owed
// (one number, whatever the nesting) and passes over bulk data without
// needing it in b. A Reader then discards what was skipped as it goes
// (discard), so the frame never needs to fit its buffer.
type scanner struct {
	lim      Limits
	pos      int     // bytes of the frame fully scanned (since base)
	lineFrom int     // where to resume the search for '\n'
	nvals    int     // values completed or opened so far
	elems    int     // elements declared so far by the aggregates opened
	stack    []int64 // elements still owed by each open aggregate
	need     int     // when > 0: the frame is at least this long
	exact    bool    // need is the frame's exact length, not a lower bound
	top      Type    // the frame's own type (past any attribute), once read
	skipping bool    // the frame broke a limit: skip it
	sk       skipState
}

// skipState is the scanner's state while it skips a frame.
type skipState struct {
	base  int   // bytes of the frame discarded before b[0]
	hdr   int   // where the bulk being passed starts, from the frame's start
	owed  int64 // values still owed, the one being read included
	data  int64 // bulk bytes still to pass
	off   int64 // bulk bytes passed, for a verbatim string's ':'
	verb  bool  // the bulk is a verbatim string
	crlf  bool  // the bulk's CRLF is still to check
	limit limitKind
	max   int   // the limit's value
	size  int64 // the size that broke it
}

func (s *scanner) reset() {
	s.pos, s.lineFrom, s.nvals, s.elems, s.need, s.exact, s.top = 0, 0, 0, 0, 0, false, 0
	s.stack = s.stack[:0]
	if s.skipping {
		s.skipping, s.sk = false, skipState{}
	}
}

func (s *scanner) fail(off int, msg string) error {
	return &ProtocolError{Msg: msg, Offset: s.sk.base + off}
}

// errVerbatim is the message of a verbatim string without its format.
const errVerbatim = "verbatim string without a 3-byte format and ':'"

// scan advances over b, a prefix of one frame starting at b[0] (or, while
// skipping, the rest of it from where the Reader discarded it). It
// returns done=true when the frame is complete; the frame is then
// b[:s.pos] and it holds s.nvals values, or, when s.skipping, it was
// skipped and ends at b[s.pos]. It returns done=false and no error when b
// ends before the frame does.
func (s *scanner) scan(b []byte) (done bool, err error) {
	if s.skipping {
		return s.skip(b)
	}
	for {
		if s.need > len(b) {
			return false, nil
		}
		start := s.pos
		from := max(s.lineFrom, start)
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			if len(b)-start > s.lim.MaxLine+2 {
				return false, s.fail(start, "line longer than "+strconv.Itoa(s.lim.MaxLine)+" bytes")
			}
			s.lineFrom = len(b)
			s.need, s.exact = len(b)+1, false
			return false, nil
		}
		nl := from + i
		if nl-start > s.lim.MaxLine+2 {
			return false, s.fail(start, "line longer than "+strconv.Itoa(s.lim.MaxLine)+" bytes")
		}
		if nl == start || b[nl-1] != '\r' {
			return false, s.fail(nl, "line not terminated by CRLF")
		}
		if nl-1 == start {
			return false, s.fail(start, "empty line, no type byte")
		}
		typ, line := Type(b[start]), b[start+1:nl-1]
		end := nl + 1
		count := int64(-1) // elements owed by an aggregate opened here
		switch typ {
		case SimpleString, Error:
		case Integer:
			if _, ok := parseInt(line); !ok {
				return false, s.fail(start, "invalid integer "+quoteSome(line))
			}
		case Null:
			if len(line) != 0 {
				return false, s.fail(start, "null with content")
			}
		case Boolean:
			if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
				return false, s.fail(start, "invalid boolean "+quoteSome(line))
			}
		case Double:
			if _, ok := parseDouble(line); !ok {
				return false, s.fail(start, "invalid double "+quoteSome(line))
			}
		case BigNumber:
			if !validBigNumber(line) {
				return false, s.fail(start, "invalid big number "+quoteSome(line))
			}
		case BulkString, BulkError, Verbatim:
			n, err := s.length(start, line, typ == BulkString)
			if err != nil {
				return false, err
			}
			if n > int64(s.lim.MaxBulk) {
				if n > HardMaxBulk {
					return false, s.fail(start, "bulk length "+strconv.FormatInt(n, 10)+" over the limit of "+strconv.FormatInt(HardMaxBulk, 10))
				}
				if typ == Verbatim && n < 4 {
					return false, s.fail(start, errVerbatim)
				}
				s.startSkip(end, typ, -1, limitBulk, s.lim.MaxBulk, n)
				s.skipData(start, typ, n)
				return s.skip(b)
			}
			if n >= 0 {
				if n > int64(len(b)-end)-2 {
					s.lineFrom = start // the header is parsed again, cheaply
					s.need = int(min(int64(end)+n+2, math.MaxInt))
					s.exact = s.lastInFrame()
					return false, nil
				}
				end += int(n) + 2
				if b[end-2] != '\r' || b[end-1] != '\n' {
					return false, s.fail(end-2, "bulk data not terminated by CRLF")
				}
				if typ == Verbatim && (n < 4 || b[nl+4] != ':') {
					return false, s.fail(start, errVerbatim)
				}
			}
		case Array, Set, Push, Map, Attribute:
			n, err := s.length(start, line, typ == Array)
			if err != nil {
				return false, err
			}
			if n > int64(s.lim.MaxAggregate) {
				if n > HardMaxAggregate {
					return false, s.fail(start, "aggregate length "+strconv.FormatInt(n, 10)+" over the limit of "+strconv.FormatInt(HardMaxAggregate, 10))
				}
				s.startSkip(end, typ, owedBy(typ, n), limitAggregate, s.lim.MaxAggregate, n)
				return s.skip(b)
			}
			count = owedBy(typ, n)
		default:
			return false, s.fail(start, "unknown type byte "+strconv.QuoteRune(rune(typ)))
		}
		if s.nvals >= s.lim.MaxValues {
			s.startSkip(end, typ, count, limitValues, s.lim.MaxValues, int64(s.nvals)+1)
			return s.skip(b)
		}
		if count > 0 {
			// Every element declared will take a Value: past the
			// limit, skip them now, before they arrive. s.elems never
			// exceeds maxElems, so the subtraction cannot overflow.
			if maxElems := s.lim.maxElems(); count > int64(maxElems-s.elems) {
				s.startSkip(end, typ, count, limitReplyBytes, s.lim.MaxReplyBytes, (int64(s.elems)+count)*int64(valueSize))
				return s.skip(b)
			}
			if len(s.stack) >= s.lim.MaxDepth {
				s.startSkip(end, typ, count, limitDepth, s.lim.MaxDepth, int64(len(s.stack))+1)
				return s.skip(b)
			}
		}
		if s.top == 0 && typ != Attribute && s.lastInFrame() {
			s.top = typ // the frame's own value, past any attribute
		}
		s.pos, s.lineFrom, s.need, s.exact = end, end, 0, false
		s.nvals++
		if count > 0 {
			s.elems += int(count)
			s.stack = append(s.stack, count)
			continue
		}
		if s.completed() {
			return true, nil
		}
	}
}

// owedBy returns the values an aggregate header of type typ declaring n
// elements (pairs for a map or attribute) owes, or -1 for a null.
func owedBy(typ Type, n int64) int64 {
	switch {
	case n < 0:
		return -1
	case typ == Map:
		return 2 * n
	case typ == Attribute:
		return 2*n + 1 // the pairs, then the value they describe
	}
	return n
}

// startSkip turns the scan into a skip at the header of type typ that
// ends at end, which broke limit with size; count is what the header owes
// (-1 for a scalar). The values the open aggregates still owe become one
// number: each level owes its elements, less the one the level above
// holds open.
func (s *scanner) startSkip(end int, typ Type, count int64, limit limitKind, value int, size int64) {
	owed := int64(1)
	for _, o := range s.stack {
		owed += o - 1
	}
	if s.top == 0 && typ != Attribute && owed == 1 {
		s.top = typ
	}
	s.stack = s.stack[:0]
	s.skipping = true
	s.sk = skipState{owed: owed - 1 + max64(count, 0), limit: limit, max: value, size: size}
	s.pos, s.lineFrom, s.need, s.exact = end, end, 0, false
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// skipData makes the skip pass over the n bytes of a bulk of type typ
// whose header is at start, and their CRLF (nothing for a null).
func (s *scanner) skipData(start int, typ Type, n int64) {
	if n < 0 {
		return
	}
	s.sk.data, s.sk.off, s.sk.verb, s.sk.crlf = n, 0, typ == Verbatim, true
	s.sk.hdr = s.sk.base + start
}

// skip goes on scanning a frame that broke a limit, from s.pos, until it
// ends: every line is validated as scan does, aggregates only add to the
// values owed, and bulk data is passed over whether or not b holds it.
func (s *scanner) skip(b []byte) (done bool, err error) {
	for {
		if s.sk.crlf {
			if s.sk.data > 0 {
				k := min(s.sk.data, int64(len(b)-s.pos))
				if s.sk.verb && s.sk.off <= 3 && 3 < s.sk.off+k {
					if b[s.pos+int(3-s.sk.off)] != ':' {
						return false, &ProtocolError{Msg: errVerbatim, Offset: s.sk.hdr}
					}
				}
				s.pos += int(k)
				s.sk.data -= k
				s.sk.off += k
				if s.sk.data > 0 {
					s.lineFrom, s.need, s.exact = s.pos, len(b)+1, false
					return false, nil
				}
			}
			if len(b)-s.pos < 2 {
				s.lineFrom, s.need, s.exact = s.pos, s.pos+2, false
				return false, nil
			}
			if b[s.pos] != '\r' || b[s.pos+1] != '\n' {
				return false, s.fail(s.pos, "bulk data not terminated by CRLF")
			}
			s.pos += 2
			s.lineFrom, s.sk.crlf = s.pos, false
		}
		if s.sk.owed == 0 {
			s.need, s.exact = 0, false
			return true, nil
		}
		start := s.pos
		from := max(s.lineFrom, start)
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			if len(b)-start > s.lim.MaxLine+2 {
				return false, s.fail(start, "line longer than "+strconv.Itoa(s.lim.MaxLine)+" bytes")
			}
			s.lineFrom = len(b)
			s.need, s.exact = len(b)+1, false
			return false, nil
		}
		nl := from + i
		if nl-start > s.lim.MaxLine+2 {
			return false, s.fail(start, "line longer than "+strconv.Itoa(s.lim.MaxLine)+" bytes")
		}
		if nl == start || b[nl-1] != '\r' {
			return false, s.fail(nl, "line not terminated by CRLF")
		}
		if nl-1 == start {
			return false, s.fail(start, "empty line, no type byte")
		}
		typ, line := Type(b[start]), b[start+1:nl-1]
		if err := s.check(start, typ, line); err != nil {
			return false, err
		}
		if s.top == 0 && typ != Attribute && s.sk.owed == 1 {
			s.top = typ
		}
		s.pos, s.lineFrom = nl+1, nl+1
		s.sk.owed--
		switch typ {
		case BulkString, BulkError, Verbatim:
			n, err := s.length(start, line, typ == BulkString)
			if err != nil {
				return false, err
			}
			if n > HardMaxBulk {
				return false, s.fail(start, "bulk length "+strconv.FormatInt(n, 10)+" over the limit of "+strconv.FormatInt(HardMaxBulk, 10))
			}
			if typ == Verbatim && n >= 0 && n < 4 {
				return false, s.fail(start, errVerbatim)
			}
			s.skipData(start, typ, n)
		case Array, Set, Push, Map, Attribute:
			n, err := s.length(start, line, typ == Array)
			if err != nil {
				return false, err
			}
			if n > HardMaxAggregate {
				return false, s.fail(start, "aggregate length "+strconv.FormatInt(n, 10)+" over the limit of "+strconv.FormatInt(HardMaxAggregate, 10))
			}
			if c := owedBy(typ, n); c > 0 {
				if s.sk.owed+c > maxOwed {
					return false, s.fail(start, "reply declares more than 2^62 values")
				}
				s.sk.owed += c
			}
		}
	}
}

// check validates a scalar line as scan does, for skip; lengths are
// parsed by the caller.
func (s *scanner) check(start int, typ Type, line []byte) error {
	switch typ {
	case SimpleString, Error, BulkString, BulkError, Verbatim, Array, Set, Push, Map, Attribute:
	case Integer:
		if _, ok := parseInt(line); !ok {
			return s.fail(start, "invalid integer "+quoteSome(line))
		}
	case Null:
		if len(line) != 0 {
			return s.fail(start, "null with content")
		}
	case Boolean:
		if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
			return s.fail(start, "invalid boolean "+quoteSome(line))
		}
	case Double:
		if _, ok := parseDouble(line); !ok {
			return s.fail(start, "invalid double "+quoteSome(line))
		}
	case BigNumber:
		if !validBigNumber(line) {
			return s.fail(start, "invalid big number "+quoteSome(line))
		}
	default:
		return s.fail(start, "unknown type byte "+strconv.QuoteRune(rune(typ)))
	}
	return nil
}

// discard forgets the bytes a skip has passed, which a Reader then drops
// from its buffer: it returns their number.
func (s *scanner) discard() int {
	n := s.pos
	s.pos = 0
	s.lineFrom -= n
	s.need = max(s.need-n, 1)
	s.sk.base += n
	return n
}

// completed records that a value just ended and reports whether that ended
// the frame.
func (s *scanner) completed() bool {
	for len(s.stack) > 0 {
		top := len(s.stack) - 1
		s.stack[top]--
		if s.stack[top] > 0 {
			return false
		}
		s.stack = s.stack[:top]
	}
	return true
}

// lastInFrame reports whether the value being scanned is the last one of
// the frame: every open aggregate owes just this one.
func (s *scanner) lastInFrame() bool {
	for _, owed := range s.stack {
		if owed != 1 {
			return false
		}
	}
	return true
}

// length parses a bulk or aggregate length: a decimal from 0 up, or -1
// where RESP2 allows a null. Streamed RESP3 lengths ("?") are refused.
func (s *scanner) length(off int, line []byte, nullable bool) (int64, error) {
	if len(line) == 1 && line[0] == '?' {
		return 0, s.fail(off, "streamed RESP3 strings and aggregates are not supported")
	}
	n, ok := parseInt(line)
	if !ok || len(line) > 1 && line[0] == '0' || line[0] == '-' && string(line) != "-1" {
		return 0, s.fail(off, "invalid length "+quoteSome(line))
	}
	if n < 0 && !(n == -1 && nullable) {
		return 0, s.fail(off, "negative length "+quoteSome(line))
	}
	return n, nil
}

func validBigNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quoteSome quotes at most 32 bytes of b for an error message.
func quoteSome(b []byte) string {
	if len(b) > 32 {
		return strconv.Quote(string(b[:32])) + "…"
	}
	return strconv.Quote(string(b))
}
