package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// deliveries wrap a stream the ways a socket may hand it over.
var deliveries = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"OneByteReader", iotest.OneByteReader},
	{"HalfReader", iotest.HalfReader},
	{"DataErrReader", iotest.DataErrReader},
	{"chunks 1,2,3,5,7", func(r io.Reader) io.Reader {
		b, _ := io.ReadAll(r)
		return &chunkReader{data: b, sizes: []int{1, 2, 3, 5, 7}}
	}},
}

// sweepStream is a stream of frames built around a payload of size n, so
// that lengths, headers and terminators fall on every side of a buffer
// edge. It returns the stream and the values it holds.
func sweepStream(n int) ([]byte, []Value) {
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = "ab\r\ncd\x00\n"[i%8] // CR and LF inside the bulk
	}
	p := string(payload)
	var b []byte
	var want []Value
	add := func(v Value) {
		b = AppendValue(b, v)
		want = append(want, v)
	}
	add(bulk(p))
	add(simple("OK"))
	add(array(bulk(p), bulk(p[:n/2]), integer(int64(n))))
	add(bulk(""))
	add(mapOf(bulk(p), array(bulk(p)), simple("k"), null()))
	add(withAttr(bulk(p), attrOf(bulk(p), integer(1))))
	add(simple(strings.Repeat("s", n%7000)))
	add(verbatim("txt:" + p))
	return b, want
}

// decodeAll reads values until an error and returns them (cloned) with
// that error.
func decodeAll(r *Reader) ([]Value, error) {
	var got []Value
	for {
		v, err := r.Next()
		if err != nil {
			return got, err
		}
		got = append(got, v.Clone())
	}
}

// TestReaderBufferEdges sweeps payload sizes around the read buffer's
// size and its multiples, with the stream delivered in every way.
func TestReaderBufferEdges(t *testing.T) {
	for _, bufsize := range []int{16, 64, 4096} {
		var sizes []int
		for _, mult := range []int{1, 2, 3, 4, 8} {
			for d := -3; d <= 3; d++ {
				if n := mult*bufsize + d; n >= 0 {
					sizes = append(sizes, n)
				}
			}
		}
		sizes = append(sizes, 0, 1, 2, 3)
		for _, n := range sizes {
			stream, want := sweepStream(n)
			for _, d := range deliveries {
				if bufsize == 4096 && d.name == "OneByteReader" && n > 4*4096 {
					continue // slow and adds nothing
				}
				r := NewReaderLimits(d.wrap(bytes.NewReader(stream)), Limits{}, bufsize)
				got, err := decodeAll(r)
				if err != io.EOF {
					t.Fatalf("buf %d, n %d, %s: err %v after %d values", bufsize, n, d.name, err, len(got))
				}
				if len(got) != len(want) {
					t.Fatalf("buf %d, n %d, %s: %d values, want %d", bufsize, n, d.name, len(got), len(want))
				}
				for i := range want {
					if !equalValues(got[i], want[i]) {
						t.Fatalf("buf %d, n %d, %s: value %d:\n got  %.200s\n want %.200s",
							bufsize, n, d.name, i, dump(got[i]), dump(want[i]))
					}
				}
			}
		}
	}
}

// TestReaderAlignment shifts one stream of frames across every offset of a
// small buffer, so each frame boundary meets the buffer edge.
func TestReaderAlignment(t *testing.T) {
	const bufsize = 32
	var frames []byte
	var want []Value
	for _, tc := range validWire {
		frames = append(frames, tc.wire...)
		want = append(want, tc.want)
	}
	for shift := range 2 * bufsize {
		pad := simple(strings.Repeat("p", shift))
		stream := append(AppendValue(nil, pad), frames...)
		for _, d := range deliveries {
			r := NewReaderLimits(d.wrap(bytes.NewReader(stream)), Limits{}, bufsize)
			got, err := decodeAll(r)
			if err != io.EOF || len(got) != len(want)+1 {
				t.Fatalf("shift %d, %s: %d values, err %v", shift, d.name, len(got), err)
			}
			for i, w := range want {
				checkDecoded(t, validWire[i].wire, got[i+1], w)
			}
		}
	}
}

// TestReaderEOF: EOF between frames is io.EOF, inside a frame
// io.ErrUnexpectedEOF, and both are sticky.
func TestReaderEOF(t *testing.T) {
	if _, err := NewReader(strings.NewReader("")).Next(); err != io.EOF {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}
	for _, tc := range validWire {
		for i := 1; i < len(tc.wire); i++ {
			for _, d := range deliveries {
				in := "+first\r\n" + tc.wire[:i]
				r := NewReaderLimits(d.wrap(strings.NewReader(in)), Limits{}, 16)
				if v, err := r.Next(); err != nil || v.Text() != "first" {
					t.Fatalf("%q: first value %s, %v", in, dump(v), err)
				}
				for range 2 {
					if _, err := r.Next(); err != io.ErrUnexpectedEOF {
						t.Fatalf("%s %q: %v, want io.ErrUnexpectedEOF", d.name, in, err)
					}
				}
				if r.Err() != io.ErrUnexpectedEOF {
					t.Fatalf("Err() = %v", r.Err())
				}
			}
		}
	}
	r := NewReader(strings.NewReader("+OK\r\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("at the boundary: %v, want io.EOF", err)
		}
	}
}

