package jobs

import (
	"errors"
	"strconv"
	"time"
	"unsafe"
)

// Magic opens every enveloped payload: the envelope's version 1.
const Magic = "EMQ1 "

// MaxTypeLen bounds a task type, in bytes.
const MaxTypeLen = 256

// Envelope is the L4 convention that carries a task's type and options in
// a job's payload (see PROTOCOL-L4.md):
//
//	EMQ1 t=email:send&r=3&to=5000&rt=60000\n<body>
//
// The header is key=value pairs joined by '&', ended by the first '\n';
// the body follows raw, any bytes. Keys: t the type (required), r the
// retries (attempts after the first), to the timeout in ms, rt the
// retention of the completed row and its result in ms, u a unique key
// echo. Values hold only token bytes (see [ValidToken]), so no value is
// ever escaped and decoding copies nothing. Unknown keys are skipped, so
// a later minor addition reads as version 1.
type Envelope struct {
	Type string // the task type; required
	Body []byte // the task's body, raw
	// Retries is how many times a failing task is tried again after its
	// first attempt; -1 leaves it to the server's default (and writes no
	// r). ParseEnvelope sets -1 when the header has no r.
	Retries   int
	Timeout   time.Duration // 0: the server's default
	Retention time.Duration // 0: none (the row is deleted at completion)
	Unique    string        // a unique key's echo (u); "" none
}

// EnvelopeError is a payload that opens with the envelope's magic (or
// another version's) but does not parse. It matches [ErrEnvelope].
type EnvelopeError struct {
	Offset int    // the byte of the payload where parsing stopped
	Reason string // what was wrong
}

func (e *EnvelopeError) Error() string {
	return "jobs: malformed envelope at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Is reports whether target is [ErrEnvelope].
func (e *EnvelopeError) Is(target error) bool { return target == ErrEnvelope }

// ErrEnvelope is matched by every *[EnvelopeError].
var ErrEnvelope = errors.New("jobs: malformed envelope")

// IsEnveloped reports whether p opens with an envelope's magic of any
// version ("EMQ" then digits then a space): such a payload is parsed,
// and refused when malformed; any other is a peer's job, passed to the
// default handler untouched.
func IsEnveloped(p []byte) bool {
	if len(p) < 5 || string(p[:3]) != "EMQ" {
		return false
	}
	for i := 3; i < len(p) && i < 12; i++ {
		switch c := p[i]; {
		case c == ' ':
			return i > 3
		case c < '0' || c > '9':
			return false
		}
	}
	return false
}

// ValidToken reports whether s can be an envelope value (a type, a unique
// key echo): 1 to MaxTypeLen bytes, each printable ASCII but for space,
// '&', '=' and '%'.
func ValidToken(s string) bool {
	if len(s) == 0 || len(s) > MaxTypeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return false
		}
	}
	return true
}

func tokenByte(c byte) bool {
	return c > ' ' && c < 0x7f && c != '&' && c != '=' && c != '%'
}

// AppendEnvelope appends e's payload to dst. A type or unique echo that
// is not a [ValidToken], or a negative duration, is an *[EnvelopeError]
// and dst is returned unchanged.
func AppendEnvelope(dst []byte, e *Envelope) ([]byte, error) {
	if !ValidToken(e.Type) {
		return dst, &EnvelopeError{Reason: "type " + strconv.Quote(clip(e.Type)) + " is not 1-256 token bytes"}
	}
	if e.Unique != "" && !ValidToken(e.Unique) {
		return dst, &EnvelopeError{Reason: "unique echo is not 1-256 token bytes"}
	}
	if e.Timeout < 0 || e.Retention < 0 {
		return dst, &EnvelopeError{Reason: "negative duration"}
	}
	dst = append(dst, Magic...)
	dst = append(dst, "t="...)
	dst = append(dst, e.Type...)
	if e.Retries >= 0 {
		dst = strconv.AppendInt(append(dst, "&r="...), int64(e.Retries), 10)
	}
	if e.Timeout > 0 {
		dst = strconv.AppendInt(append(dst, "&to="...), ceilMillis(e.Timeout), 10)
	}
	if e.Retention > 0 {
		dst = strconv.AppendInt(append(dst, "&rt="...), ceilMillis(e.Retention), 10)
	}
	if e.Unique != "" {
		dst = append(append(dst, "&u="...), e.Unique...)
	}
	dst = append(dst, '\n')
	return append(dst, e.Body...), nil
}

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// maxHeader bounds an envelope's header, magic included.
const maxHeader = 4096

