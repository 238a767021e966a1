package wire

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// refHeader is header as it was written before its fast path for one
// and two digits: the reference it must agree with.
func refHeader(b []byte, kind byte) (int, []byte, bool) {
	if len(b) < 3 || b[0] != kind {
		return 0, b, false
	}
	v, i := 0, 1
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > 1<<40 {
			return 0, b, false
		}
		v = v*10 + int(b[i]-'0')
	}
	if i == 1 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, b, false
	}
	return v, b[i+2:], true
}

// TestHeaderAgrees: header reads what the plain digit loop reads, on
// every form near its fast path (one and two digits, at the end of the
// bytes or not, leading zeros, signs, a missing \n) and on random bytes.
func TestHeaderAgrees(t *testing.T) {
	cases := []string{"$0\r\n", "$9\r\n", "$10\r\n", "$99\r\n", "$100\r\n", "$01\r\n", "$-1\r\n",
		"$\r\n", "$1\r", "$1x\r\n", "$12\r", "$12\rx", "*5\r\n", "$5\r\nhello\r\n", "$7", "$", "",
		"$1\r\nx", "$99999999999999\r\n"}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("$*0123456789\r\n-x")
	for range 20000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for n := range 1000 {
		cases = append(cases, "$"+strconv.Itoa(n)+"\r\n", "$"+strconv.Itoa(n)+"\r\nabc")
	}
	for _, c := range cases {
		for _, kind := range []byte{'$', '*'} {
			v, rest, ok := header([]byte(c), kind)
			wv, wrest, wok := refHeader([]byte(c), kind)
			if v != wv || string(rest) != string(wrest) || ok != wok {
				t.Fatalf("header(%q, %c) = %d %q %v, want %d %q %v", c, kind, v, rest, ok, wv, wrest, wok)
			}
		}
	}
}
