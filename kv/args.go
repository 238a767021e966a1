package kv

import (
	"errors"
	"math"
	"strconv"
	"time"
	"unsafe"
)

// Value is what a helper accepts as a value (SET's value, a list
// element, a set member, a hash field's value): text or bytes as they
// are, integers in decimal, a float64 in the shortest form that reads
// back the same (+inf and -inf as the server spells them).
type Value interface {
	string | []byte | int | int64 | int32 | uint | uint64 | uint32 | float64
}

// ErrInvalid is matched (errors.Is) by the error of a helper given
// arguments the server would refuse or misread (NX with XX, a negative
// TTL, an odd number of field-value arguments). Nothing is sent.
var ErrInvalid = errors.New("kv: invalid arguments")

// invalid is ErrInvalid with a reason.
func invalid(reason string) error { return &invalidError{reason} }

type invalidError struct{ reason string }

func (e *invalidError) Error() string        { return "kv: invalid arguments: " + e.reason }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// argText returns v as one argument for a builder of k's, which copies it
// at once and keeps nothing of it: a string as it is, a []byte viewed
// as a string (no copy), a number formatted into k.text (integers in
// decimal, a float64 the shortest way that reads back the same, +inf and
// -inf as the server spells them). A view stays valid while k is out of
// the pool: k.text only grows, and a string viewing it keeps its memory.
func argText[V Value](k *kb, v V) string {
	switch x := any(v).(type) {
	case string:
		return x
	case []byte:
		return unsafe.String(unsafe.SliceData(x), len(x))
	}
	start := len(k.text)
	k.text = appendNumber(k.text, v)
	return unsafe.String(&k.text[start], len(k.text)-start)
}

// texts returns vals as arguments (argText) in k.strs.
func texts[V Value](k *kb, vals []V) []string {
	for _, v := range vals {
		k.strs = append(k.strs, argText(k, v))
	}
	return k.strs
}

// appendNumber appends v, a number, as argText does.
func appendNumber[V Value](dst []byte, v V) []byte {
	switch x := any(v).(type) {
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(dst, x, 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10)
	case float64:
		switch {
		case math.IsInf(x, 1):
			return append(dst, "+inf"...)
		case math.IsInf(x, -1):
			return append(dst, "-inf"...)
		}
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	}
	panic("kv: unreachable")
}

// seconds reports whether d is a whole number of seconds.
func seconds(d time.Duration) bool { return d%time.Second == 0 }

// format returns v as one argument's text, as argText writes it.
func format[V Value](v V) string {
	switch x := any(v).(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return string(appendNumber(nil, v))
}
