package resp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
)

// DefaultBufferSize is a Reader's starting buffer size. The buffer grows
// for a frame that does not fit, never by more than twice the bytes that
// actually arrived, and shrinks back after such a frame.
const DefaultBufferSize = 32 << 10

// shrinkAbove is the buffer size above which a Reader goes back to its
// starting size, once shrinkAfter frames that fit the starting size have
// followed the last large one: a stream of large replies keeps its buffer.
const (
	shrinkAbove = 1 << 20
	shrinkAfter = 64
)

// Reader decodes RESP2 and RESP3 replies from a byte stream without
// copying: a Value's strings view the Reader's buffer and its elements view
// the Reader's arena. Both are reused, so a Value is valid only until the
// next call to Next. Clone it, or Retain it in an Arena, to keep it.
//
// In steady state (replies that fit the buffer) Next allocates nothing.
// A ProtocolError or an I/O error is sticky: every later call returns it.
// A read deadline (os.ErrDeadlineExceeded) is not: it interrupts Next,
// which may be called again to resume the frame where it stopped.
type Reader struct {
	rd    io.Reader
	buf   []byte
	r, w  int // buf[r:w] holds bytes read but not yet consumed
	size  int // the starting buffer size
	small int // frames that fit size since the last larger one
	sc    scanner
	arena []Value
	err   error
	msg   []byte // a TooLarge value's text
	tl    [4]Value
}

// NewReader returns a Reader over rd with the default limits and buffer.
func NewReader(rd io.Reader) *Reader { return NewReaderLimits(rd, Limits{}, 0) }

// NewReaderLimits returns a Reader over rd with the given limits (zero
// fields take defaults) and starting buffer size (0 takes the default).
func NewReaderLimits(rd io.Reader, lim Limits, size int) *Reader {
	if size <= 0 {
		size = DefaultBufferSize
	}
	r := &Reader{rd: rd, size: size, buf: make([]byte, size)}
	r.sc.lim = lim.withDefaults()
	return r
}

// SetLimits sets the limits the next replies are read under (zero fields
// take defaults), as NewReaderLimits does: a connection reads its
// handshake under the defaults, then its commands' replies under its own.
func (r *Reader) SetLimits(lim Limits) { r.sc.lim = lim.withDefaults() }

// Reset makes r read from rd, dropping buffered bytes and any sticky error.
func (r *Reader) Reset(rd io.Reader) {
	r.rd, r.r, r.w, r.err = rd, 0, 0, nil
	r.sc.reset()
}

// Buffered returns the number of bytes read from the stream but not yet
// decoded.
func (r *Reader) Buffered() int { return r.w - r.r }

// Err returns the sticky error, if any.
func (r *Reader) Err() error { return r.err }

// Next reads and decodes the next complete reply. The Value and everything
// it views are valid until the next call to Next or Reset.
//
// A well-formed reply that breaks r's Limits is skipped on the wire (its
// bytes pass through the buffer, which does not grow for them) and Next
// returns in its place a Value of type TooLarge, with a nil error: its Err
// is a *ReplyTooLargeError. The next call decodes the next reply.
//
// A protocol error is returned as a *ProtocolError; io.EOF is returned when
// the stream ends cleanly between replies and io.ErrUnexpectedEOF when it
// ends inside one.
func (r *Reader) Next() (Value, error) {
	if r.err != nil {
		return Value{}, r.err
	}
	for {
		if r.w > r.r {
			// The fast path is tried once per frame: a frame the scanner
			// found incomplete (need > 0) resumes in the scanner, which
			// does not search the same bytes again.
			if r.sc.pos == 0 && r.sc.need == 0 {
				if v, n := r.simple(r.buf[r.r:r.w]); n > 0 {
					r.consumed(n)
					r.sc.reset()
					return v, nil
				}
			}
			done, err := r.sc.scan(r.buf[r.r:r.w])
			if err != nil {
				r.err = err
				return Value{}, err
			}
			if done {
				if r.sc.skipping {
					return r.skipped(), nil
				}
				return r.take(), nil
			}
			if r.sc.skipping {
				// What was skipped is dropped from the buffer.
				r.r += r.sc.discard()
			}
		}
		if err := r.fill(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// An interrupted read is not a fault: the frame read so
				// far is kept, and the next call resumes it.
				return Value{}, err
			}
			if err == io.EOF && (r.w > r.r || r.sc.skipping) {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return Value{}, err
		}
	}
}

