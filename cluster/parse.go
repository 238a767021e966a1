package cluster

import (
	"errors"
	"math"
)

// errMalformed: bytes that are not commands encoded as arrays of bulk
// strings. Only this module builds submissions, so it means a bug.
var errMalformed = errors.New("cluster: malformed command")

// argv is one encoded command split into its arguments, without
// copying: the arguments view the submission's bytes.
type argv struct {
	args [][]byte // reused: parse fills args[:n]
}

// parse splits the command at the start of b and returns its length.
func (a *argv) parse(b []byte) (int, error) {
	n, i, ok := readHeader(b, 0, '*')
	if !ok || n == 0 || n > len(b)/4 { // each argument takes 4 bytes at least
		return 0, errMalformed
	}
	if cap(a.args) < n {
		a.args = make([][]byte, n)
	}
	args := a.args[:n]
	for k := range args {
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
		args[k] = b[i : i+l : i+l]
		i += l + 2
	}
	a.args = args
	return i, nil
}

// len returns the number of arguments.
func (a *argv) len() int { return len(a.args) }

// arg returns argument i.
func (a *argv) arg(i int) []byte { return a.args[i] }

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

// lower appends the lower-case form of b to dst.
func lower(dst []byte, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
