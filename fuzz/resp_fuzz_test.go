package fuzz

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/echomq/echomq-go/resp"
)

// limits are tight, so that a hostile header is refused or cheap.
// MaxReplyBytes admits 20,000 elements: more than MaxValues, so that both
// limits can be broken (MaxValues by a reply that sends too many values,
// MaxReplyBytes by headers that declare too many), and few enough that a
// handful of nested headers breaks it.
var limits = resp.Limits{
	MaxBulk:       1 << 20,
	MaxAggregate:  1 << 12,
	MaxDepth:      32,
	MaxLine:       1 << 12,
	MaxValues:     1 << 14,
	MaxReplyBytes: 20000 * int(unsafe.Sizeof(resp.Value{})),
}

// decodeSeeds are frames of every type, valid and not, for f.Add.
var decodeSeeds = []string{
	"+OK\r\n", "-ERR unknown command\r\n", ":0\r\n", ":-9223372036854775808\r\n",
	"$5\r\nhello\r\n", "$0\r\n\r\n", "$4\r\na\r\nb\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n",
	"*2\r\n$3\r\nfoo\r\n:1\r\n", "_\r\n", "#t\r\n", "#f\r\n", ",1.5\r\n", ",-inf\r\n", ",nan\r\n",
	"(12345678901234567890123\r\n", "!5\r\nERR x\r\n", "=8\r\ntxt:abcd\r\n",
	"%1\r\n+k\r\n:1\r\n", "~2\r\n+a\r\n+b\r\n", ">2\r\n+message\r\n$1\r\nx\r\n",
	"|1\r\n+ttl\r\n:3\r\n+v\r\n", "*1\r\n|1\r\n+a\r\n:1\r\n|0\r\n#t\r\n",
	"$?\r\n;3\r\nabc\r\n;0\r\n", "*?\r\n:1\r\n.\r\n", "$536870912\r\n", "*4611686018427387904\r\n",
	"$12345678901234567890\r\n", "$-2\r\n", "*01\r\n:1\r\n", "+OK\n", "@\r\n", "*3\r\n:x\r\n",
	"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
	"+OK\r\n:1\r\n$3\r\nabc\r\n*1\r\n$1\r\nx\r\n%0\r\n",
	// MaxReplyBytes: the sixth header declares element 20,484.
	"*4\r\n*4096\r\n*4096\r\n*4096\r\n*4096\r\n*4096\r\n",
	"%4\r\n|4096\r\n%4096\r\n~4096\r\n",
	// Skipped whole, and the frame after them decoded: over MaxAggregate,
	// over MaxDepth with an attribute and strings inside; and a push after
	// an attribute, over MaxReplyBytes at its fifth header, incomplete.
	"*4097\r\n" + strings.Repeat(":1\r\n", 4097) + "+next\r\n",
	strings.Repeat("*1\r\n", 40) + "|1\r\n+a\r\n$3\r\nabc\r\n=5\r\ntxt:x\r\n+next\r\n",
	"|1\r\n+k\r\n+v\r\n>5\r\n" + strings.Repeat("*4096\r\n", 5) + "+next\r\n",
}

// outcome is how a stream of frames ended.
type outcome int

const (
	endClean      outcome = iota // between frames: io.EOF
	endIncomplete                // inside a frame: ErrIncomplete, io.ErrUnexpectedEOF
	endProtocol                  // malformed or over a limit
)

// decoded is every frame of a stream, re-encoded, and how the stream ended.
type decoded struct {
	frames [][]byte
	end    outcome
	perr   *resp.ProtocolError
}

