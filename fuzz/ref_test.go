package fuzz

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/echomq/echomq-go/resp"
)

// ref is a reference decoder: slow, recursive, written from the RESP3
// specification with strconv and nothing shared with package resp. It
// checks what resp decodes; it has no limits but nesting depth, deep
// enough for any reply resp skips for being nested too deep.
type ref struct {
	b   []byte
	pos int
}

// refParse decodes one frame at the start of b, or reports ok=false when b
// does not start with a complete, valid frame.
func refParse(b []byte) (v resp.Value, n int, ok bool) {
	r := &ref{b: b}
	v, ok = r.value(0)
	return v, r.pos, ok
}

// line returns the next line without its CRLF: the bytes up to the first
// LF, which a CR must precede.
func (r *ref) line() (string, bool) {
	i := bytes.IndexByte(r.b[r.pos:], '\n')
	if i < 1 || r.b[r.pos+i-1] != '\r' {
		return "", false
	}
	s := string(r.b[r.pos : r.pos+i-1])
	r.pos += i + 1
	return s, true
}

// length parses a length: digits without a sign or leading zero, or -1
// when null is allowed.
func length(s string, nullable bool) (int, bool) {
	if nullable && s == "-1" {
		return -1, true
	}
	if s == "" || s[0] < '0' || s[0] > '9' || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return int(n), err == nil
}

func (r *ref) value(depth int) (resp.Value, bool) {
	if depth > refMaxDepth || r.pos >= len(r.b) {
		return resp.Value{}, false
	}
	typ := resp.Type(r.b[r.pos])
	r.pos++
	s, ok := r.line()
	if !ok {
		return resp.Value{}, false
	}
	v := resp.Value{Type: typ}
	switch typ {
	case resp.SimpleString, resp.Error:
		v.Str = []byte(s)
	case resp.Integer:
		// A signed 64-bit decimal; resp takes at most 19 digits, so
		// zero-padding past that is refused too.
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || strings.HasPrefix(s, "+") || len(strings.TrimPrefix(s, "-")) > 19 {
			return v, false
		}
		v.Int = n
	case resp.Null:
		return v, s == ""
	case resp.Boolean:
		if s != "t" && s != "f" {
			return v, false
		}
		v.Int = map[string]int64{"t": 1, "f": 0}[s]
	case resp.Double:
		f, ok := refDouble(s)
		if !ok {
			return v, false
		}
		v.Int, v.Str = int64(math.Float64bits(f)), []byte(s)
	case resp.BigNumber:
		digits := strings.TrimLeft(s, "+-")
		if digits == "" || len(s)-len(digits) > 1 || strings.Trim(digits, "0123456789") != "" {
			return v, false
		}
		v.Str = []byte(s)
	case resp.BulkString, resp.BulkError, resp.Verbatim:
		n, ok := length(s, typ == resp.BulkString)
		if !ok {
			return v, false
		}
		if n < 0 {
			return resp.Value{Type: resp.Null}, true
		}
		if n > len(r.b)-r.pos-2 || string(r.b[r.pos+n:r.pos+n+2]) != "\r\n" {
			return v, false
		}
		v.Str = r.b[r.pos : r.pos+n]
		r.pos += n + 2
		if typ == resp.Verbatim && (n < 4 || v.Str[3] != ':') {
			return v, false
		}
	case resp.Array, resp.Set, resp.Push, resp.Map, resp.Attribute:
		n, ok := length(s, typ == resp.Array)
		if !ok || n > len(r.b) {
			return v, false
		}
		if n < 0 {
			return resp.Value{Type: resp.Null}, true
		}
		if typ == resp.Map || typ == resp.Attribute {
			n *= 2
		}
		for range n {
			e, ok := r.value(depth + 1)
			if !ok {
				return v, false
			}
			v.Elems = append(v.Elems, e)
		}
		if typ == resp.Attribute {
			// The attribute describes the value after it, which keeps
			// any attribute of its own further down the chain.
			next, ok := r.value(depth + 1)
			if !ok {
				return v, false
			}
			attr := v
			last := &next
			for last.Attr != nil {
				last = last.Attr
			}
			last.Attr = &attr
			return next, true
		}
	default:
		return v, false
	}
	return v, true
}

// refMaxDepth is the reference decoder's nesting bound: far past
// limits.MaxDepth, so that it decodes what resp skips for its depth.
const refMaxDepth = 1 << 16

// refBreaks reports whether v, decoded by the reference decoder, breaks a
// skippable limit of lim: then resp skips it (a TooLarge value), else it
// decodes it. The counts follow the Limits' documentation: every value
// counts against MaxValues, attributes and their pairs included; every
// aggregate element (pairs for maps and attributes, which add one Value
// of their own) against MaxReplyBytes; a non-empty aggregate or an
// attribute is a level of MaxDepth.
func refBreaks(v resp.Value, lim resp.Limits) bool {
	st := refStats(v)
	return st.values > lim.MaxValues || st.elems > lim.MaxReplyBytes/int(unsafe.Sizeof(resp.Value{})) ||
		st.depth > lim.MaxDepth || st.bulk > lim.MaxBulk || st.agg > lim.MaxAggregate
}

type stats struct{ values, elems, depth, bulk, agg int }

func refStats(v resp.Value) stats {
	var st stats
	own := stats{values: 1}
	switch v.Type {
	case resp.BulkString, resp.BulkError, resp.Verbatim:
		own.bulk = len(v.Str)
	case resp.Array, resp.Set, resp.Push, resp.Map, resp.Attribute:
		own.elems = len(v.Elems)
		own.agg = len(v.Elems)
		if v.Type == resp.Map || v.Type == resp.Attribute {
			own.agg /= 2
		}
		inner := 0
		for _, e := range v.Elems {
			es := refStats(e)
			own.values += es.values
			own.elems += es.elems
			own.bulk = max(own.bulk, es.bulk)
			own.agg = max(own.agg, es.agg)
			inner = max(inner, es.depth)
		}
		if len(v.Elems) > 0 || v.Type == resp.Attribute {
			own.depth = 1 + inner
		}
	}
	st = own
	// The attributes before v, nearest first: each holds its pairs and
	// what follows it, one level deeper.
	for a := v.Attr; a != nil; a = a.Attr {
		bare := *a
		bare.Attr = nil
		as := refStats(bare) // its pairs, as a level of their own
		st.values += as.values
		st.elems += as.elems + 1
		st.bulk = max(st.bulk, as.bulk)
		st.agg = max(st.agg, as.agg)
		st.depth = max(st.depth+1, as.depth)
	}
	return st
}

// refDouble parses a RESP3 double: a decimal float, inf, -inf or nan.
func refDouble(s string) (float64, bool) {
	switch s {
	case "inf", "+inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	case "nan", "-nan":
		return math.NaN(), true
	}
	if s == "" || len(s) > 512 || strings.Trim(s, "0123456789.eE+-") != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
