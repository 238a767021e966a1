package resp

import (
	"bytes"
	"testing"
)

// benchDecode decodes frame over and over from a Reader over a stream that
// repeats it, as a busy connection delivers replies.
func benchDecode(b *testing.B, frame []byte) {
	r := NewReader(&replayReader{data: frame})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeOK(b *testing.B)      { benchDecode(b, []byte("+OK\r\n")) }
func BenchmarkDecodeInteger(b *testing.B) { benchDecode(b, []byte(":1234567\r\n")) }
func BenchmarkDecodeBulk64(b *testing.B) {
	benchDecode(b, AppendBulk(nil, bytes.Repeat([]byte("v"), 64)))
}
func BenchmarkDecodeArray100x64(b *testing.B) { benchDecode(b, bulks64(100)) }
func BenchmarkDecodeMap10(b *testing.B)       { benchDecode(b, map10()) }
func BenchmarkDecodeBulk1MiB(b *testing.B) {
	benchDecode(b, AppendBulk(nil, bytes.Repeat([]byte("v"), 1<<20)))
}

// BenchmarkParseArray100x64 is the array decode without the Reader: the
// scan and build passes alone, with Parse's allocation of the values.
func BenchmarkParseArray100x64(b *testing.B) {
	frame := bulks64(100)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(frame, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeEVALSHA(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendCommand(buf[:0], "EVALSHA", testSHA, "2", "key1", "key2", "arg1", "arg2")
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkEncodeSET64(b *testing.B) {
	buf := make([]byte, 0, 256)
	key, val := []byte("key:000001"), bytes.Repeat([]byte("v"), 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendCommandBytes(buf[:0], []byte("SET"), key, val)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkArenaRetain100(b *testing.B) {
	v, _, err := Parse(bulks64(100), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	var a Arena
	b.ReportAllocs()
	for b.Loop() {
		a.Reset()
		a.Retain(v)
	}
}

// BenchmarkSkipArray100x64 is the array of BenchmarkDecodeArray100x64
// over MaxAggregate: skipped, not built, each time.
func BenchmarkSkipArray100x64(b *testing.B) {
	frame := bulks64(100)
	r := NewReaderLimits(&replayReader{data: frame}, Limits{MaxAggregate: 10}, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if v, err := r.Next(); err != nil || v.Type != TooLarge {
			b.Fatal(v.Type, err)
		}
	}
}

// repeatReader returns its chunk again and again.
type repeatReader struct{ chunk []byte }

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for len(p)-n >= len(r.chunk) {
		n += copy(p[n:], r.chunk)
	}
	return n, nil
}

// BenchmarkScalarsPong: Reader.Scalars keeping PING's replies in an
// Arena, as a connection fills a batch's slots (issue 24: PING d100);
// one op is one reply.
func BenchmarkScalarsPong(b *testing.B) {
	r := NewReader(&repeatReader{chunk: bytes.Repeat([]byte("+PONG\r\n"), 100)})
	var a Arena
	slots := make([]Value, 100)
	b.ReportAllocs()
	for n := 0; b.Loop(); {
		if n == 0 {
			a.Reset()
			n = 100
		}
		k := r.Scalars(slots[:n], &a)
		if k == 0 {
			if _, err := r.Next(); err != nil { // refill
				b.Fatal(err)
			}
			k = 1
		}
		n -= k
		b.SetBytes(0)
	}
}