// parseAll decodes data with Parse in a loop.
func parseAll(t *testing.T, data []byte) decoded {
	var d decoded
	for off := 0; ; {
		v, n, err := resp.Parse(data[off:], limits)
		rv, rn, rok := refParse(data[off:])
		switch {
		case err == resp.ErrIncomplete && off == len(data):
			d.end = endClean
			return d
		case err == resp.ErrIncomplete:
			if rok {
				t.Fatalf("Parse(%q): incomplete; the reference decoder took %d bytes", data[off:], rn)
			}
			d.end = endIncomplete
			return d
		case err != nil:
			d.end, d.perr = endProtocol, protocolError(t, err)
			if rok && !isLimitError(d.perr) {
				t.Fatalf("Parse(%q): %v; the reference decoder took %d bytes", data[off:], err, rn)
			}
			return d
		}
		if n <= 0 || n > len(data)-off {
			t.Fatalf("Parse took %d of %d bytes", n, len(data)-off)
		}
		if v.Type == resp.TooLarge {
			// Skipped: the reference decoder takes the same bytes, finds
			// a limit broken, and agrees on the reply's type.
			var e *resp.ReplyTooLargeError
			if !errors.As(v.Err(), &e) || !rok || rn != n || e.Bytes != int64(n) || !refBreaks(rv, limits) ||
				e.Type != rv.Type && rv.Type != resp.Null {
				t.Fatalf("Parse(%q) skipped %d bytes: %v; the reference decoder %d bytes, ok %v, type %v, over the limits %v",
					data[off:], n, v.Err(), rn, rok, rv.Type, rok && refBreaks(rv, limits))
			}
			d.frames = append(d.frames, tooLargeFrame(v))
			off += n
			continue
		}
		if rok && refBreaks(rv, limits) {
			t.Fatalf("Parse(%q) decoded a reply over the limits", data[off:])
		}
		if !rok || rn != n || !equal(v, rv) {
			t.Fatalf("Parse(%q) took %d bytes; the reference decoder %d bytes, ok %v, same value %v",
				data[off:], n, rn, rok, rok && equal(v, rv))
		}
		d.frames = append(d.frames, reencode(t, v))
		off += n
	}
}

// isLimitError reports whether a protocol error is a broken bound rather
// than malformed bytes; the reference decoder has no bounds.
func isLimitError(pe *resp.ProtocolError) bool {
	for _, s := range []string{"longer than", "over the limit", "deeper than", "more than", "MaxReplyBytes"} {
		if strings.Contains(pe.Msg, s) {
			return true
		}
	}
	return false
}

// readAll decodes data with a Reader fed in the chunk sizes the fuzzer
// chose, through a starting buffer it chose.
func readAll(t *testing.T, data, chunks []byte) decoded {
	var d decoded
	size := 1
	if len(chunks) > 0 {
		size = 1 + int(chunks[0]%128)
	}
	r := resp.NewReaderLimits(newChunkReader(data, chunks), limits, size)
	for {
		v, err := r.Next()
		switch {
		case err == io.EOF:
			d.end = endClean
			return d
		case err == io.ErrUnexpectedEOF:
			d.end = endIncomplete
			return d
		case err != nil:
			d.end, d.perr = endProtocol, protocolError(t, err)
			if r.Err() != err {
				t.Fatalf("error not sticky: %v then %v", err, r.Err())
			}
			return d
		}
		if v.Type == resp.TooLarge {
			d.frames = append(d.frames, tooLargeFrame(v))
			continue
		}
		d.frames = append(d.frames, reencode(t, v))
	}
}

// tooLargeFrame stands for a skipped reply in a decoded stream: its error
// text, which names the limit, the size that broke it, the reply's length
// and type, so that Parse and a Reader must agree on all of them.
func tooLargeFrame(v resp.Value) []byte {
	return append([]byte("skipped: "), v.Text()...)
}

func protocolError(t *testing.T, err error) *resp.ProtocolError {
	var pe *resp.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, resp.ErrProtocol) {
		t.Fatalf("unexpected error %T %v", err, err)
	}
	return pe
}

// reencode encodes v and checks that the encoding decodes to a value that
// encodes the same way: decoding then encoding is stable.
func reencode(t *testing.T, v resp.Value) []byte {
	enc := resp.AppendValue(nil, v)
	v2, n, err := resp.Parse(enc, limits)
	if err != nil || n != len(enc) {
		t.Fatalf("re-encoded frame %q: Parse = %d, %v", enc, n, err)
	}
	if !equal(v, v2) {
		t.Fatalf("re-encoded frame %q decodes differently", enc)
	}
	if enc2 := resp.AppendValue(nil, v2); !bytes.Equal(enc, enc2) {
		t.Fatalf("encoding not stable: %q then %q", enc, enc2)
	}
	return enc
}

