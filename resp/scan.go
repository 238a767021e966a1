package resp

import (
	"bytes"
	"math"
	"strconv"
	"unsafe"
)

// Limits bound what a decoder accepts, so that a hostile or broken peer gets
// a ProtocolError instead of a crash or an allocation it never paid for.
// A zero field takes its default; a field above math.MaxInt/2 is lowered
// to it.
type Limits struct {
	// MaxBulk is the longest bulk string, bulk error or verbatim string,
	// in bytes. Default 512 MiB, the server's own proto-max-bulk-len.
	MaxBulk int
	// MaxAggregate is the most elements one array, set or push may
	// declare, and the most pairs for a map or attribute. Default 1<<22.
	MaxAggregate int
	// MaxDepth is the deepest nesting of aggregates. Default 128.
	MaxDepth int
	// MaxLine is the longest line: a simple string, simple error, number
	// or header. Default 64 KiB.
	MaxLine int
	// MaxValues is the most values one reply may hold in all, nested ones
	// included. Default 1<<22.
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
	// on 64-bit platforms, fewer than the default MaxValues.
	MaxReplyBytes int
}

// valueSize is what each aggregate element counts against MaxReplyBytes.
const valueSize = int(unsafe.Sizeof(Value{}))

// maxLimit caps every Limits field: a larger one is lowered to it, so that
// the scanner's arithmetic on lengths and counts cannot overflow.
const maxLimit = math.MaxInt >> 1

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
	l.MaxBulk = min(l.MaxBulk, maxLimit)
	l.MaxAggregate = min(l.MaxAggregate, maxLimit)
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
type scanner struct {
	lim      Limits
	pos      int     // bytes of the frame fully scanned
	lineFrom int     // where to resume the search for '\n'
	nvals    int     // values completed or opened so far
	elems    int     // elements declared so far by the aggregates opened
	stack    []int64 // elements still owed by each open aggregate
	need     int     // when > 0: the frame is at least this long
	exact    bool    // need is the frame's exact length, not a lower bound
}

func (s *scanner) reset() {
	s.pos, s.lineFrom, s.nvals, s.elems, s.need, s.exact = 0, 0, 0, 0, 0, false
	s.stack = s.stack[:0]
}

func (s *scanner) fail(off int, msg string) error {
	return &ProtocolError{Msg: msg, Offset: off}
}

// scan advances over b, a prefix of one frame starting at b[0]. It returns
// done=true when the frame is complete; the frame is then b[:s.pos] and it
// holds s.nvals values. It returns done=false and no error when b ends
// before the frame does.
func (s *scanner) scan(b []byte) (done bool, err error) {
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
				return false, s.fail(start, "bulk length "+strconv.FormatInt(n, 10)+" over the limit of "+strconv.Itoa(s.lim.MaxBulk))
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
					return false, s.fail(start, "verbatim string without a 3-byte format and ':'")
				}
			}
		case Array, Set, Push, Map, Attribute:
			n, err := s.length(start, line, typ == Array)
			if err != nil {
				return false, err
			}
			if n > int64(s.lim.MaxAggregate) {
				return false, s.fail(start, "aggregate length "+strconv.FormatInt(n, 10)+" over the limit of "+strconv.Itoa(s.lim.MaxAggregate))
			}
			switch {
			case n < 0:
			case typ == Map:
				count = 2 * n
			case typ == Attribute:
				count = 2*n + 1 // the pairs, then the value they describe
			default:
				count = n
			}
		default:
			return false, s.fail(start, "unknown type byte "+strconv.QuoteRune(rune(typ)))
		}
		s.pos, s.lineFrom, s.need, s.exact = end, end, 0, false
		s.nvals++
		if s.nvals > s.lim.MaxValues {
			return false, s.fail(start, "reply holds more than "+strconv.Itoa(s.lim.MaxValues)+" values")
		}
		if count > 0 {
			// Every element declared will take a Value: refuse them
			// now, before they arrive. s.elems never exceeds maxElems,
			// so the subtraction cannot overflow.
			if maxElems := s.lim.maxElems(); count > int64(maxElems-s.elems) {
				return false, s.fail(start, "reply's values would take more than "+strconv.Itoa(s.lim.MaxReplyBytes)+" bytes (MaxReplyBytes)")
			}
			s.elems += int(count)
			if len(s.stack) >= s.lim.MaxDepth {
				return false, s.fail(start, "nesting deeper than "+strconv.Itoa(s.lim.MaxDepth))
			}
			s.stack = append(s.stack, count)
			continue
		}
		if s.completed() {
			return true, nil
		}
	}
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
