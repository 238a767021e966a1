package emq

import (
	"bytes"
	"strconv"

	"github.com/echomq/echomq-go/resp"
)

// parseToken reads the attempts of a claim reply, the fencing token: an
// integer reply, or a string that is exactly the canonical decimal text of
// its value (no sign, space, leading zero, fraction or exponent), as the
// scripts compare it; and at least 1, as a claim's attempts always is.
// Anything else is not a token the scripts would ever accept. It does not
// allocate.
func parseToken(v resp.Value) (int64, bool) {
	var n int64
	switch v.Type {
	case resp.Integer:
		n = v.Int
	case resp.BulkString, resp.SimpleString:
		var err error
		if n, err = v.AsInt(); err != nil {
			return 0, false
		}
		var buf [20]byte
		if !bytes.Equal(strconv.AppendInt(buf[:0], n, 10), v.Str) {
			return 0, false
		}
	default:
		return 0, false
	}
	return n, n >= 1
}
