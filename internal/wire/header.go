package wire

import "github.com/echomq/echomq-go/resp"

// header reads "<kind><decimal>\r\n" at the start of b (resp.ReadHeader:
// the layout is resp's).
func header(b []byte, kind byte) (int, []byte, bool) {
	n, next, ok := resp.ReadHeader(b, 0, kind)
	if !ok {
		return 0, b, false
	}
	return n, b[next:], true
}
