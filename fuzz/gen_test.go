package fuzz

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/echomq/echomq-go/resp"
)

// gen builds a Value from fuzz bytes: each byte it takes picks a type, a
// length or content. When the bytes run out it reads zeros, so every input
// makes a finite value.
type gen struct {
	b []byte
}

// maxDepth bounds the nesting gen builds, attributes included.
const maxDepth = 8

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

// n returns a number in [0, limit).
func (g *gen) n(limit int) int { return int(g.byte()) % limit }

// bytes takes up to n bytes.
func (g *gen) bytes(n int) []byte {
	n = min(n, len(g.b))
	out := bytes.Clone(g.b[:n])
	g.b = g.b[n:]
	return out
}

// line takes bytes for a simple string or error: no CR or LF.
func (g *gen) line() []byte {
	b := g.bytes(g.n(32))
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return b
}

func (g *gen) int64() int64 {
	var b [8]byte
	copy(b[:], g.bytes(8))
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// value builds one value at the given depth.
func (g *gen) value(depth int) resp.Value {
	kind := g.byte() % 17
	if depth >= maxDepth && kind >= 10 {
		kind %= 10
	}
	switch kind {
	case 0:
		return resp.Value{Type: resp.SimpleString, Str: g.line()}
	case 1:
		return resp.Value{Type: resp.Error, Str: g.line()}
	case 2:
		return resp.Value{Type: resp.Integer, Int: g.int64()}
	case 3:
		return resp.Value{Type: resp.BulkString, Str: g.bytes(g.n(200))}
	case 4:
		return resp.Value{Type: resp.BulkError, Str: g.bytes(g.n(64))}
	case 5:
		f := []byte{'a' + byte(g.n(26)), 'a' + byte(g.n(26)), 'a' + byte(g.n(26)), ':'}
		return resp.Value{Type: resp.Verbatim, Str: append(f, g.bytes(g.n(64))...)}
	case 6:
		return resp.Value{Type: resp.BigNumber, Str: g.digits()}
	case 7:
		return resp.Value{Type: resp.Null}
	case 8:
		return resp.Value{Type: resp.Boolean, Int: int64(g.byte() & 1)}
	case 9:
		return resp.Value{Type: resp.Double, Int: g.int64()} // any bits: NaNs, -0, infinities
	case 10:
		return resp.Value{Type: resp.Array, Elems: g.elems(g.n(6), depth)}
	case 11:
		return resp.Value{Type: resp.Set, Elems: g.elems(g.n(6), depth)}
	case 12:
		return resp.Value{Type: resp.Push, Elems: g.elems(g.n(6), depth)}
	case 13:
		return resp.Value{Type: resp.Map, Elems: g.elems(2*g.n(4), depth)}
	case 14, 15:
		// An attribute before a value; the value may already carry one,
		// which makes a chain: the new one comes first on the wire.
		v := g.value(depth + 1)
		a := &resp.Value{Type: resp.Attribute, Elems: g.elems(2*g.n(3), depth), Attr: v.Attr}
		v.Attr = a
		return v
	default:
		return resp.Value{Type: resp.Integer, Int: int64(g.n(20)) - 10}
	}
}

func (g *gen) elems(n, depth int) []resp.Value {
	var out []resp.Value
	for range n {
		out = append(out, g.value(depth+1))
	}
	return out
}

// digits makes a big number: an optional '-' and 1 to 40 digits.
func (g *gen) digits() []byte {
	var b []byte
	if g.byte()&1 == 1 {
		b = append(b, '-')
	}
	for range 1 + g.n(40) {
		b = append(b, '0'+byte(g.n(10)))
	}
	return b
}

// equal compares values deeply: nil and empty slices are equal, doubles
// compare by bits except that all NaNs are equal, and a double's text is
// compared only when both have one.
func equal(a, b resp.Value) bool {
	if a.Type != b.Type {
		return false
	}
	if a.Type == resp.Double {
		fa, fb := a.Float(), b.Float()
		if !(math.IsNaN(fa) && math.IsNaN(fb)) && math.Float64bits(fa) != math.Float64bits(fb) {
			return false
		}
		if len(a.Str) > 0 && len(b.Str) > 0 && !bytes.Equal(a.Str, b.Str) {
			return false
		}
	} else if a.Int != b.Int || !bytes.Equal(a.Str, b.Str) {
		return false
	}
	if len(a.Elems) != len(b.Elems) || (a.Attr == nil) != (b.Attr == nil) {
		return false
	}
	for i := range a.Elems {
		if !equal(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return a.Attr == nil || equal(*a.Attr, *b.Attr)
}
