package emq

import (
	"errors"
	"fmt"
	"time"
)

// Branded id layout: a 3-byte namespace, then the snowflake in base62,
// left-padded with '0' to 11 digits.
const (
	IDLen        = 14 // bytes in a branded id
	NamespaceLen = 3  // bytes of [A-Z] namespace
	idDigits     = IDLen - NamespaceLen

	// JobNamespace is the namespace of job ids; enqueue refuses any other.
	JobNamespace = "JOB"
)

// Snowflake layout, most significant first: 41 bits of milliseconds since
// [EpochMillis], 10 bits of node, 12 bits of sequence. Bit 63 is always 0.
const (
	TimeBits = 41 // bits of milliseconds since EpochMillis
	NodeBits = 10 // bits of node
	SeqBits  = 12 // bits of sequence within one millisecond

	MaxNode      = 1<<NodeBits - 1                    // 1023
	MaxSeq       = 1<<SeqBits - 1                     // 4095
	MaxElapsedMs = 1<<TimeBits - 1                    // about 69.7 years, into 2093
	MaxSnowflake = 1<<(TimeBits+NodeBits+SeqBits) - 1 // 2^63 - 1

	// EpochMillis is the snowflake epoch, 2024-01-01T00:00:00Z, in Unix ms.
	EpochMillis = 1704067200000
)

const (
	nodeShift = SeqBits
	timeShift = NodeBits + SeqBits
	maxDigits = "AzL8n0Y58m7" // base62(MaxSnowflake), 11 digits

	// base62 is the digit alphabet, in ASCII order, so that for ids of one
	// width byte order is numeric order.
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// ErrInvalidID is the error class of a string that is not a branded id, or
// of parts that cannot make one. Every id error is an *[IDError] matching it
// with errors.Is.
var ErrInvalidID = errors.New("emq: invalid branded id")

// IDError says why an id, or a namespace to mint ids in, was refused.
type IDError struct {
	ID     string // the id as given; for FormatID and NewIDGenerator, the namespace
	Reason string // what is wrong with it
}

// Error names the problem and quotes the id, clipped if it is long.
func (e *IDError) Error() string {
	return "emq: invalid branded id " + quoteClipped(e.ID) + ": " + e.Reason
}

// Unwrap returns [ErrInvalidID].
func (e *IDError) Unwrap() error { return ErrInvalidID }

// snowflakeError says which part of a snowflake is out of range.
type snowflakeError struct{ reason string }

func (e *snowflakeError) Error() string { return "emq: invalid snowflake part: " + e.reason }
func (e *snowflakeError) Unwrap() error { return ErrInvalidID }

// digitVal maps a byte to its base62 value, or -1 outside the alphabet.
var digitVal = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := range len(base62) {
		t[base62[i]] = int8(i)
	}
	return t
}()

// idProblem returns why s is not a branded id, or "" if it is one. It
// does not allocate.
func idProblem(s string) string {
	if len(s) != IDLen {
		return "length is not 14 bytes"
	}
	if nsProblem(s[:NamespaceLen]) != "" {
		return "namespace is not 3 bytes of [A-Z]"
	}
	for i := NamespaceLen; i < IDLen; i++ {
		if digitVal[s[i]] < 0 {
			return "byte outside the base62 alphabet"
		}
	}
	// Fixed width and an ASCII-ordered alphabet: byte order is numeric order.
	if s[NamespaceLen:] > maxDigits {
		return "value does not fit 63 bits"
	}
	return ""
}

// nsProblem returns why ns is not a namespace, or "".
func nsProblem(ns string) string {
	if len(ns) != NamespaceLen {
		return "namespace is not 3 bytes"
	}
	for i := range len(ns) {
		if ns[i] < 'A' || ns[i] > 'Z' {
			return "namespace is not [A-Z]"
		}
	}
	return ""
}

// ValidID reports whether s is a branded id: 14 bytes, 3 of [A-Z], then 11
// base62 digits whose value fits 63 bits. It does not allocate.
func ValidID(s string) bool { return idProblem(s) == "" }

