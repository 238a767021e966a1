package resp

import "math"

// builder turns one complete, already scanned frame into Values. The scan
// validated every line, so the builder trusts the frame's shape. Children
// of an aggregate take consecutive arena slots, reserved before any of
// them is filled, so every Elems is one slice of the arena.
type builder struct {
	b     []byte
	pos   int
	arena []Value
	next  int // first unreserved arena slot
}

// build decodes the frame b, which holds n values, into arena[0:n] and
// returns the top-level value. arena must have room for n values.
func build(b []byte, n int, arena []Value) Value {
	bd := builder{b: b, arena: arena[:n], next: 1}
	bd.fill(0)
	return bd.arena[0]
}

// reserve takes n consecutive slots and returns the first one's index.
func (bd *builder) reserve(n int) int {
	first := bd.next
	bd.next += n
	return first
}

// line returns the type and the content of the line at pos and moves past
// it.
func (bd *builder) line() (Type, []byte) {
	start := bd.pos
	i := start
	for bd.b[i] != '\n' {
		i++
	}
	bd.pos = i + 1
	return Type(bd.b[start]), bd.b[start+1 : i-1]
}

// children reserves n slots for an aggregate's elements, fills them in
// order and returns them as one slice.
func (bd *builder) children(n int) []Value {
	first := bd.reserve(n)
	for i := first; i < first+n; i++ {
		bd.fill(i)
	}
	return bd.arena[first : first+n : first+n]
}

func (bd *builder) fill(slot int) {
	// The commonest types first, their headers parsed in one pass over
	// the bytes and the value stored in place.
	switch Type(bd.b[bd.pos]) {
	case BulkString:
		if n := bd.length(); n >= 0 {
			bd.arena[slot] = Value{Type: BulkString, Str: bd.b[bd.pos : bd.pos+n : bd.pos+n]}
			bd.pos += n + 2
		} else {
			bd.arena[slot] = Value{Type: Null}
		}
		return
	case Integer:
		bd.arena[slot] = Value{Type: Integer, Int: bd.integer()}
		return
	case Array:
		if n := bd.length(); n >= 0 {
			bd.arena[slot] = Value{Type: Array, Elems: bd.children(n)}
		} else {
			bd.arena[slot] = Value{Type: Null}
		}
		return
	case Map:
		n := bd.length()
		bd.arena[slot] = Value{Type: Map, Elems: bd.children(2 * n)}
		return
	}
	typ, line := bd.line()
	v := Value{Type: typ}
	switch typ {
	case SimpleString, Error, BigNumber:
		v.Str = line
	case Integer:
		v.Int, _ = parseInt(line)
	case Boolean:
		if line[0] == 't' {
			v.Int = 1
		}
	case Double:
		f, _ := parseDouble(line)
		v.Int = int64(math.Float64bits(f))
		v.Str = line
	case BulkString, BulkError, Verbatim:
		n, _ := parseInt(line)
		if n < 0 {
			v.Type = Null
			break
		}
		v.Str = bd.b[bd.pos : bd.pos+int(n) : bd.pos+int(n)]
		bd.pos += int(n) + 2
	case Array, Set, Push:
		n, _ := parseInt(line)
		if n < 0 {
			v.Type = Null
			break
		}
		v.Elems = bd.children(int(n))
	case Map:
		n, _ := parseInt(line)
		v.Elems = bd.children(2 * int(n))
	case Attribute:
		// The attribute takes a slot of its own; the value it describes
		// takes this slot. When attributes follow each other, the one
		// nearest the value is its Attr and each earlier one hangs off the
		// Attr of the next, so that AppendValue writes them back in order.
		n, _ := parseInt(line)
		at := bd.reserve(1)
		bd.arena[at] = Value{Type: Attribute, Elems: bd.children(2 * int(n))}
		bd.fill(slot)
		last := &bd.arena[slot]
		for last.Attr != nil {
			last = last.Attr
		}
		last.Attr = &bd.arena[at]
		return
	}
	bd.arena[slot] = v
}

// length parses the length in the header at pos and moves past the
// header. The scan validated it: "-1", or digits within the limits.
func (bd *builder) length() int {
	b, i := bd.b, bd.pos+1
	if b[i] == '-' {
		bd.pos = i + 4 // "-1\r\n"
		return -1
	}
	n := 0
	for ; b[i] != '\r'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	bd.pos = i + 2
	return n
}

// integer parses the integer line at pos, which the scan validated (an
// optional '-' and at most 19 digits, in range), and moves past it.
func (bd *builder) integer() int64 {
	b, i := bd.b, bd.pos+1
	neg := b[i] == '-'
	if neg {
		i++
	}
	var n uint64
	for ; b[i] != '\r'; i++ {
		n = n*10 + uint64(b[i]-'0')
	}
	bd.pos = i + 2
	if neg {
		return -int64(n)
	}
	return int64(n)
}
