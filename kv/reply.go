package kv

import (
	"github.com/echomq/echomq-go/resp"
)

// Replies are read into Go values by package cmds's decoders (String,
// Strings, StringMap, Scored) and resp.Value.AsFloat, which fold the
// RESP2 and RESP3 shapes of a reply into one; what is left here are the
// pieces kv's own stream and scan readers use.

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