// ParseID splits a branded id into its namespace and snowflake. The
// namespace shares s's memory. The error is an *[IDError] matching
// [ErrInvalidID]; ParseID("JOB0KHTOWnGLuC") is ("JOB", 274557032793636864).
func ParseID(s string) (ns string, snowflake uint64, err error) {
	if p := idProblem(s); p != "" {
		return "", 0, &IDError{ID: s, Reason: p}
	}
	for i := NamespaceLen; i < IDLen; i++ {
		snowflake = snowflake*62 + uint64(digitVal[s[i]])
	}
	return s[:NamespaceLen], snowflake, nil
}

// Namespace returns the first three bytes of id, its kind ("JOB" for a
// job), or "" if id is not a valid branded id.
func Namespace(id string) string {
	if !ValidID(id) {
		return ""
	}
	return id[:NamespaceLen]
}

// FormatID returns the branded id of snowflake in namespace ns. The error,
// an *[IDError] matching [ErrInvalidID], says whether ns is not 3 bytes of
// [A-Z] or snowflake exceeds [MaxSnowflake].
func FormatID(ns string, snowflake uint64) (string, error) {
	var buf [IDLen]byte
	b, err := AppendID(buf[:0], ns, snowflake)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendID appends the branded id of snowflake in namespace ns to dst and
// returns the extended buffer, or dst unchanged and the error [FormatID]
// would return. It does not allocate when dst has room.
func AppendID(dst []byte, ns string, snowflake uint64) ([]byte, error) {
	if p := nsProblem(ns); p != "" {
		return dst, &IDError{ID: ns, Reason: p}
	}
	if snowflake > MaxSnowflake {
		return dst, &IDError{ID: ns, Reason: fmt.Sprintf("snowflake %d does not fit 63 bits", snowflake)}
	}
	return appendID(dst, ns, snowflake), nil
}

// appendID appends an id from parts already checked. The value is split
// into 1 + 5 + 5 digits so that ten of the eleven divisions are 32-bit
// ones, in two independent chains.
func appendID(dst []byte, ns string, v uint64) []byte {
	const p5 = 62 * 62 * 62 * 62 * 62 // 916132832, below 2^32
	hi, lo := v/p5, uint32(v%p5)
	top, mid := hi/p5, uint32(hi%p5) // top <= 10 for v < 2^63
	var d [idDigits]byte
	d[0] = base62[top%62]
	put5((*[5]byte)(d[1:6]), mid)
	put5((*[5]byte)(d[6:11]), lo)
	dst = append(dst, ns...)
	return append(dst, d[:]...)
}

// put5 writes x < 62^5 as five base62 digits.
func put5(d *[5]byte, x uint32) {
	for i := 4; i >= 0; i-- {
		d[i] = base62[x%62]
		x /= 62
	}
}

// ComposeSnowflake packs a mint time, a node and a sequence number into a
// snowflake. The error (matching [ErrInvalidID]) says which part is out of
// range: t before the epoch or more than [MaxElapsedMs] after it, node above
// [MaxNode], seq above [MaxSeq]. Time is truncated to the millisecond.
func ComposeSnowflake(t time.Time, node, seq uint16) (uint64, error) {
	ms := t.UnixMilli() - EpochMillis
	switch {
	case ms < 0 || ms > MaxElapsedMs:
		return 0, &snowflakeError{fmt.Sprintf("time %s outside the 41-bit range from 2024-01-01", t.UTC().Format(time.RFC3339Nano))}
	case node > MaxNode:
		return 0, &snowflakeError{fmt.Sprintf("node %d above %d", node, MaxNode)}
	case seq > MaxSeq:
		return 0, &snowflakeError{fmt.Sprintf("sequence %d above %d", seq, MaxSeq)}
	}
	return uint64(ms)<<timeShift | uint64(node)<<nodeShift | uint64(seq), nil
}

// SplitSnowflake unpacks a snowflake into its milliseconds since
// [EpochMillis], node and sequence. Bit 63, if set, is ignored.
func SplitSnowflake(sf uint64) (elapsedMs uint64, node, seq uint16) {
	return sf >> timeShift & MaxElapsedMs, uint16(sf >> nodeShift & MaxNode), uint16(sf & MaxSeq)
}

// SnowflakeTime returns the mint time of a snowflake, in UTC, to the
// millisecond.
func SnowflakeTime(sf uint64) time.Time {
	ms, _, _ := SplitSnowflake(sf)
	return time.UnixMilli(EpochMillis + int64(ms)).UTC()
}