// Scalars decodes the replies waiting whole in the buffer, up to
// len(dst), straight into dst, each retained in a as Arena.Retain would
// (dst[i] stays valid until a's Reset), and returns how many it decoded.
// It stops at the first reply that is not a scalar (a simple string or
// error, an integer, or a bulk string within the Limits: what most
// commands answer) or not wholly buffered, which Next then reads. It
// never reads from the stream, and decodes nothing after a sticky error
// or while Next is inside a frame.
//
// It is the bulk path of a reader that keeps every reply of a pipeline
// (a connection filling a batch's slots): one call for many replies, and
// no Value copied on the way.
func (r *Reader) Scalars(dst []Value, a *Arena) int {
	if r.err != nil || r.sc.pos != 0 || r.sc.need != 0 {
		return 0
	}
	k := 0
	for ; k < len(dst) && r.w > r.r; k++ {
		b := r.buf[r.r:r.w]
		t, num, lo, hi, n := r.scalar(b)
		if n == 0 {
			break
		}
		r.consumed(n)
		d := &dst[k]
		d.Type, d.Int, d.Str, d.Elems, d.Attr = t, num, nil, nil, nil
		if t == Integer {
			continue
		}
		if off := len(a.bytes); hi-lo <= 8 && lo+8 <= len(b) && off+8 <= cap(a.bytes) {
			// A short one (PONG, OK, a small bulk), as a.keep would keep
			// it: copied as one 8-byte word, without a call of memmove;
			// the bytes after hi land in the Arena's spare room, past
			// the copy's end and capacity.
			le := binary.LittleEndian
			le.PutUint64(a.bytes[off:off+8], le.Uint64(b[lo:lo+8]))
			end := off + hi - lo
			a.bytes = a.bytes[:end]
			d.Str = a.bytes[off:end:end]
		} else {
			d.Str = a.keep(b[lo:hi:hi])
		}
	}
	return k
}

// simple decodes, without the scanner, a complete frame at the start of b
// that is a simple string, simple error, integer or bulk string: most
// replies. It returns n=0 for anything else, or anything odd, which the
// scanner then decodes (or refuses with the right error).
func (r *Reader) simple(b []byte) (Value, int) {
	t, num, lo, hi, n := r.scalar(b)
	switch {
	case n == 0:
		return Value{}, 0
	case t == Integer:
		return Value{Type: Integer, Int: num}, n
	}
	return Value{Type: t, Str: b[lo:hi:hi]}, n
}

// scalar finds the frame simple decodes: its type, its length n (0 when
// it is not one), and its integer (Integer) or the bounds of its bytes,
// b[lo:hi] (the others). Its results fit in registers, where a Value
// does not: Scalars writes them straight into their slot.
func (r *Reader) scalar(b []byte) (t Type, num int64, lo, hi, n int) {
	if len(b) < 3 {
		return 0, 0, 0, 0, 0
	}
	switch Type(b[0]) {
	case SimpleString, Error, Integer, BulkString:
	default:
		return 0, 0, 0, 0, 0 // an aggregate, a push, …: not searched
	}
	lim := min(len(b), r.sc.lim.MaxLine+2)
	i := lineEnd(b[:lim])
	if i < 2 || b[i-1] != '\r' {
		return 0, 0, 0, 0, 0
	}
	line := b[1 : i-1 : i-1]
	switch t = Type(b[0]); t {
	case SimpleString, Error:
		return t, 0, 1, i - 1, i + 1
	case Integer:
		if num, ok := parseInt(line); ok {
			return t, num, 0, 0, i + 1
		}
	case BulkString:
		// Exactly the lengths the scanner accepts: no sign (a null or
		// "-0" goes to the scanner), no leading zero, within the limit.
		num, ok := parseInt(line)
		if !ok || line[0] == '-' || num > int64(r.sc.lim.MaxBulk) || line[0] == '0' && len(line) > 1 {
			return 0, 0, 0, 0, 0
		}
		end := i + 1 + int(num) + 2
		if end > len(b) || b[end-2] != '\r' || b[end-1] != '\n' {
			return 0, 0, 0, 0, 0
		}
		return t, 0, i + 1, end - 2, end
	}
	return 0, 0, 0, 0, 0
}

