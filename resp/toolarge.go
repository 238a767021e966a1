package resp

import (
	"errors"
	"strconv"
)

// TooLarge is the type of the Value a decoder returns in place of a
// well-formed reply that broke one of its Limits: the reply was skipped on
// the wire, and the stream goes on with the next one. It is no wire type.
// Such a Value is an error (IsError): its Err is a *ReplyTooLargeError,
// and its Str the error's text.
const TooLarge Type = 0xff

// ErrReplyTooLarge is matched by every *ReplyTooLargeError with errors.Is.
var ErrReplyTooLarge = errors.New("resp: reply too large")

// limitKind names the Limits field a skipped reply broke.
type limitKind uint8

const (
	limitNone limitKind = iota
	limitBulk
	limitAggregate
	limitDepth
	limitValues
	limitReplyBytes
)

var limitNames = [...]string{
	limitNone:       "",
	limitBulk:       "MaxBulk",
	limitAggregate:  "MaxAggregate",
	limitDepth:      "MaxDepth",
	limitValues:     "MaxValues",
	limitReplyBytes: "MaxReplyBytes",
}

// ReplyTooLargeError reports a well-formed reply that broke one of the
// decoder's Limits. The reply was skipped whole, in bounded memory, and
// the stream is in sync: on a connection it is the error of the one
// command whose reply it was, and the connection lives on. To receive
// such replies, raise the limit (resp.Limits, which package conn takes in
// Options.Limits).
type ReplyTooLargeError struct {
	// Limit names the Limits field broken: "MaxReplyBytes", "MaxValues",
	// "MaxAggregate", "MaxBulk" or "MaxDepth".
	Limit string
	// Max is the limit's value.
	Max int
	// Size is how far the reply got past the limit when the limit was
	// broken, in the limit's unit: the bytes its Values would take at
	// least (MaxReplyBytes), the values counted (MaxValues), the elements
	// or pairs declared (MaxAggregate), the string's length (MaxBulk), or
	// the nesting depth reached (MaxDepth).
	Size int64
	// Bytes is the reply's whole length on the wire, all of it skipped.
	Bytes int64
	// Type is the reply's own type (past any attribute): Push for a push
	// frame, which answers no command.
	Type Type
}

// Error names the limit, what broke it and how to raise it.
func (e *ReplyTooLargeError) Error() string {
	return string(e.appendText(nil))
}

// Is makes errors.Is(err, ErrReplyTooLarge) true.
func (e *ReplyTooLargeError) Is(target error) bool { return target == ErrReplyTooLarge }

func (e *ReplyTooLargeError) appendText(b []byte) []byte {
	b = append(b, "resp: reply too large: "...)
	switch e.Limit {
	case "MaxReplyBytes":
		b = append(b, "its values would take at least "...)
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, " bytes"...)
	case "MaxValues":
		b = append(b, "it holds at least "...)
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, " values"...)
	case "MaxAggregate":
		b = append(b, "an aggregate of "...)
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, " elements"...)
	case "MaxBulk":
		b = append(b, "a string of "...)
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, " bytes"...)
	case "MaxDepth":
		b = append(b, "nesting "...)
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, " deep"...)
	default:
		b = append(b, "over a limit"...)
	}
	if e.Limit != "" {
		b = append(b, ", over Limits."...)
		b = append(b, e.Limit...)
		b = append(b, " of "...)
		b = strconv.AppendInt(b, int64(e.Max), 10)
	}
	b = append(b, "; the "...)
	if e.Type == Push {
		b = append(b, "push "...)
	}
	b = append(b, "reply of "...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, " bytes was skipped and the stream kept"...)
	if e.Limit != "" {
		b = append(b, " (raise resp.Limits."...)
		b = append(b, e.Limit...)
		b = append(b, ", conn.Options.Limits, to receive it)"...)
	}
	return b
}

// tooLargeValue returns the Value that stands for a skipped reply: its
// Str is text (the error's), appended to msg, and its Elems hold the
// error's numbers, in elems (which must hold 4 Values).
func tooLargeValue(e *ReplyTooLargeError, k limitKind, msg []byte, elems []Value) (Value, []byte) {
	msg = e.appendText(msg[:0])
	elems = elems[:4:4]
	elems[0] = Value{Type: Integer, Int: int64(k)}
	elems[1] = Value{Type: Integer, Int: int64(e.Max)}
	elems[2] = Value{Type: Integer, Int: e.Size}
	elems[3] = Value{Type: Integer, Int: e.Bytes}
	return Value{Type: TooLarge, Int: int64(e.Type), Str: msg, Elems: elems}, msg
}

// tooLargeErr returns the error a TooLarge Value stands for.
func (v Value) tooLargeErr() error {
	e := &ReplyTooLargeError{Type: Type(v.Int)}
	if len(v.Elems) == 4 {
		if k := v.Elems[0].Int; k > 0 && k < int64(len(limitNames)) {
			e.Limit = limitNames[k]
		}
		e.Max = int(v.Elems[1].Int)
		e.Size = v.Elems[2].Int
		e.Bytes = v.Elems[3].Int
	}
	return e
}

// skipped returns the error for the frame the scanner has just skipped,
// which was bytes long.
func (s *scanner) skipped(bytes int) (ReplyTooLargeError, limitKind) {
	k := s.sk.limit
	return ReplyTooLargeError{
		Limit: limitNames[k],
		Max:   s.sk.max,
		Size:  s.sk.size,
		Bytes: int64(bytes),
		Type:  s.top,
	}, k
}
