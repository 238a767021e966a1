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