// chunkReader hands data over in the sizes chunks gives, cycling.
type chunkReader struct {
	data   []byte
	chunks []byte
	i      int
}

func newChunkReader(data, chunks []byte) *chunkReader {
	if len(chunks) > 1 {
		chunks = chunks[1:] // the first byte chose the buffer size
	}
	return &chunkReader{data: data, chunks: chunks}
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.chunks) > 0 {
		c := r.chunks[r.i%len(r.chunks)]
		r.i++
		if c != 255 { // 255: everything left
			n = 1 + int(c%64)
		}
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// memCheckEvery is how often FuzzDecode measures its allocations.
const memCheckEvery = 64

var calls int

func FuzzDecode(f *testing.F) {
	for i, s := range decodeSeeds {
		f.Add([]byte(s), []byte{byte(i), 1, 2, 3, 5, 8, 13})
		f.Add([]byte(s), []byte{})
	}
	f.Fuzz(func(t *testing.T, data, chunks []byte) {
		calls++
		measure := calls%memCheckEvery == 0
		var before, after runtime.MemStats
		if measure {
			runtime.ReadMemStats(&before)
		}

		want := parseAll(t, data)
		got := readAll(t, data, chunks)

		if measure {
			runtime.ReadMemStats(&after)
			// Decoding allocates in proportion to the bytes that arrived
			// (values of 72 bytes for frames of 3 bytes and up, buffers at
			// most doubling), never to the lengths they claim.
			if a := after.TotalAlloc - before.TotalAlloc; a > 256<<10+uint64(256*len(data)) {
				t.Fatalf("allocated %d bytes for %d bytes of input", a, len(data))
			}
		}

		if len(got.frames) != len(want.frames) {
			t.Fatalf("Reader decoded %d frames, Parse %d (ends %d, %d)", len(got.frames), len(want.frames), got.end, want.end)
		}
		for i := range want.frames {
			if !bytes.Equal(got.frames[i], want.frames[i]) {
				t.Fatalf("frame %d: Reader %q, Parse %q", i, got.frames[i], want.frames[i])
			}
		}
		if got.end != want.end {
			t.Fatalf("Reader ended %d (%v), Parse %d (%v)", got.end, got.perr, want.end, want.perr)
		}
		if want.end == endProtocol && *got.perr != *want.perr {
			t.Fatalf("Reader: %v; Parse: %v", got.perr, want.perr)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00hello"))
	f.Add([]byte{10, 3, 0, 1, 'a', 3, 2, 'b', 'c', 2, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{13, 2, 0, 1, 'k', 9, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 14, 14, 1, 0, 2, 'x', 7})
	f.Add([]byte{14, 7, 2, 0, 1, 'a', 15, 3, 14, 5, 'm', 'k', 'd', 2, 'h', 'i', 1, 0})
	f.Add([]byte{6, 1, 40, '9', '8', '7', 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		v := g.value(0)
		enc := resp.AppendValue(nil, v)

		got, n, err := resp.Parse(enc, resp.Limits{})
		if err != nil || n != len(enc) {
			t.Fatalf("Parse(%q) = %d, %v", enc, n, err)
		}
		if !equal(v, got) {
			t.Fatalf("round trip of %q differs", enc)
		}
		if enc2 := resp.AppendValue(nil, got); !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding %q gave %q", enc, enc2)
		}

		// A Reader fed byte by byte agrees, and a copy retained in an
		// Arena survives the Reader moving on.
		r := resp.NewReaderLimits(iotest.OneByteReader(bytes.NewReader(append(enc, "+next\r\n"...))), resp.Limits{}, 1)
		rv, err := r.Next()
		if err != nil || !equal(v, rv) {
			t.Fatalf("Reader on %q: %v", enc, err)
		}
		var a resp.Arena
		kept := a.Retain(rv)
		if next, err := r.Next(); err != nil || !next.Equal("next") {
			t.Fatalf("value after %q: %v", enc, err)
		}
		if !equal(v, kept) || !equal(v, got.Clone()) {
			t.Fatalf("retained copy of %q differs", enc)
		}
	})
}
