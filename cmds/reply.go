package cmds

import (
	"errors"
	"math"

	"github.com/echomq/echomq-go/resp"
)

// Shape is the shape of a command's reply, from cmdgen's reply table; it
// names the decoder of this package that reads it.
type Shape uint8

// The reply shapes. Each decoder folds the RESP2 and RESP3 forms of its
// shape to one Go value.
const (
	ShapeUnknown         Shape = iota // not in the table: use the resp.Value accessors
	ShapeOK                           // OK
	ShapeOKOrNil                      // OKOrNil
	ShapeStatus                       // Status
	ShapeInt                          // Int
	ShapeIntOrNil                     // IntOrNil
	ShapeBool                         // Bool
	ShapeBools                        // Bools
	ShapeFloat                        // Float
	ShapeFloatOrNil                   // FloatOrNil
	ShapeNullFloats                   // NullFloats
	ShapeString                       // String
	ShapeStrings                      // Strings
	ShapeStringsOrString              // String without a count, Strings with one
	ShapeNullStrings                  // NullStrings
	ShapeMap                          // StringMap
	ShapeScored                       // Scored
	ShapeStringsOrScored              // Strings, or Scored with WITHSCORES
	ShapePopped                       // Popped
	ShapeScan                         // ScanPageOf
	ShapeEntries                      // Entries
	ShapeStreams                      // Streams
	ShapePending                      // PendingSummary, or PendingEntries with a range
	ShapeStringsOrMap                 // String without a count, Strings with one, StringMap with WITHVALUES
)

// ErrNotOK is matched by the error of OK for a reply that is not +OK.
var ErrNotOK = errors.New("cmds: reply is not OK")

// ErrShape is matched by the error of a decoder for a reply of another
// shape (an array of the wrong length, a pair that is not a pair).
var ErrShape = errors.New("cmds: reply of another shape")

type shapeError struct{ want string }

func (e *shapeError) Error() string        { return ErrShape.Error() + ": want " + e.want }
func (e *shapeError) Is(target error) bool { return target == ErrShape }

// isText: a string, or a RESP3 double, whose text as sent is the RESP2
// string of the same reply (ZSCORE's "2.5" under both protocols).
func isText(v resp.Value) bool {
	switch v.Type {
	case resp.BulkString, resp.SimpleString, resp.Verbatim, resp.Double:
		return true
	}
	return false
}

func text(v resp.Value) (string, error) {
	if !isText(v) {
		if err := v.Err(); err != nil {
			return "", err
		}
		return "", &resp.TypeError{Want: "string", Got: v.Type}
	}
	return string(v.VerbatimText()), nil
}

// isList: an array, or a RESP3 set.
func isList(v resp.Value) bool { return v.Type == resp.Array || v.Type == resp.Set }

func listErr(v resp.Value) error {
	if err := v.Err(); err != nil {
		return err
	}
	return &resp.TypeError{Want: "array", Got: v.Type}
}

// OK reads a +OK status: nil for OK, the server's error for an error,
// an error matching ErrNotOK otherwise.
func OK(v resp.Value) error {
	if err := v.Err(); err != nil {
		return err
	}
	if v.Type == resp.SimpleString && v.Equal("OK") {
		return nil
	}
	return ErrNotOK
}

// OKOrNil reads a reply that is +OK or nil (SET with NX or XX): true for
// OK, false for nil.
func OKOrNil(v resp.Value) (bool, error) {
	if v.IsNull() {
		return false, nil
	}
	if err := OK(v); err != nil {
		return false, err
	}
	return true, nil
}

// Status returns a status reply's text (PING's PONG, TYPE's "string").
// The common statuses (OK, PONG, QUEUED and TYPE's replies) are
// returned without a copy, so that reading one allocates nothing; any
// other text is a copy.
func Status(v resp.Value) (string, error) {
	if v.Type == resp.SimpleString {
		if s := status(v.Str); s != "" {
			return s, nil
		}
	}
	return text(v)
}

// status returns the constant string of a common status, "" for any
// other text (the switch converts p without allocating).
func status(p []byte) string {
	switch string(p) {
	case "OK":
		return "OK"
	case "PONG":
		return "PONG"
	case "QUEUED":
		return "QUEUED"
	case "string":
		return "string"
	case "list":
		return "list"
	case "set":
		return "set"
	case "zset":
		return "zset"
	case "hash":
		return "hash"
	case "stream":
		return "stream"
	case "none":
		return "none"
	}
	return ""
}

// Int reads an integer (RESP2 and RESP3 alike; a number in a string
// too). A RESP3 double that is a whole number in int64's range reads as
// that integer, as the RESP2 string of the same reply does (ZSCORE of a
// score of 2: "2" under RESP2, the double 2 under RESP3); any other
// double is a *resp.TypeError, as "2.5" is under RESP2. It allocates
// nothing.
func Int(v resp.Value) (int64, error) {
	if v.Type == resp.Double {
		if f := v.Float(); f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return int64(f), nil
		}
		return 0, &resp.TypeError{Want: "integer", Got: v.Type}
	}
	return v.AsInt()
}

