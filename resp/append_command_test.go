package resp

import (
	"fmt"
	"strings"
	"testing"
)

// TestAppendCommandHeaders checks the encoders' in-line one-digit
// headers against the plain RESP text at every edge: 0–12 arguments of
// 0–12 bytes, so that both the in-line and the called header are met
// for the array and for each argument.
func TestAppendCommandHeaders(t *testing.T) {
	for n := 0; n <= 12; n++ {
		for size := 0; size <= 12; size++ {
			args := make([]string, n)
			bargs := make([][]byte, n)
			var want strings.Builder
			fmt.Fprintf(&want, "*%d\r\n", n)
			for i := range args {
				args[i] = strings.Repeat(string(rune('a'+i)), size+i%3)
				bargs[i] = []byte(args[i])
				fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(args[i]), args[i])
			}
			prefix := []byte("x")
			if got := string(AppendCommand(prefix, args...)); got != "x"+want.String() {
				t.Fatalf("AppendCommand(%d args of %d) = %q, want %q", n, size, got, "x"+want.String())
			}
			if got := string(AppendCommandBytes(prefix, bargs...)); got != "x"+want.String() {
				t.Fatalf("AppendCommandBytes(%d args of %d) = %q, want %q", n, size, got, "x"+want.String())
			}
		}
	}
}
