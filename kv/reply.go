package kv

import (
	"strconv"
	"unsafe"

	"github.com/echomq/echomq-go/resp"
)

// Replies are read here into Go values, the RESP2 and RESP3 shapes of
// the same reply folded into one: a map is a RESP3 map or a RESP2 flat
// array of pairs; a score is a RESP3 double or a RESP2 bulk string; a
// set is a RESP3 set or a RESP2 array.

// isText reports whether v holds a string.
func isText(v resp.Value) bool {
	switch v.Type {
	case resp.BulkString, resp.SimpleString, resp.Verbatim:
		return true
	}
	return false
}

// text returns a string reply as a Go string (it allocates).
func text(v resp.Value) (string, error) {
	if !isText(v) {
		return "", &resp.TypeError{Want: "string", Got: v.Type}
	}
	return string(v.VerbatimText()), nil
}

// textOK reads a reply that may be nil: ok is false for nil.
func textOK(v resp.Value) (string, bool, error) {
	if v.IsNull() {
		return "", false, nil
	}
	s, err := text(v)
	return s, err == nil, err
}

// list reads an array or set of strings; nil reads as empty.
func list(v resp.Value) ([]string, error) {
	if v.IsNull() {
		return nil, nil
	}
	if v.Type != resp.Array && v.Type != resp.Set {
		return nil, &resp.TypeError{Want: "array", Got: v.Type}
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

// pairs calls fn for each key and value of a RESP3 map or a RESP2 flat
// array of pairs.
func pairs(v resp.Value, fn func(k, v resp.Value) error) error {
	switch {
	case v.IsNull():
		return nil
	case v.Type == resp.Map, v.Type == resp.Array && len(v.Elems)%2 == 0:
	default:
		return &resp.TypeError{Want: "map", Got: v.Type}
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if err := fn(v.Elems[i], v.Elems[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// strmap reads a map of strings.
func strmap(v resp.Value) (map[string]string, error) {
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
	return m, err
}

// score reads a RESP3 double, or a number in a string (RESP2), as a
// float64.
func score(v resp.Value) (float64, error) {
	switch v.Type {
	case resp.Double, resp.Integer:
		return v.Float(), nil
	case resp.BulkString, resp.SimpleString:
		return parseFloat(v.Str)
	}
	return 0, &resp.TypeError{Want: "double", Got: v.Type}
}

// parseFloat parses the server's spelling of a float (inf and -inf
// included) without copying b.
func parseFloat(b []byte) (float64, error) {
	if len(b) == 0 {
		return 0, &resp.TypeError{Want: "double", Got: resp.BulkString}
	}
	f, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil {
		// The error holds the view: quote a copy instead.
		return 0, &strconv.NumError{Func: "ParseFloat", Num: string(b), Err: strconv.ErrSyntax}
	}
	return f, nil
}

// scored reads the members and scores of a sorted-set reply: RESP3
// sends an array of [member, score] pairs, RESP2 one flat array.
func scored(v resp.Value) ([]Z, error) {
	if v.IsNull() {
		return nil, nil
	}
	if v.Type != resp.Array {
		return nil, &resp.TypeError{Want: "array", Got: v.Type}
	}
	e := v.Elems
	nested := len(e) > 0 && e[0].Type == resp.Array
	if !nested && len(e)%2 != 0 {
		return nil, &resp.TypeError{Want: "member-score pairs", Got: v.Type}
	}
	n := len(e)
	if !nested {
		n /= 2
	}
	out := make([]Z, n)
	for i := range out {
		var m, s resp.Value
		if nested {
			if e[i].Type != resp.Array || len(e[i].Elems) != 2 {
				return nil, &resp.TypeError{Want: "member-score pair", Got: e[i].Type}
			}
			m, s = e[i].Elems[0], e[i].Elems[1]
		} else {
			m, s = e[2*i], e[2*i+1]
		}
		member, err := text(m)
		if err != nil {
			return nil, err
		}
		f, err := score(s)
		if err != nil {
			return nil, err
		}
		out[i] = Z{Member: member, Score: f}
	}
	return out, nil
}

// integer reads an integer reply.
func integer(v resp.Value) (int64, error) { return v.AsInt() }
