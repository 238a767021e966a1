package resp

import (
	"bytes"
	"strconv"
	"testing"
)

// arenaStream is a stream whose replies are all different, so that a
// retained value views nothing the Reader still holds.
func arenaStream(n int) ([]byte, []Value) {
	var b []byte
	var want []Value
	for i := range n {
		s := strconv.Itoa(i)
		v := array(bulk("key:"+s), integer(int64(i)),
			mapOf(simple("f"+s), withAttr(bulk(s+s), attrOf(simple("a"), integer(int64(i))))),
			bulk(string(bytes.Repeat([]byte(s), 20))))
		b = AppendValue(b, v)
		want = append(want, v)
	}
	return b, want
}

// TestArenaRetainSurvivesReader: values retained in an Arena stay intact
// while the Reader reuses its buffer and value arena for later replies.
func TestArenaRetainSurvivesReader(t *testing.T) {
	stream, want := arenaStream(200)
	r := NewReaderLimits(bytes.NewReader(stream), Limits{}, 64)
	var a Arena
	var kept []Value
	for i := range 3 {
		v, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, a.Retain(v))
		checkDecoded(t, "", kept[i], want[i])
	}
	for i := 3; i < len(want); i++ { // overwrite the Reader's memory
		v, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		checkDecoded(t, "", v, want[i])
	}
	for i, v := range kept {
		checkDecoded(t, "retained", v, want[i])
	}
}

// TestArenaGrowthKeepsRetained: growing the Arena never moves what it
// retained before.
func TestArenaGrowthKeepsRetained(t *testing.T) {
	var a Arena
	small := a.Retain(array(bulk("a"), withAttr(bulk("b"), attrOf(simple("k"), integer(1)))))
	for i := range 50 {
		a.Retain(array(bulk(string(make([]byte, 1000*i))), array(integer(1), integer(2))))
	}
	checkDecoded(t, "", small, array(bulk("a"), withAttr(bulk("b"), attrOf(simple("k"), integer(1)))))
}

// TestArenaResetReusesMemory: after Reset the same memory serves the next
// Retain; nothing is allocated.
func TestArenaResetReusesMemory(t *testing.T) {
	_, want := arenaStream(1)
	v := want[0]
	var a Arena
	a.Retain(v)
	bytesCap, valsCap := cap(a.bytes), cap(a.vals)
	bytesPtr, valsPtr := &a.bytes[:1][0], &a.vals[:1][0]
	for range 10 {
		a.Reset()
		got := a.Retain(v)
		checkDecoded(t, "", got, v)
	}
	if cap(a.bytes) != bytesCap || cap(a.vals) != valsCap || &a.bytes[:1][0] != bytesPtr || &a.vals[:1][0] != valsPtr {
		t.Fatal("Reset did not reuse the arena's memory")
	}
	if n := testing.AllocsPerRun(100, func() { a.Reset(); a.Retain(v) }); n != 0 {
		t.Fatalf("Retain after Reset: %v allocs", n)
	}
}

// TestArenaRetainScalars: strings keep their bytes, scalars their fields;
// nothing is shared with the source.
func TestArenaRetainScalars(t *testing.T) {
	var a Arena
	for _, tc := range validWire {
		src := []byte(tc.wire)
		v, _, err := Parse(src, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		kept := a.Retain(v)
		for i := range src {
			src[i] = '#'
		}
		checkDecoded(t, tc.wire, kept, tc.want)
	}
}

// TestCloneIndependent: a Clone neither changes with its source nor
// changes it.
func TestCloneIndependent(t *testing.T) {
	stream, want := arenaStream(5)
	r := NewReader(bytes.NewReader(stream))
	v, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	c := v.Clone()
	c.Elems[0].Str[0] = 'X'
	c.Elems[1].Int = 99
	c.Elems[2].Elems[1].Attr.Elems[1].Int = 99
	checkDecoded(t, "source after clone mutated", v, want[0])

	c = v.Clone()
	for i := 1; i < len(want); i++ {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	checkDecoded(t, "clone after reader moved on", c, want[0])

	// Clones of one value are independent of each other.
	c1, c2 := c.Clone(), c.Clone()
	c1.Elems[3].Str[0] = 'Z'
	checkDecoded(t, "second clone", c2, want[0])
	if &c1.Elems[0] == &c2.Elems[0] {
		t.Fatal("clones share elements")
	}
}
