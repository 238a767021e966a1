package cluster

import (
	"errors"
	"math"
)

// errMalformed: bytes that are not commands encoded as arrays of bulk
// strings. Only this module builds submissions, so it means a bug.
var errMalformed = errors.New("cluster: malformed command")

// span is one argument of an encoded command: b[off:off+n].
type span struct{ off, n int32 }

// argv is one encoded command split into its arguments, without
// copying: the spans view the submission's bytes.
type argv struct {
	b    []byte
	args []span // reused: parse appends to args[:0]
}

// parse splits the command at the start of b and returns its length.
func (a *argv) parse(b []byte) (int, error) {
	a.b = b
	args := a.args[:0]
	n, i, ok := readHeader(b, 0, '*')
	if !ok || n == 0 {
		return 0, errMalformed
	}
	for ; n > 0; n-- {
		if i >= len(b) || b[i] != '$' {
			return 0, errMalformed
		}
		i++
		l, digits := 0, 0
		for i < len(b) {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			l = l*10 + int(c)
			i++
			digits++
		}
		if digits == 0 || digits > 9 || i+1 >= len(b) || b[i] != '\r' || l > len(b)-i-4 {
			return 0, errMalformed
		}
		i += 2
		args = append(args, span{int32(i), int32(l)})
		i += l + 2
	}
	a.args = args
	return i, nil
}

// len returns the number of arguments.
func (a *argv) len() int { return len(a.args) }

// arg returns argument i.
func (a *argv) arg(i int) []byte {
	s := a.args[i]
	return a.b[s.off : s.off+s.n]
}

// readHeader reads "<t><n>\r\n" at b[i:].
func readHeader(b []byte, i int, t byte) (n, end int, ok bool) {
	if i >= len(b) || b[i] != t {
		return 0, 0, false
	}
	i++
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > math.MaxInt32/10 {
			return 0, 0, false
		}
		n = n*10 + int(b[i]-'0')
	}
	if i == start || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}

// lower writes the lower-case form of b into buf and returns it; names
// longer than buf are returned as they are (no command is that long).
func lower(buf []byte, b []byte) []byte {
	if len(b) > len(buf) {
		return b
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(b)]
}

// atoi reads a non-negative decimal, or -1.
func atoi(b []byte) int {
	if len(b) == 0 || len(b) > 9 {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
