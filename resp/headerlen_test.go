package resp_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// HeaderLen is the length of what AppendArrayHeader and AppendBulk write
// before the bytes, at every digit boundary.
func TestHeaderLen(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 99, 100, 999, 1000, 99999, 100000, 1 << 31} {
		if got, want := resp.HeaderLen(n), len(resp.AppendArrayHeader(nil, n)); got != want {
			t.Errorf("HeaderLen(%d) = %d, array header %d", n, got, want)
		}
		if n <= 100000 {
			b := make([]byte, n)
			if got, want := resp.HeaderLen(n), len(resp.AppendBulk(nil, b))-n-2; got != want {
				t.Errorf("HeaderLen(%d) = %d, bulk header %d", n, got, want)
			}
		}
	}
}

// The headers appendHeader writes in one step (one and two digits) and
// by strconv (more), exactly: every length from 0 to 1000.
func TestHeaderDigits(t *testing.T) {
	for n := range 1001 {
		s := strings.Repeat("x", n)
		want := "$" + strconv.Itoa(n) + "\r\n" + s + "\r\n"
		if got := string(resp.AppendBulkString(nil, s)); got != want {
			t.Fatalf("AppendBulkString of %d bytes: %q", n, got)
		}
		if got := string(resp.AppendArrayHeader(nil, n)); got != "*"+strconv.Itoa(n)+"\r\n" {
			t.Fatalf("AppendArrayHeader(%d): %q", n, got)
		}
	}
}