// lineEnd returns the index of the first LF in b after its type byte,
// or 0 when there is none. Most reply lines are a few bytes ("+OK",
// ":1", "$64"): their first 16 bytes are looked at one by one, which
// is quicker for them than IndexByte's call; a longer line goes on
// with IndexByte.
func lineEnd(b []byte) int {
	n := min(len(b), 16)
	for i := 1; i < n; i++ {
		if b[i] == '\n' {
			return i
		}
	}
	if n == len(b) {
		return 0
	}
	if i := bytes.IndexByte(b[n:], '\n'); i >= 0 {
		return n + i
	}
	return 0
}

// take builds the scanned frame and consumes it.
func (r *Reader) take() Value {
	n := r.sc.nvals
	if cap(r.arena) < n {
		// n is at most maxElems+1: the scan refused any aggregate header
		// that would pass MaxReplyBytes. The headroom for the next larger
		// reply stays within that bound too.
		r.arena = make([]Value, min(n+n/4, r.sc.lim.maxElems()+1))
	}
	frame := r.buf[r.r : r.r+r.sc.pos]
	v := build(frame, n, r.arena[:n])
	r.consumed(r.sc.pos)
	r.sc.reset()
	return v
}

// skipped consumes the rest of a skipped frame and returns the TooLarge
// Value that stands for it.
func (r *Reader) skipped() Value {
	n := r.sc.pos
	e, k := r.sc.skipped(r.sc.sk.base + n)
	var v Value
	v, r.msg = tooLargeValue(&e, k, r.msg, r.tl[:])
	r.consumed(n)
	r.sc.reset()
	return v
}

// consumed moves past a frame of n bytes, noting whether it was large.
func (r *Reader) consumed(n int) {
	r.r += n
	if n > r.size {
		r.small = 0
	} else if r.small < shrinkAfter {
		r.small++
	}
}

// errNoProgress is returned when the underlying reader returns neither
// bytes nor an error too many times in a row.
var errNoProgress = errors.New("resp: reader made no progress")

// fill reads more bytes, making room first: it moves the unread bytes to
// the front, and grows the buffer only when a single frame needs more than
// the whole buffer.
func (r *Reader) fill() error {
	if r.r == r.w {
		r.r, r.w = 0, 0
		if len(r.buf) > shrinkAbove && r.size < shrinkAbove && r.small >= shrinkAfter {
			r.buf = make([]byte, r.size)
		}
	}
	if r.w == len(r.buf) {
		if r.r > 0 {
			copy(r.buf, r.buf[r.r:r.w])
			r.w -= r.r
			r.r = 0
		} else {
			// One frame fills the buffer: double it, or grow it to the
			// frame's exact length when the scan knows it and it is less.
			// (Growing to a mere lower bound would grow by one value at a
			// time and copy the frame over and over.)
			n := 2 * len(r.buf)
			if need := r.sc.need; r.sc.exact && need > len(r.buf) && need < n {
				n = need
			}
			nb := make([]byte, n)
			copy(nb, r.buf[:r.w])
			r.buf = nb
		}
	}
	for range 100 {
		n, err := r.rd.Read(r.buf[r.w:])
		r.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return errNoProgress
}

// Parse decodes one complete reply from the start of b and returns it with
// the number of bytes it took. It returns ErrIncomplete when b ends before
// the reply does, and a *ProtocolError when b is not valid RESP. A
// well-formed reply that breaks lim is returned as a Value of type
// TooLarge (see Reader.Next), with the bytes it took. The Value views b;
// its elements are freshly allocated.
func Parse(b []byte, lim Limits) (Value, int, error) {
	sc := scanner{lim: lim.withDefaults()}
	done, err := sc.scan(b)
	if err != nil {
		return Value{}, 0, err
	}
	if !done {
		return Value{}, 0, ErrIncomplete
	}
	if sc.skipping {
		e, k := sc.skipped(sc.pos)
		v, _ := tooLargeValue(&e, k, nil, make([]Value, 4))
		return v, sc.pos, nil
	}
	return build(b[:sc.pos], sc.nvals, make([]Value, sc.nvals)), sc.pos, nil
}
