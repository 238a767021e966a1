package resp

import (
	"errors"
	"math"
	"strconv"
	"unsafe"
)

// Type is a RESP type, named by the byte that opens it on the wire.
type Type byte

// The RESP2 and RESP3 types. RESP2's null bulk string ($-1) and null array
// (*-1) are decoded as Null, so one code path serves both protocols.
const (
	SimpleString Type = '+'
	Error        Type = '-'
	Integer      Type = ':'
	BulkString   Type = '$'
	Array        Type = '*'
	Null         Type = '_'
	Boolean      Type = '#'
	Double       Type = ','
	BigNumber    Type = '('
	BulkError    Type = '!'
	Verbatim     Type = '='
	Map          Type = '%'
	Set          Type = '~'
	Attribute    Type = '|'
	Push         Type = '>'
)

// String returns the type's name, e.g. "bulk string".
func (t Type) String() string {
	switch t {
	case SimpleString:
		return "simple string"
	case Error:
		return "simple error"
	case Integer:
		return "integer"
	case BulkString:
		return "bulk string"
	case Array:
		return "array"
	case Null:
		return "null"
	case Boolean:
		return "boolean"
	case Double:
		return "double"
	case BigNumber:
		return "big number"
	case BulkError:
		return "bulk error"
	case Verbatim:
		return "verbatim string"
	case Map:
		return "map"
	case Set:
		return "set"
	case Attribute:
		return "attribute"
	case Push:
		return "push"
	case TooLarge:
		return "reply too large"
	}
	return "type(" + strconv.Quote(string(rune(t))) + ")"
}

// Value is one decoded RESP value. It is compact and holds no pointers of
// its own beyond views: Str views the bytes it was decoded from and Elems
// views the decoder's value arena. A Value returned by a Reader is valid only
// until that Reader's next call to Next; use Clone or an Arena to keep it.
type Value struct {
	// Type is the wire type. RESP2 nulls are Null.
	Type Type
	// Int holds an Integer's value, a Boolean as 0 or 1, and a Double as
	// math.Float64bits (use Float).
	Int int64
	// Str holds the bytes of simple and bulk strings, simple and bulk
	// errors, big numbers (the digits), doubles (the text as sent) and
	// verbatim strings (with the 4-byte "fmt:" prefix; see VerbatimText).
	Str []byte
	// Elems holds the elements of an Array, Set or Push, and the keys and
	// values of a Map or Attribute, interleaved: key0, value0, key1, ….
	// (A TooLarge value keeps its error's numbers there: use Err.)
	Elems []Value
	// Attr is the RESP3 attribute that preceded this value, a Map-shaped
	// value of type Attribute, or nil. When several attributes precede a
	// value, Attr is the nearest one and each earlier one is the Attr of
	// the attribute after it.
	Attr *Value
}

// IsNull reports whether v is a RESP3 null or a RESP2 null bulk or array.
func (v Value) IsNull() bool { return v.Type == Null }

// IsError reports whether v is a simple or bulk error reply, or a reply
// skipped for breaking the decoder's Limits (TooLarge).
func (v Value) IsError() bool { return v.Type == Error || v.Type == BulkError || v.Type == TooLarge }

// IsAggregate reports whether v holds elements (array, set, push, map or
// attribute).
func (v Value) IsAggregate() bool {
	switch v.Type {
	case Array, Set, Push, Map, Attribute:
		return true
	}
	return false
}

// Err returns the server error that v carries, as a *ServerError, or nil
// when v is not an error reply. The message is copied byte for byte. For
// a TooLarge value it returns a *ReplyTooLargeError.
func (v Value) Err() error {
	if !v.IsError() {
		return nil
	}
	if v.Type == TooLarge {
		return v.tooLargeErr()
	}
	return &ServerError{Msg: string(v.Str)}
}

// Len returns the number of elements of an array, set or push, the number of
// pairs of a map or attribute, the length of a string, and 0 otherwise.
func (v Value) Len() int {
	switch v.Type {
	case Map, Attribute:
		return len(v.Elems) / 2
	case Array, Set, Push:
		return len(v.Elems)
	}
	return len(v.Str)
}

// Bytes returns the bytes of a string-like value as a view (not a copy).
func (v Value) Bytes() []byte { return v.Str }

// Text returns a copy of the bytes of a string-like value as a string.
func (v Value) Text() string { return string(v.Str) }

// Equal reports whether v is the bytes s, without allocating.
func (v Value) Equal(s string) bool { return string(v.Str) == s }

// Float returns a Double's value; integers convert exactly where they can.
func (v Value) Float() float64 {
	switch v.Type {
	case Double:
		return math.Float64frombits(uint64(v.Int))
	case Integer:
		return float64(v.Int)
	}
	return 0
}

// Bool returns a Boolean's value; an Integer is true when non-zero.
func (v Value) Bool() bool { return v.Int != 0 && (v.Type == Boolean || v.Type == Integer) }