// TestReaderIOErrorSticky: an I/O error is returned as is, then forever;
// the frames before it still decode.
func TestReaderIOErrorSticky(t *testing.T) {
	boom := errors.New("boom")
	in := io.MultiReader(strings.NewReader("+a\r\n+b"), iotest.ErrReader(boom))
	r := NewReaderLimits(in, Limits{}, 16)
	if v, err := r.Next(); err != nil || v.Text() != "a" {
		t.Fatalf("first: %s, %v", dump(v), err)
	}
	for range 3 {
		if _, err := r.Next(); err != boom {
			t.Fatalf("err %v, want boom", err)
		}
	}

	// iotest.TimeoutReader fails its second read only; the Reader keeps
	// the error although the stream would go on.
	r = NewReaderLimits(iotest.TimeoutReader(strings.NewReader("+a\r\n+b\r\n")), Limits{}, 4)
	if v, err := r.Next(); err != nil || v.Text() != "a" {
		t.Fatalf("first: %s, %v", dump(v), err)
	}
	for range 2 {
		if _, err := r.Next(); err != iotest.ErrTimeout {
			t.Fatalf("err %v, want ErrTimeout", err)
		}
	}
}

// zeroReader returns (0, nil) forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	_, err := NewReader(zeroReader{}).Next()
	if err != errNoProgress {
		t.Fatalf("err %v, want errNoProgress", err)
	}
}

// TestReaderReset drops buffered bytes and the sticky error.
func TestReaderReset(t *testing.T) {
	r := NewReader(strings.NewReader("+a\r\n+b\r\n@bad\r\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if r.Buffered() != len("+b\r\n@bad\r\n") {
		t.Fatalf("Buffered() = %d", r.Buffered())
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("err %v", err)
	}
	r.Reset(strings.NewReader(":7\r\n"))
	if r.Err() != nil || r.Buffered() != 0 {
		t.Fatalf("after Reset: Err %v, Buffered %d", r.Err(), r.Buffered())
	}
	v, err := r.Next()
	if err != nil || v.Int != 7 {
		t.Fatalf("after Reset: %s, %v", dump(v), err)
	}

	// Reset in the middle of a frame forgets the partial scan too.
	r = NewReaderLimits(&chunkReader{data: []byte("*2\r\n:1\r\n"), sizes: []int{8}}, Limits{}, 8)
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatal(err)
	}
	r.Reset(strings.NewReader("+x\r\n"))
	if v, err := r.Next(); err != nil || v.Text() != "x" {
		t.Fatalf("after Reset mid-frame: %s, %v", dump(v), err)
	}
}

// TestReaderGrowthLinear: a frame much larger than the buffer is read in
// linear time, the buffer doubling. (The Reader used to grow to the scan's
// lower bound, one value further each time: a 1 MiB array of 1 KiB bulks
// copied 4 GB in 7,700 allocations, and a 60 KB simple string through a
// 16-byte buffer grew one byte at a time, 60,000 allocations.)
func TestReaderGrowthLinear(t *testing.T) {
	var arr []byte
	arr = AppendArrayHeader(arr, 1000)
	for range 1000 {
		arr = AppendBulk(arr, bytes.Repeat([]byte("x"), 1024))
	}
	long := []byte("+" + strings.Repeat("a", 60000) + "\r\n")
	for _, tc := range []struct {
		name string
		in   []byte
		size int
	}{
		{"array 1000 x 1 KiB", arr, 0},
		{"array 1000 x 1 KiB, buffer 16", arr, 16},
		{"simple 60 KB, buffer 16", long, 16},
	} {
		for _, d := range deliveries[:3] {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			r := NewReaderLimits(d.wrap(bytes.NewReader(tc.in)), Limits{}, tc.size)
			if _, err := r.Next(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if m := after.Mallocs - before.Mallocs; m > 40 {
				t.Errorf("%s, %s: %d allocations", tc.name, d.name, m)
			}
			if b := after.TotalAlloc - before.TotalAlloc; b > uint64(8*len(tc.in)+1<<20) {
				t.Errorf("%s, %s: allocated %d bytes for a %d-byte frame", tc.name, d.name, b, len(tc.in))
			}
			if len(r.buf) > 2*len(tc.in) {
				t.Errorf("%s, %s: buffer %d", tc.name, d.name, len(r.buf))
			}
			if elapsed > 30*time.Second { // a hang guard: the allocations above are the test
				t.Errorf("%s, %s: took %v", tc.name, d.name, elapsed)
			}
		}
	}
}

// TestReaderExactGrowth: when the scan knows a frame's exact length (a
// bulk that ends the frame), the buffer grows to it, not past it; a buffer
// grown beyond 1 MiB shrinks back after the frame.
func TestReaderExactGrowth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"top-level bulk", AppendBulk(nil, make([]byte, 600<<10))},
		{"bulk ending an array", AppendBulk(AppendBulk(AppendArrayHeader(nil, 2), []byte("k")), make([]byte, 600<<10))},
		{"bulk ending a map", AppendBulk(AppendInt(AppendAggregateHeader(nil, Map, 1), 1), make([]byte, 600<<10))},
	} {
		r := NewReader(bytes.NewReader(tc.frame))
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if len(r.buf) != len(tc.frame) {
			t.Errorf("%s: buffer %d, want exactly the frame, %d", tc.name, len(r.buf), len(tc.frame))
		}
	}

	// A stream of large frames keeps the grown buffer; once shrinkAfter
	// small frames have followed the last large one, it shrinks back.
	big := AppendBulk(nil, make([]byte, 3<<20))
	var small []byte
	for range shrinkAfter + 1 {
		small = append(small, "+OK\r\n"...)
	}
	r := NewReader(io.MultiReader(bytes.NewReader(big), bytes.NewReader(big), &oneFrameReader{small}))
	for i := range 2 {
		if v, err := r.Next(); err != nil || v.Len() != 3<<20 {
			t.Fatalf("big %d: %d, %v", i, v.Len(), err)
		}
		if i == 0 && len(r.buf) <= shrinkAbove {
			t.Fatalf("buffer %d: the large frame did not grow it", len(r.buf))
		}
	}
	for i := range shrinkAfter + 1 {
		if v, err := r.Next(); err != nil || v.Text() != "OK" {
			t.Fatalf("after big %d: %s, %v", i, dump(v), err)
		}
	}
	if len(r.buf) != DefaultBufferSize {
		t.Fatalf("buffer %d after %d small frames, want %d", len(r.buf), shrinkAfter+1, DefaultBufferSize)
	}
}