// ParseEnvelope decodes an enveloped payload without allocating: Type,
// Unique and Body alias p, which must not change while they are used. A
// payload that [IsEnveloped] but is not a well-formed version 1 envelope
// (another version, no '\n' within 4 KiB, no type, a value that is not a
// token or an integer) is an *[EnvelopeError]; so is one that is not
// enveloped at all (see IsEnveloped to tell the two apart).
func ParseEnvelope(p []byte) (Envelope, error) {
	e := Envelope{Retries: -1}
	if !IsEnveloped(p) {
		return e, &EnvelopeError{Reason: "no envelope magic"}
	}
	if string(p[:len(Magic)]) != Magic {
		return e, &EnvelopeError{Offset: 3, Reason: "unknown envelope version"}
	}
	end := -1
	for i := len(Magic); i < len(p) && i < maxHeader; i++ {
		if p[i] == '\n' {
			end = i
			break
		}
	}
	if end < 0 {
		return e, &EnvelopeError{Offset: min(len(p), maxHeader), Reason: "no end of header"}
	}
	e.Body = p[end+1:]
	for i := len(Magic); i < end; {
		j := i
		for j < end && p[j] != '=' && p[j] != '&' {
			j++
		}
		if j == end || p[j] != '=' || j == i {
			return e, &EnvelopeError{Offset: j, Reason: "want key=value"}
		}
		k := j + 1
		for k < end && p[k] != '&' {
			if !tokenByte(p[k]) {
				return e, &EnvelopeError{Offset: k, Reason: "value byte is not a token byte"}
			}
			k++
		}
		if err := e.set(p[i:j], p[j+1:k], j+1); err != nil {
			return e, err
		}
		i = k + 1
		if k < end && i == end {
			return e, &EnvelopeError{Offset: k, Reason: "trailing '&'"}
		}
	}
	if e.Type == "" {
		return e, &EnvelopeError{Offset: end, Reason: "no type (t=)"}
	}
	return e, nil
}

// set records one header pair whose value starts at byte off.
func (e *Envelope) set(key, val []byte, off int) error {
	switch string(key) {
	case "t":
		if len(val) == 0 || len(val) > MaxTypeLen {
			return &EnvelopeError{Offset: off, Reason: "type is not 1-256 token bytes"}
		}
		e.Type = unsafe.String(&val[0], len(val))
	case "u":
		if len(val) == 0 || len(val) > MaxTypeLen {
			return &EnvelopeError{Offset: off, Reason: "unique echo is not 1-256 token bytes"}
		}
		e.Unique = unsafe.String(&val[0], len(val))
	case "r", "to", "rt":
		n, ok := parseUint(val)
		if !ok {
			return &EnvelopeError{Offset: off, Reason: string(key) + " is not a decimal integer below 2^53"}
		}
		switch key[0] {
		case 'r':
			if len(key) == 1 {
				if n > 1<<31-1 {
					return &EnvelopeError{Offset: off, Reason: "r is too large"}
				}
				e.Retries = int(n)
			} else {
				e.Retention = msDuration(n)
			}
		default:
			e.Timeout = msDuration(n)
		}
	}
	return nil
}

// parseUint reads a canonical decimal integer below 2^53: no sign, no
// leading zero.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 || b[0] < '0' || b[0] > '9' || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(bytesString(b), 10, 64)
	return n, err == nil && n < 1<<53
}

// msDuration is n ms as a Duration, saturating.
func msDuration(n uint64) time.Duration {
	if n > uint64(1<<63-1)/uint64(time.Millisecond) {
		return 1<<63 - 1
	}
	return time.Duration(n) * time.Millisecond
}

// clip shortens s for an error text.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
