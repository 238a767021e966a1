package resp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// countingReader counts the Read calls made on it.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// scalarStream is a stream of scalars (which Scalars decodes) and of
// frames it must leave to Next: aggregates, a push, a null, a bulk over
// MaxBulk (Limits{MaxBulk: 64}), a double.
func scalarStream() ([]byte, []Value) {
	var b []byte
	var want []Value
	add := func(v Value) {
		b = AppendValue(b, v)
		want = append(want, v)
	}
	big := strings.Repeat("b", 65)
	add(simple("PONG"))
	add(simple("OK"))
	add(integer(1))
	add(integer(-42))
	add(bulk("value\r\nwith CRLF"))
	add(bulk(""))
	add(simpleErr("ERR no"))
	add(array(bulk("x"), integer(2)))
	add(simple("after the array"))
	add(push(bulk("invalidate"), array(bulk("k"))))
	add(bulk("after the push"))
	add(null())
	add(bulk(big)) // over MaxBulk: Next skips it
	add(integer(7))
	add(double("1.5", 1.5))
	add(bulk(strings.Repeat("v", 64)))
	return b, want
}

// TestScalarsDecodeAsNext: replies decoded by Scalars, whatever the
// chunks the stream arrives in, are the ones Next decodes, in the same
// order, with the frames Scalars does not take left to Next; Scalars
// never reads from the stream, never decodes more than len(dst), and its
// values live in the arena, valid after the Reader has moved on (the
// buffer reused).
func TestScalarsDecodeAsNext(t *testing.T) {
	stream, want := scalarStream()
	for _, d := range deliveries {
		t.Run(d.name, func(t *testing.T) {
			src := &countingReader{r: d.wrap(bytes.NewReader(stream))}
			size := 16 // frames across buffer edges, the buffer growing
			if d.name == "whole" {
				size = 1024 // the stream in one read
			}
			r := NewReaderLimits(src, Limits{MaxBulk: 64}, size)
			var a Arena
			var got []Value
			var viaScalars []int // indexes of got that Scalars decoded
			slots := make([]Value, 3)
			for len(got) < len(want) {
				reads := src.reads
				k := r.Scalars(slots, &a)
				if src.reads != reads {
					t.Fatalf("Scalars read from the stream")
				}
				if k > len(slots) {
					t.Fatalf("Scalars decoded %d into %d slots", k, len(slots))
				}
				for _, v := range slots[:k] {
					viaScalars = append(viaScalars, len(got))
					got = append(got, v) // the arena's: not cloned
				}
				if k > 0 {
					continue
				}
				v, err := r.Next()
				if err != nil {
					t.Fatalf("Next after %d values: %v", len(got), err)
				}
				if v.Type == TooLarge {
					got = append(got, bulk(strings.Repeat("b", 65))) // skipped, as it should be
					continue
				}
				got = append(got, v.Clone())
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("after the last value: %v, want EOF", err)
			}
			for i := range want {
				if !equalValues(got[i], want[i]) {
					t.Errorf("value %d = %s, want %s", i, dump(got[i]), dump(want[i]))
				}
			}
			for _, i := range viaScalars {
				switch want[i].Type {
				case SimpleString, Error, Integer, BulkString:
				default:
					t.Errorf("Scalars decoded value %d, a %s", i, dump(want[i]))
				}
			}
			if d.name == "whole" && len(viaScalars) < 8 {
				t.Errorf("Scalars decoded %d values of a whole stream, want at least 8", len(viaScalars))
			}
		})
	}
}

// TestScalarsInsideAFrame: Scalars decodes nothing while Next is inside
// a frame it could not finish, even where the bytes buffered look like
// scalars (the body of a bulk being skipped for its size, its start
// already dropped from the buffer), nor after a sticky error; Next then
// goes on as without it.
func TestScalarsInsideAFrame(t *testing.T) {
	body := "+OK\r\n+OK\r\n+OK\r\n:1234" // 20 bytes that look like replies
	stream := "$20\r\n" + body + "\r\n+DONE\r\n"
	src := &interruptReader{chunks: []string{stream[:10], "", stream[10:]}}
	r := NewReaderLimits(src, Limits{MaxBulk: 8}, 64)
	var a Arena
	slots := make([]Value, 4)
	if _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Next = %v, want the deadline", err)
	}
	if k := r.Scalars(slots, &a); k != 0 {
		t.Fatalf("Scalars inside a skipped bulk decoded %d: %s", k, dump(slots[0]))
	}
	v, err := r.Next()
	if err != nil || v.Type != TooLarge {
		t.Fatalf("Next = %s, %v; want the skipped bulk", dump(v), err)
	}
	if k := r.Scalars(slots, &a); k != 1 || !equalValues(slots[0], simple("DONE")) {
		t.Fatalf("Scalars = %d, %s; want DONE", k, dump(slots[0]))
	}

	r = NewReaderLimits(&interruptReader{chunks: []string{"+OK\r\n:1"}}, Limits{}, 64)
	if v, err := r.Next(); err != nil || !equalValues(v, simple("OK")) {
		t.Fatalf("Next = %s, %v", dump(v), err)
	}
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("Next = %v, want ErrUnexpectedEOF", err)
	}
	if k := r.Scalars(slots, &a); k != 0 {
		t.Fatalf("Scalars after a sticky error decoded %d", k)
	}
}

// interruptReader yields its chunks in turn, an empty one as a read
// deadline passing (os.ErrDeadlineExceeded), then EOF.
type interruptReader struct{ chunks []string }

func (r *interruptReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	c := r.chunks[0]
	if c == "" {
		r.chunks = r.chunks[1:]
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(p, c)
	if n == len(c) {
		r.chunks = r.chunks[1:]
	} else {
		r.chunks[0] = c[n:]
	}
	return n, nil
}

// TestScalarsShortKeptApart: the short replies Scalars keeps in the
// arena (copied a word at a time) are each their own bytes, with no room
// after them: appending to one does not write over the next, and they
// stay as read after the Reader's buffer is reused.
func TestScalarsShortKeptApart(t *testing.T) {
	stream := "+PONG\r\n+OK\r\n$1\r\nx\r\n$8\r\n12345678\r\n+PONG\r\n:5\r\n"
	r := NewReaderLimits(strings.NewReader(stream+stream), Limits{}, 64)
	var a Arena
	a.Retain(bulk(strings.Repeat("a", 300))) // room in the arena: the word copy
	slots := make([]Value, 5)
	if _, err := r.Next(); err != nil { // fill the buffer
		t.Fatal(err)
	}
	k := r.Scalars(slots, &a)
	if k != 5 {
		t.Fatalf("Scalars decoded %d, want 5", k)
	}
	want := []Value{simple("OK"), bulk("x"), bulk("12345678"), simple("PONG"), integer(5)}
	for i := range k - 1 {
		if s := slots[i].Str; cap(s) != len(s) {
			t.Errorf("value %d: cap %d, len %d", i, cap(s), len(s))
		}
		_ = append(slots[i].Str, "XXXXXXXX"...)
	}
	for r.w > r.r || r.err == nil {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	for i := range want {
		if !equalValues(slots[i], want[i]) {
			t.Errorf("value %d = %s, want %s", i, dump(slots[i]), dump(want[i]))
		}
	}
}