// oneFrameReader hands out one "+OK\r\n" per Read, so every frame is read
// into an empty buffer.
type oneFrameReader struct{ b []byte }

func (o *oneFrameReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, o.b[:5])
	o.b = o.b[5:]
	return n, nil
}

// TestReaderManySmallFrames: a long pipelined stream of small replies
// decodes in order through a small buffer.
func TestReaderManySmallFrames(t *testing.T) {
	var b []byte
	for i := range 5000 {
		b = AppendBulkString(b, strconv.Itoa(i))
	}
	for _, d := range deliveries {
		r := NewReaderLimits(d.wrap(bytes.NewReader(b)), Limits{}, 64)
		for i := range 5000 {
			v, err := r.Next()
			if err != nil || v.Text() != strconv.Itoa(i) {
				t.Fatalf("%s: value %d = %s, %v", d.name, i, dump(v), err)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("%s: end %v", d.name, err)
		}
	}
}

// TestReaderLongLineTrickle: a long line arriving a byte at a time is
// searched for its end once, not once per byte. (The fast path for simple
// frames used to search the whole partial line again after every read:
// quadratic, minutes for a 1 MiB line.) Nothing counts the bytes searched,
// so time tells: 4 MiB take about a second under -race when linear, and
// the quadratic search of 8 Ti bytes takes many minutes. The bound sits far
// from both: a loaded machine does not reach it, the regression does.
func TestReaderLongLineTrickle(t *testing.T) {
	const n = 4 << 20
	in := "+" + strings.Repeat("a", n) + "\r\n:1\r\n"
	start := time.Now()
	r := NewReaderLimits(iotest.OneByteReader(strings.NewReader(in)), Limits{MaxLine: 2 * n}, 0)
	if v, err := r.Next(); err != nil || v.Len() != n {
		t.Fatalf("line: %d bytes, %v", v.Len(), err)
	}
	if v, err := r.Next(); err != nil || v.Int != 1 {
		t.Fatalf("after the line: %s, %v", dump(v), err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("took %v", d)
	}
}

// stepReader returns its steps in order: a string is data, an error is
// returned as is.
type stepReader struct{ steps []any }

func (r *stepReader) Read(p []byte) (int, error) {
	if len(r.steps) == 0 {
		return 0, io.EOF
	}
	step := r.steps[0]
	r.steps = r.steps[1:]
	if err, ok := step.(error); ok {
		return 0, err
	}
	n := copy(p, step.(string))
	if rest := step.(string)[n:]; rest != "" {
		r.steps = append([]any{rest}, r.steps...)
	}
	return n, nil
}

// TestReaderDeadlineResumes: a read deadline interrupts Next without
// breaking the stream; the next call resumes the frame where it stopped.
func TestReaderDeadlineResumes(t *testing.T) {
	deadline := fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	r := NewReaderLimits(&stepReader{steps: []any{
		deadline, "+O", deadline, "K\r\n$5\r\nhe", deadline, "llo\r\n*2\r\n:1", deadline, "\r\n:2\r\n",
	}}, Limits{}, 8)
	var got []Value
	for len(got) < 3 {
		v, err := r.Next()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if r.Err() != nil {
				t.Fatalf("deadline made sticky: %v", r.Err())
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.Clone())
	}
	want := []Value{simple("OK"), bulk("hello"), array(integer(1), integer(2))}
	for i := range want {
		checkDecoded(t, "", got[i], want[i])
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}