// AsInt returns v as an integer: an Integer's value, or a bulk or simple
// string holding a decimal integer (as RESP2 sends many numbers).
func (v Value) AsInt() (int64, error) {
	switch v.Type {
	case Integer:
		return v.Int, nil
	case BulkString, SimpleString, BigNumber:
		n, ok := parseInt(v.Str)
		if ok {
			return n, nil
		}
	case Error, BulkError:
		return 0, v.Err()
	}
	return 0, &TypeError{Want: "integer", Got: v.Type}
}

// ErrNotNumber is matched (errors.Is) by the error of AsFloat for a
// string that is not a number.
var ErrNotNumber = errors.New("resp: not a number")

// notNumberError quotes the text that is not a number.
type notNumberError struct{ text string }

func (e *notNumberError) Error() string { return ErrNotNumber.Error() + ": " + strconv.Quote(e.text) }

func (e *notNumberError) Is(target error) bool { return target == ErrNotNumber }

// AsFloat returns v as a float64, folding the protocols: a RESP3 Double
// (inf, -inf and nan included), an Integer, or a bulk or simple string
// holding a number as the server writes one (RESP2 sends scores and
// INCRBYFLOAT results as "30.5", "inf", "-inf"). A string that is not a
// number is an error matching ErrNotNumber; a server error is returned
// as itself; any other type is a *TypeError. It allocates nothing unless
// it fails.
func (v Value) AsFloat() (float64, error) {
	switch v.Type {
	case Double:
		return math.Float64frombits(uint64(v.Int)), nil
	case Integer:
		return float64(v.Int), nil
	case BulkString, SimpleString, BigNumber, Verbatim:
		b := v.Str
		if v.Type == Verbatim {
			b = v.VerbatimText()
		}
		if f, ok := parseDouble(b); ok {
			return f, nil
		}
		if len(b) > 64 {
			b = b[:64]
		}
		return 0, &notNumberError{text: string(b)}
	case Error, BulkError:
		return 0, v.Err()
	}
	return 0, &TypeError{Want: "number", Got: v.Type}
}

// VerbatimFormat returns the 3-byte format of a verbatim string ("txt",
// "mkd"), or "" for any other value.
func (v Value) VerbatimFormat() string {
	if v.Type != Verbatim || len(v.Str) < 4 {
		return ""
	}
	return string(v.Str[:3])
}

// VerbatimText returns a verbatim string's text without its "fmt:" prefix;
// for other values it returns Str.
func (v Value) VerbatimText() []byte {
	if v.Type != Verbatim || len(v.Str) < 4 {
		return v.Str
	}
	return v.Str[4:]
}

// MapKey returns the key of pair i of a map or attribute.
func (v Value) MapKey(i int) Value { return v.Elems[2*i] }

// MapValue returns the value of pair i of a map or attribute.
func (v Value) MapValue(i int) Value { return v.Elems[2*i+1] }

// Lookup returns the value of the map pair whose key is the string key.
func (v Value) Lookup(key string) (Value, bool) {
	if v.Type != Map && v.Type != Attribute {
		return Value{}, false
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if string(v.Elems[i].Str) == key {
			return v.Elems[i+1], true
		}
	}
	return Value{}, false
}

// String renders v for people: strings as text, numbers in decimal,
// aggregates in brackets. It is for logs and tests, not for the hot path.
func (v Value) String() string {
	return string(appendDebug(nil, v))
}

func appendDebug(dst []byte, v Value) []byte {
	switch v.Type {
	case SimpleString, BulkString, BigNumber, Double:
		return append(dst, v.Str...)
	case Verbatim:
		return append(dst, v.VerbatimText()...)
	case Error, BulkError, TooLarge:
		dst = append(dst, "(error) "...)
		return append(dst, v.Str...)
	case Integer:
		return strconv.AppendInt(dst, v.Int, 10)
	case Boolean:
		return strconv.AppendBool(dst, v.Int != 0)
	case Null:
		return append(dst, "(nil)"...)
	case Map, Attribute:
		dst = append(dst, '{')
		for i := 0; i+1 < len(v.Elems); i += 2 {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendDebug(dst, v.Elems[i])
			dst = append(dst, ": "...)
			dst = appendDebug(dst, v.Elems[i+1])
		}
		return append(dst, '}')
	case Array, Set, Push:
		dst = append(dst, '[')
		for i, e := range v.Elems {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = appendDebug(dst, e)
		}
		return append(dst, ']')
	}
	return dst
}

// Clone returns a deep copy of v that owns its memory and stays valid
// forever. It allocates; on hot paths retain into an Arena instead.
func (v Value) Clone() Value {
	var a Arena
	return a.Retain(v)
}

// parseInt parses a strict decimal int64: an optional '-' and 1 to 19
// digits, no '+', no spaces, no overflow.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// parseDouble parses a RESP3 double: strconv syntax plus inf, -inf, nan.
func parseDouble(b []byte) (float64, bool) {
	switch string(b) {
	case "inf", "+inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	case "nan", "-nan":
		return math.NaN(), true
	}
	if len(b) == 0 || len(b) > 512 {
		return 0, false
	}
	for _, c := range b {
		// Refuse what strconv accepts but RESP does not: hex, underscores,
		// spelled-out infinities.
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
			return 0, false
		}
	}
	// The view does not outlive the call: ParseFloat's error is dropped.
	f, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}
