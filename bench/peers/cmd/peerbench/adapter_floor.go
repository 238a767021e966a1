package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
)

// floorRunner is the reference "client" with no library: the least work a
// Go process can do for a workload, the floor every client's CPU per op is
// measured against. It writes pre-encoded batches on a bare net.Conn and
// reads the reply bytes without decoding them into values: it only counts
// CRLF-terminated replies (skipping a bulk string's body by its length)
// and compares each with the one reply the workload allows.
//
// The commands are encoded once, before timing, as a template of depth
// commands; enqueue patches the 11 id digits in place per op (the same
// base62 id every client builds per op). Depth 1 is the same loop with a
// batch of one; goroutine mode is G such loops, each on a connection of
// its own (as redis-benchmark -c G -P 1).
type floorRunner struct {
	conns []*floorConn
}

// floorConn is one connection with its template and read buffer.
type floorConn struct {
	c    net.Conn
	tmpl []byte // depth commands, back to back
	ends []int  // ends[i]: the end of command i in tmpl
	idAt []int  // per command, where its two id digit runs start (enqueue)
	buf  []byte // reply bytes not yet counted are buf[r:w]
	r, w int
}

func newFloor(cfg config) (runner, error) {
	n := max(cfg.goroutines, 1)
	f := &floorRunner{}
	for range n {
		c, err := net.Dial("tcp", cfg.addr)
		if err != nil {
			f.close()
			return nil, err
		}
		f.conns = append(f.conns, &floorConn{c: c, buf: make([]byte, 64<<10)})
	}
	return f, nil
}

func (f *floorRunner) close() error {
	for _, c := range f.conns {
		c.c.Close()
	}
	return nil
}

func (f *floorRunner) run(ctx context.Context, w *workload, n int) error {
	depth := w.depth
	if w.goroutines > 1 {
		depth = 1
	}
	for _, c := range f.conns {
		if c.tmpl == nil {
			c.encode(w, depth)
		}
	}
	if w.goroutines > 1 {
		return f.fanOut(w, n)
	}
	c := f.conns[0]
	return batches(n, depth, func(first uint64, k int) error { return c.batch(w, first, k) })
}

// fanOut is fanOut's loop with a connection per goroutine: G goroutines
// take op indices from the shared counter, one command at a time each.
func (f *floorRunner) fanOut(w *workload, n int) error {
	w.next.Store(0)
	var wg sync.WaitGroup
	errs := make(chan error, len(f.conns))
	for _, c := range f.conns {
		wg.Go(func() {
			for {
				seq := w.next.Add(1) - 1
				if seq >= uint64(n) {
					return
				}
				if err := c.batch(w, seq, 1); err != nil {
					errs <- fmt.Errorf("op %d: %w", seq, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// encode builds the template: depth commands of w, pre-encoded.
func (c *floorConn) encode(w *workload, depth int) {
	c.tmpl, c.ends, c.idAt = c.tmpl[:0], c.ends[:0], c.idAt[:0]
	for range depth {
		switch w.name {
		case wPing:
			c.tmpl = appendCmd(c.tmpl, "PING")
		case wSet:
			c.tmpl = appendCmd(c.tmpl, "SET", setKey, w.payload)
		case wGet:
			c.tmpl = appendCmd(c.tmpl, "GET", setKey)
		case wEnqueue:
			key := string(w.appendJobKey(nil, 0))
			id := key[len(jobPrefix):]
			start := len(c.tmpl)
			c.tmpl = appendCmd(c.tmpl, "EVALSHA", w.sha, "2", key, pendingKey, id, w.payload)
			cmd := c.tmpl[start:]
			k := bytes.Index(cmd, []byte(key)) + len(jobPrefix) + 3
			i := bytes.LastIndex(cmd, []byte("\r\n"+id+"\r\n")) + 2 + 3
			c.idAt = append(c.idAt, start+k, start+i)
		}
		c.ends = append(c.ends, len(c.tmpl))
	}
}

// appendCmd appends a RESP array of bulk strings.
func appendCmd(dst []byte, args ...string) []byte {
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

// batch writes the template's first k commands (ops first..first+k-1)
// and counts their k replies.
func (c *floorConn) batch(w *workload, first uint64, k int) error {
	if w.name == wEnqueue {
		for i := range k {
			v := w.idBase + first + uint64(i)
			a, b := c.idAt[2*i], c.idAt[2*i+1]
			for j := 10; j >= 0; j-- {
				d := base62Chars[v%62]
				c.tmpl[a+j], c.tmpl[b+j] = d, d
				v /= 62
			}
		}
	}
	if _, err := c.c.Write(c.tmpl[:c.ends[k-1]]); err != nil {
		return err
	}
	return c.count(w, first, k)
}

// Expected replies, byte for byte.
var (
	replyPong = []byte("+PONG\r\n")
	replyOK   = []byte("+OK\r\n")
	replyOne  = []byte(":1\r\n")
)

// count reads until k replies are complete, checking each.
func (c *floorConn) count(w *workload, first uint64, k int) error {
	for got := 0; got < k; {
		line := bytes.IndexByte(c.buf[c.r:c.w], '\n')
		if line < 0 {
			if err := c.fill(); err != nil {
				return err
			}
			continue
		}
		end := c.r + line + 1
		reply := c.buf[c.r:end]
		if reply[0] == '$' {
			// A bulk string: its body and CRLF follow the header.
			size, err := strconv.Atoi(string(reply[1 : len(reply)-2]))
			if err != nil {
				return fmt.Errorf("bad bulk header %q", reply)
			}
			if size >= 0 {
				if end+size+2 > c.w {
					if err := c.fill(); err != nil {
						return err
					}
					continue
				}
				end += size + 2
			}
			if w.name != wGet || size != len(w.payload) {
				w.fail(first+uint64(got), string(c.buf[c.r:end]))
			}
		} else if !bytes.Equal(reply, c.want(w)) {
			w.fail(first+uint64(got), string(reply))
		}
		c.r = end
		got++
	}
	return nil
}

// want is the one reply w's commands may get, other than a GET's bulk.
func (c *floorConn) want(w *workload) []byte {
	switch w.name {
	case wPing:
		return replyPong
	case wEnqueue:
		return replyOne
	}
	return replyOK
}

// fill reads more reply bytes, moving what is unread to the front first
// (and growing the buffer when a reply does not fit).
func (c *floorConn) fill() error {
	if c.r > 0 {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	if c.w == len(c.buf) {
		c.buf = append(c.buf, make([]byte, len(c.buf))...)
	}
	n, err := c.c.Read(c.buf[c.w:])
	c.w += n
	if n == 0 && err == nil {
		err = io.ErrNoProgress
	}
	if n > 0 {
		return nil
	}
	return err
}