// IntOrNil reads an integer that may be nil: ok is false for nil (ZRANK
// of a missing member). ZRANK's WITHSCORE pair reads its rank.
func IntOrNil(v resp.Value) (n int64, ok bool, err error) {
	if v.IsNull() {
		return 0, false, nil
	}
	if isList(v) && len(v.Elems) == 2 {
		v = v.Elems[0]
	}
	n, err = Int(v)
	return n, err == nil, err
}

// Bool reads a RESP3 boolean or an integer 0 or 1 (RESP2, and the
// integer replies of EXPIRE, HEXISTS, …). It allocates nothing.
func Bool(v resp.Value) (bool, error) {
	switch v.Type {
	case resp.Boolean, resp.Integer:
		return v.Int != 0, nil
	}
	if err := v.Err(); err != nil {
		return false, err
	}
	return false, &resp.TypeError{Want: "boolean", Got: v.Type}
}

// Bools reads an array of booleans or 0/1 integers (SMISMEMBER).
func Bools(v resp.Value) ([]bool, error) {
	if !isList(v) {
		return nil, listErr(v)
	}
	out := make([]bool, len(v.Elems))
	for i, e := range v.Elems {
		b, err := Bool(e)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// Float reads a number: a RESP3 double, or the text of one (RESP2), inf
// and -inf included; text that is not a number is an error (see
// resp.Value.AsFloat). It allocates nothing.
func Float(v resp.Value) (float64, error) { return v.AsFloat() }

// FloatOrNil reads a number that may be nil: ok is false for nil (ZSCORE
// of a missing member).
func FloatOrNil(v resp.Value) (f float64, ok bool, err error) {
	if v.IsNull() {
		return 0, false, nil
	}
	f, err = v.AsFloat()
	return f, err == nil, err
}

// NullFloat is a number that may be nil.
type NullFloat struct {
	Float float64
	OK    bool // false for nil
}

// NullFloats reads an array of numbers that may be nil (ZMSCORE).
func NullFloats(v resp.Value) ([]NullFloat, error) {
	if !isList(v) {
		return nil, listErr(v)
	}
	out := make([]NullFloat, len(v.Elems))
	for i, e := range v.Elems {
		f, ok, err := FloatOrNil(e)
		if err != nil {
			return nil, err
		}
		out[i] = NullFloat{f, ok}
	}
	return out, nil
}

// String reads a string that may be nil: ok is false for nil (GET of a
// missing key). The string is a copy. A RESP3 double reads as its text
// as sent, which is the RESP2 string of the same reply, so that String,
// Strings, NullStrings and StringMap give the same under both protocols.
func String(v resp.Value) (s string, ok bool, err error) {
	if v.IsNull() {
		return "", false, nil
	}
	s, err = text(v)
	return s, err == nil, err
}

// Strings reads an array or set of strings; nil reads as an empty slice.
func Strings(v resp.Value) ([]string, error) {
	if v.IsNull() {
		return nil, nil
	}
	if !isList(v) {
		return nil, listErr(v)
	}
	out := make([]string, len(v.Elems))
	for i, e := range v.Elems {
		s, err := text(e)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// NullString is a string that may be nil.
type NullString struct {
	String string
	OK     bool // false for nil
}

// NullStrings reads an array of strings that may be nil (MGET, HMGET).
func NullStrings(v resp.Value) ([]NullString, error) {
	if !isList(v) {
		return nil, listErr(v)
	}
	out := make([]NullString, len(v.Elems))
	for i, e := range v.Elems {
		s, ok, err := String(e)
		if err != nil {
			return nil, err
		}
		out[i] = NullString{s, ok}
	}
	return out, nil
}

// pairs calls fn for each pair of a RESP3 map, a RESP2 flat array, or
// a RESP3 array of [key, value] pairs (HRANDFIELD … WITHVALUES).
func pairs(v resp.Value, fn func(k, v resp.Value) error) error {
	switch {
	case v.IsNull():
		return nil
	case v.Type == resp.Array && len(v.Elems) > 0 && isList(v.Elems[0]):
		for _, p := range v.Elems {
			if !isList(p) || len(p.Elems) != 2 {
				return &shapeError{"a key-value pair"}
			}
			if err := fn(p.Elems[0], p.Elems[1]); err != nil {
				return err
			}
		}
		return nil
	case v.Type == resp.Map, v.Type == resp.Array && len(v.Elems)%2 == 0:
	default:
		if err := v.Err(); err != nil {
			return err
		}
		return &resp.TypeError{Want: "map", Got: v.Type}
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if err := fn(v.Elems[i], v.Elems[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// StringMap reads a map of strings: a RESP3 map or a RESP2 flat array of
// pairs (HGETALL, CONFIG GET), or a RESP3 array of pairs (HRANDFIELD
// with a count and WITHVALUES; of a field a negative count repeats, the
// map keeps one).
func StringMap(v resp.Value) (map[string]string, error) {
	m := make(map[string]string, v.Len())
	err := pairs(v, func(k, val resp.Value) error {
		ks, err := text(k)
		if err != nil {
			return err
		}
		vs, err := text(val)
		if err != nil {
			return err
		}
		m[ks] = vs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Z is a sorted-set member and its score.
type Z struct {
	Member string
	Score  float64
}

// Scored reads members with their scores: RESP3 sends [member, score]
// pairs, RESP2 one flat array (ZRANGE … WITHSCORES, ZPOPMIN, …). ZPOPMIN
// and ZPOPMAX without a count send one pair unnested under RESP3 too:
// it reads as one Z.
func Scored(v resp.Value) ([]Z, error) {
	if v.IsNull() {
		return nil, nil
	}
	if !isList(v) {
		return nil, listErr(v)
	}
	e := v.Elems
	nested := len(e) > 0 && isList(e[0])
	if !nested && len(e)%2 != 0 {
		return nil, &shapeError{"member-score pairs"}
	}
	n := len(e)
	if !nested {
		n /= 2
	}
	out := make([]Z, n)
	for i := range out {
		var m, s resp.Value
		if nested {
			if !isList(e[i]) || len(e[i].Elems) != 2 {
				return nil, &shapeError{"a member-score pair"}
			}
			m, s = e[i].Elems[0], e[i].Elems[1]
		} else {
			m, s = e[2*i], e[2*i+1]
		}
		member, err := text(m)
		if err != nil {
			return nil, err
		}
		f, err := s.AsFloat()
		if err != nil {
			return nil, err
		}
		out[i] = Z{Member: member, Score: f}
	}
	return out, nil
}

// Popped is what a blocking pop returns: the key it popped from and the
// element.
type Popped struct {
	Key     string
	Element string
}

// PoppedOrNil reads the reply of BLPOP and BRPOP: ok is false when the
// timeout passed (nil).
func PoppedOrNil(v resp.Value) (p Popped, ok bool, err error) {
	if v.IsNull() {
		return Popped{}, false, nil
	}
	if !isList(v) {
		return Popped{}, false, listErr(v)
	}
	if len(v.Elems) != 2 {
		return Popped{}, false, &shapeError{"a key and an element"}
	}
	if p.Key, err = text(v.Elems[0]); err != nil {
		return Popped{}, false, err
	}
	if p.Element, err = text(v.Elems[1]); err != nil {
		return Popped{}, false, err
	}
	return p, true, nil
}

// ScanPage is one reply of SCAN, HSCAN, SSCAN or ZSCAN: the cursor to
// pass next ("0" when the iteration is over) and the items (keys; for
// HSCAN fields and values interleaved; for ZSCAN members and scores).
type ScanPage struct {
	Cursor string
	Items  []string
}

// ScanPageOf reads a SCAN-family reply.
func ScanPageOf(v resp.Value) (ScanPage, error) {
	if !isList(v) {
		return ScanPage{}, listErr(v)
	}
	if len(v.Elems) != 2 {
		return ScanPage{}, &shapeError{"a cursor and items"}
	}
	cur, err := text(v.Elems[0])
	if err != nil {
		return ScanPage{}, err
	}
	items, err := Strings(v.Elems[1])
	if err != nil {
		return ScanPage{}, err
	}
	return ScanPage{Cursor: cur, Items: items}, nil
}

// Entry is a stream entry: its ID and its fields and values, in the
// order they were added (a field may repeat). An entry deleted while it
// was pending in a group (XREADGROUP of history, XCLAIM, XAUTOCLAIM) has
// its ID alone: no Fields.
type Entry struct {
	ID     string
	Fields []FieldValue
}

// Value returns the value of the entry's field, the first when it
// repeats; ok is false when the entry has no such field.
func (e Entry) Value(field string) (value string, ok bool) {
	for _, f := range e.Fields {
		if f.Field == field {
			return f.Value, true
		}
	}
	return "", false
}

// Map returns the entry's fields as a map (the last value of a field
// that repeats), nil for an entry without fields.
func (e Entry) Map() map[string]string {
	if e.Fields == nil {
		return nil
	}
	m := make(map[string]string, len(e.Fields))
	for _, f := range e.Fields {
		m[f.Field] = f.Value
	}
	return m
}

// Entries reads stream entries (XRANGE, XREVRANGE, XCLAIM). An entry
// deleted meanwhile, which XCLAIM and XREADGROUP send with nil fields,
// has no Fields.
func Entries(v resp.Value) ([]Entry, error) {
	if v.IsNull() {
		return nil, nil
	}
	if !isList(v) {
		return nil, listErr(v)
	}
	out := make([]Entry, len(v.Elems))
	for i, e := range v.Elems {
		if !isList(e) || len(e.Elems) != 2 {
			return nil, &shapeError{"an entry: an ID and fields"}
		}
		id, err := text(e.Elems[0])
		if err != nil {
			return nil, err
		}
		out[i].ID = id
		err = pairs(e.Elems[1], func(k, val resp.Value) error {
			f, err := text(k)
			if err != nil {
				return err
			}
			s, err := text(val)
			if err != nil {
				return err
			}
			out[i].Fields = append(out[i].Fields, FieldValue{Field: f, Value: s})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Stream is a stream's key and entries, as XREAD returns them.
type Stream struct {
	Key     string
	Entries []Entry
}

// Streams reads the reply of XREAD and XREADGROUP: a RESP3 map of keys
// to entries or a RESP2 array of [key, entries] pairs; nil (the timeout
// passed) reads as no streams.
func Streams(v resp.Value) ([]Stream, error) {
	if v.IsNull() {
		return nil, nil
	}
	var out []Stream
	add := func(k, e resp.Value) error {
		key, err := text(k)
		if err != nil {
			return err
		}
		es, err := Entries(e)
		if err != nil {
			return err
		}
		out = append(out, Stream{Key: key, Entries: es})
		return nil
	}
	switch {
	case v.Type == resp.Map:
		for i := 0; i+1 < len(v.Elems); i += 2 {
			if err := add(v.Elems[i], v.Elems[i+1]); err != nil {
				return nil, err
			}
		}
	case isList(v):
		for _, s := range v.Elems {
			if !isList(s) || len(s.Elems) != 2 {
				return nil, &shapeError{"a stream: a key and entries"}
			}
			if err := add(s.Elems[0], s.Elems[1]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, listErr(v)
	}
	return out, nil
}

// PendingSummary is XPENDING's reply without a range: how many entries
// are pending, the lowest and highest ID, and how many each consumer has.
type PendingSummary struct {
	Count     int64
	Lowest    string
	Highest   string
	Consumers []PendingConsumer
}

// PendingConsumer is a consumer and how many entries it has pending.
type PendingConsumer struct {
	Name  string
	Count int64
}

// PendingSummaryOf reads XPENDING key group.
func PendingSummaryOf(v resp.Value) (PendingSummary, error) {
	var p PendingSummary
	if !isList(v) {
		return p, listErr(v)
	}
	if len(v.Elems) != 4 {
		return p, &shapeError{"count, lowest, highest, consumers"}
	}
	var err error
	if p.Count, err = v.Elems[0].AsInt(); err != nil {
		return p, err
	}
	if p.Count == 0 {
		return p, nil // the IDs and consumers are nil
	}
	if p.Lowest, err = text(v.Elems[1]); err != nil {
		return p, err
	}
	if p.Highest, err = text(v.Elems[2]); err != nil {
		return p, err
	}
	cs := v.Elems[3]
	if cs.IsNull() {
		return p, nil
	}
	if !isList(cs) {
		return p, listErr(cs)
	}
	for _, c := range cs.Elems {
		if !isList(c) || len(c.Elems) != 2 {
			return p, &shapeError{"a consumer and its count"}
		}
		name, err := text(c.Elems[0])
		if err != nil {
			return p, err
		}
		n, err := c.Elems[1].AsInt() // RESP2 and RESP3 send the count as a string
		if err != nil {
			return p, err
		}
		p.Consumers = append(p.Consumers, PendingConsumer{Name: name, Count: n})
	}
	return p, nil
}

// PendingEntry is one entry of XPENDING's reply with a range.
type PendingEntry struct {
	ID         string
	Consumer   string
	IdleMillis int64
	Deliveries int64
}

// PendingEntries reads XPENDING key group [IDLE …] start end count
// [consumer].
func PendingEntries(v resp.Value) ([]PendingEntry, error) {
	if !isList(v) {
		return nil, listErr(v)
	}
	out := make([]PendingEntry, len(v.Elems))
	for i, e := range v.Elems {
		if !isList(e) || len(e.Elems) != 4 {
			return nil, &shapeError{"an ID, a consumer, an idle time and a count"}
		}
		var err error
		if out[i].ID, err = text(e.Elems[0]); err != nil {
			return nil, err
		}
		if out[i].Consumer, err = text(e.Elems[1]); err != nil {
			return nil, err
		}
		if out[i].IdleMillis, err = e.Elems[2].AsInt(); err != nil {
			return nil, err
		}
		if out[i].Deliveries, err = e.Elems[3].AsInt(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
