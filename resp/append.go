package resp

import (
	"math"
	"strconv"
)

// The encoders append to dst and return the extended slice, like
// strconv.AppendInt: the caller owns the buffer and nothing allocates when
// dst has room.

// HeaderLen is the length of the header AppendArrayHeader writes for n
// elements, and of a bulk string's for n bytes ("*n\r\n", "$n\r\n"),
// for n >= 0: where an encoded argument's bytes start, without encoding.
func HeaderLen(n int) int {
	l := 4
	for ; n >= 10; n /= 10 {
		l++
	}
	return l
}

// AppendArrayHeader appends an array header for n elements ("*n\r\n").
func AppendArrayHeader(dst []byte, n int) []byte { return appendHeader(dst, '*', int64(n)) }

// AppendBulk appends b as a bulk string.
func AppendBulk(dst, b []byte) []byte {
	dst = appendHeader(dst, '$', int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulkInt appends the decimal text of i as a bulk string, the way a
// command argument carries a number.
func AppendBulkInt(dst []byte, i int64) []byte {
	appendBulkInt(&dst, i)
	return dst
}

// appendBulkInt is AppendBulkInt appending to *dst: the one call of
// both AppendBulkInt and Cmds.ArgInt, which are small enough to inline
// (so that pipeline.Batch.ArgInt, over Cmds.ArgInt, inlines too).
//
//go:noinline
func appendBulkInt(dst *[]byte, i int64) {
	if 0 <= i && i < 10 {
		*dst = append(*dst, '$', '1', '\r', '\n', byte('0'+i), '\r', '\n')
		return
	}
	var tmp [20]byte
	num := strconv.AppendInt(tmp[:0], i, 10)
	d := appendHeader(*dst, '$', int64(len(num)))
	d = append(d, num...)
	*dst = append(d, '\r', '\n')
}

// AppendCommand appends a command whose arguments are strings, as an
// array of bulk strings.
//
// One-digit headers, most of a command's, are written in line; a longer
// one takes a call (appendHeader).
func AppendCommand(dst []byte, args ...string) []byte {
	if n := len(args); n < 10 {
		dst = append(dst, '*', byte('0'+n), '\r', '\n')
	} else {
		dst = appendHeader(dst, '*', int64(n))
	}
	for _, a := range args {
		if n := len(a); n < 10 {
			dst = append(dst, '$', byte('0'+n), '\r', '\n')
		} else {
			dst = appendHeader(dst, '$', int64(n))
		}
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// AppendCommandBytes appends a command whose arguments are byte slices,
// written as AppendCommand writes strings. The two bodies are kept apart
// on purpose: one generic body under inlined wrappers puts resp.Command
// over the inline budget (87 > 80; TestHotPathInlines), and cmds' raw
// Build INCR measured +15% so.
func AppendCommandBytes(dst []byte, args ...[]byte) []byte {
	if n := len(args); n < 10 {
		dst = append(dst, '*', byte('0'+n), '\r', '\n')
	} else {
		dst = appendHeader(dst, '*', int64(n))
	}
	for _, a := range args {
		if n := len(a); n < 10 {
			dst = append(dst, '$', byte('0'+n), '\r', '\n')
		} else {
			dst = appendHeader(dst, '$', int64(n))
		}
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// AppendSimpleString appends "+s\r\n". s must not hold CR or LF.
func AppendSimpleString(dst []byte, s string) []byte {
	dst = append(dst, '+')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendError appends a simple error "-msg\r\n". msg must not hold CR or
// LF; use AppendBulkError for text that may.
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, '-')
	dst = append(dst, msg...)
	return append(dst, '\r', '\n')
}

// AppendBulkError appends a RESP3 bulk error.
func AppendBulkError(dst []byte, msg []byte) []byte {
	dst = appendHeader(dst, '!', int64(len(msg)))
	dst = append(dst, msg...)
	return append(dst, '\r', '\n')
}

// AppendInt appends an integer reply ":i\r\n".
func AppendInt(dst []byte, i int64) []byte { return appendHeader(dst, ':', i) }

// AppendNull appends the RESP3 null "_\r\n".
func AppendNull(dst []byte) []byte { return append(dst, '_', '\r', '\n') }

// AppendBool appends a RESP3 boolean.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, '#', 't', '\r', '\n')
	}
	return append(dst, '#', 'f', '\r', '\n')
}

// AppendDouble appends a RESP3 double; infinities and NaN are written as
// inf, -inf and nan.
func AppendDouble(dst []byte, f float64) []byte {
	dst = append(dst, ',')
	switch {
	case math.IsInf(f, 1):
		dst = append(dst, "inf"...)
	case math.IsInf(f, -1):
		dst = append(dst, "-inf"...)
	case math.IsNaN(f):
		dst = append(dst, "nan"...)
	default:
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	return append(dst, '\r', '\n')
}

// AppendBigNumber appends a RESP3 big number from its decimal digits.
func AppendBigNumber(dst []byte, digits []byte) []byte {
	dst = append(dst, '(')
	dst = append(dst, digits...)
	return append(dst, '\r', '\n')
}

// AppendVerbatim appends a RESP3 verbatim string with a 3-byte format.
func AppendVerbatim(dst []byte, format string, text []byte) []byte {
	dst = appendHeader(dst, '=', int64(len(text)+4))
	dst = append(dst, format...)
	dst = append(dst, ':')
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

// AppendAggregateHeader appends the header of an aggregate of type t (Array,
// Set, Push, Map or Attribute) with n elements, or n pairs for a Map or
// Attribute.
func AppendAggregateHeader(dst []byte, t Type, n int) []byte {
	return appendHeader(dst, byte(t), int64(n))
}

// AppendValue appends v in its own type, RESP3 included. A Null is written
// as the RESP3 null. Attributes are written before the value they describe.
func AppendValue(dst []byte, v Value) []byte {
	if v.Attr != nil {
		dst = AppendValue(dst, *v.Attr)
	}
	switch v.Type {
	case SimpleString, Error, BigNumber:
		dst = append(dst, byte(v.Type))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case TooLarge:
		// No wire type: the reply that was skipped is sent as the error
		// that stands for it.
		dst = append(dst, byte(Error))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Double:
		if len(v.Str) > 0 {
			dst = append(dst, ',')
			dst = append(dst, v.Str...)
			return append(dst, '\r', '\n')
		}
		return AppendDouble(dst, v.Float())
	case Integer:
		return AppendInt(dst, v.Int)
	case Boolean:
		return AppendBool(dst, v.Int != 0)
	case Null:
		return AppendNull(dst)
	case BulkString, BulkError, Verbatim:
		dst = appendHeader(dst, byte(v.Type), int64(len(v.Str)))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Map, Attribute:
		dst = appendHeader(dst, byte(v.Type), int64(len(v.Elems)/2))
	default:
		dst = appendHeader(dst, byte(v.Type), int64(len(v.Elems)))
	}
	for _, e := range v.Elems {
		dst = AppendValue(dst, e)
	}
	return dst
}

// appendHeader appends a header: type byte t, n's decimal text, CRLF.
// One or two digits (a key, a 64-byte value) are appended in one step,
// without strconv's call.
func appendHeader(dst []byte, t byte, n int64) []byte {
	if 0 <= n && n < 10 {
		return append(dst, t, byte('0'+n), '\r', '\n')
	}
	if 10 <= n && n < 100 {
		return append(dst, t, byte('0'+n/10), byte('0'+n%10), '\r', '\n')
	}
	dst = append(dst, t)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}
