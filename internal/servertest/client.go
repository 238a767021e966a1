package servertest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// doTimeout bounds one Do call, dial to last byte.
const doTimeout = 10 * time.Second

// maxBulk bounds a bulk string the raw client accepts.
const maxBulk = 512 << 20

// Error is an error reply from the server; its text is the reply without
// the leading '-', e.g. "ERR unknown command".
type Error string

// Error returns the server's text.
func (e Error) Error() string { return string(e) }

// Do sends one command over a new TCP connection (authenticated when a
// password is set) and returns the RESP2 reply flattened to a string: a bulk
// or simple string as its text, an integer in decimal, a null as "", an
// array as its flattened elements joined by "\n". An error reply comes back
// as an Error. Do is safe for concurrent use.
func (s *Server) Do(args ...string) (string, error) {
	return s.do(true, doTimeout, args...)
}

// do runs one command on a fresh connection; auth sends AUTH first when the
// server has a password.
func (s *Server) do(auth bool, timeout time.Duration, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReader(c)
	if auth && s.Password != "" {
		if _, err := roundTrip(c, r, "AUTH", s.Password); err != nil {
			return "", fmt.Errorf("servertest: AUTH: %w", err)
		}
	}
	return roundTrip(c, r, args...)
}

// roundTrip writes one command and reads its reply.
func roundTrip(c net.Conn, r *bufio.Reader, args ...string) (string, error) {
	if _, err := c.Write(appendCommand(nil, args)); err != nil {
		return "", err
	}
	return readReply(r)
}

// appendCommand encodes args as a RESP array of bulk strings.
func appendCommand(dst []byte, args []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// readReply reads one RESP2 reply and flattens it. An error reply nested in
// an array (as in EXEC) is flattened to its text.
func readReply(r *bufio.Reader) (string, error) {
	line, err := readLine(r)
	if err != nil {
		return "", err
	}
	if len(line) == 0 {
		return "", errors.New("servertest: empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "", Error(body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxBulk {
			return "", fmt.Errorf("servertest: bad bulk length %q", body)
		}
		if n == -1 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxBulk {
			return "", fmt.Errorf("servertest: bad array length %q", body)
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			var re Error
			if errors.As(err, &re) {
				p, err = string(re), nil
			}
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("servertest: unexpected reply %q", line)
}

// readLine reads one CRLF-terminated line without its terminator.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("servertest: line without CRLF %q", line)
	}
	return line[:len(line)-2], nil
}
