package main

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

// setupConn is a minimal RESP2 connection, stdlib only, used before and
// after timing so that preparing the server never depends on the client
// under test.
type setupConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialSetup(addr string) (*setupConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &setupConn{c: c, r: bufio.NewReader(c)}, nil
}

func (s *setupConn) close() error { return s.c.Close() }

// do sends one command and returns its reply: string for simple and bulk
// strings, int64 for integers, nil for a null bulk, error for -ERR.
func (s *setupConn) do(args ...string) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	s.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := s.c.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	line, err := s.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("short reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(s.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// prepare empties the server and readies w: FLUSHALL, then the GET key or
// the enqueue script (checking the server's SHA matches ours). It returns
// the server's version string.
func prepare(addr string, w *workload) (string, error) {
	s, err := dialSetup(addr)
	if err != nil {
		return "", err
	}
	defer s.close()
	if _, err := s.do("FLUSHALL"); err != nil {
		return "", fmt.Errorf("FLUSHALL: %w", err)
	}
	switch w.name {
	case wGet:
		if _, err := s.do("SET", setKey, w.payload); err != nil {
			return "", fmt.Errorf("SET: %w", err)
		}
	case wEnqueue:
		sha, err := s.do("SCRIPT", "LOAD", enqueueScript)
		if err != nil {
			return "", fmt.Errorf("SCRIPT LOAD: %w", err)
		}
		if sha != w.sha {
			return "", fmt.Errorf("SCRIPT LOAD returned %v, computed %s", sha, w.sha)
		}
	}
	return serverVersion(s)
}

// serverVersion reads "<server> <version>" from INFO server.
func serverVersion(s *setupConn) (string, error) {
	info, err := s.do("INFO", "server")
	if err != nil {
		return "", err
	}
	name, ver := "redis", ""
	for _, l := range strings.Split(info.(string), "\r\n") {
		if v, ok := strings.CutPrefix(l, "redis_version:"); ok && ver == "" {
			ver = v
		}
		if v, ok := strings.CutPrefix(l, "valkey_version:"); ok {
			name, ver = "valkey", v
		}
	}
	return name + " " + ver, nil
}

// countRows returns ZCARD of the pending set: jobs the run created.
func countRows(addr string) (int64, error) {
	s, err := dialSetup(addr)
	if err != nil {
		return 0, err
	}
	defer s.close()
	v, err := s.do("ZCARD", pendingKey)
	if err != nil {
		return 0, err
	}
	return v.(int64), nil
}
