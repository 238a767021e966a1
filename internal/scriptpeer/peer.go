// Package scriptpeer is a scripted fake server for the few test cases a real
// server cannot produce: a push frame nobody asked for, a malformed frame, a
// reply to a command the server does not have.
//
// A test listens with a handler that reads commands with ReadCommand and
// writes whatever raw bytes the case needs:
//
//	addr := scriptpeer.Listen(t, func(c net.Conn) {
//		r := bufio.NewReader(c)
//		if _, err := scriptpeer.ReadCommand(r); err != nil {
//			return
//		}
//		io.WriteString(c, ">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n")
//	})
package scriptpeer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Bounds ReadCommand puts on what a client may send.
const (
	maxArgs    = 1 << 20
	maxBulkLen = 64 << 20
)

// Listen accepts connections on 127.0.0.1:0 and runs handle on its own
// goroutine for each; the connection is closed when handle returns. At test
// cleanup the listener and every connection are closed and Listen waits for
// all handlers to return. It returns the address to dial.
func Listen(t testing.TB, handle func(c net.Conn)) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("scriptpeer: listen: %v", err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = make(map[net.Conn]struct{})
		closed bool
	)
	wg.Add(1)
	go func() { // accept loop, ends when cleanup closes ln
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed { // accepted just as cleanup began
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close() // unblocks handlers stuck in a read
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// ErrProtocol is wrapped by ReadCommand's errors for input that is not a
// RESP array of bulk strings.
var ErrProtocol = errors.New("scriptpeer: protocol error")

// ReadCommand reads one command, a RESP array of bulk strings as clients
// send them, and returns its arguments. io.EOF means the client closed
// cleanly between commands; a broken frame wraps ErrProtocol.
func ReadCommand(r *bufio.Reader) ([]string, error) {
	n, err := readHeader(r, '*', maxArgs)
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for range n {
		size, err := readHeader(r, '$', maxBulkLen)
		if err != nil {
			return nil, noEOF(err)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, noEOF(err)
		}
		if buf[size] != '\r' || buf[size+1] != '\n' {
			return nil, fmt.Errorf("%w: bulk string without CRLF", ErrProtocol)
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}

// readHeader reads a line "<kind><n>\r\n" with 0 <= n <= limit.
func readHeader(r *bufio.Reader, kind byte, limit int) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return 0, io.EOF
		}
		return 0, noEOF(err)
	}
	if len(line) < 4 || line[0] != kind || line[len(line)-2] != '\r' {
		return 0, fmt.Errorf("%w: want %q header, got %q", ErrProtocol, kind, line)
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || n < 0 || n > limit {
		return 0, fmt.Errorf("%w: bad length in %q", ErrProtocol, line)
	}
	return n, nil
}

// noEOF turns an EOF in the middle of a command into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
