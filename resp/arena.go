package resp

// Arena owns copies of Values, so that a reply can outlive the Reader's
// buffer. Memory is reused after Reset: an Arena that is reset and reused
// retains replies with no allocation in steady state.
//
// Growth never moves what was retained before: a Value returned by Retain
// stays valid until the next Reset.
type Arena struct {
	bytes []byte
	vals  []Value
}

// Reset forgets every retained Value, making its memory reusable. Values
// retained before are invalid after Reset.
func (a *Arena) Reset() {
	a.bytes = a.bytes[:0]
	a.vals = a.vals[:0]
}

// Retain returns a deep copy of v whose bytes and elements live in the
// Arena.
func (a *Arena) Retain(v Value) Value {
	if v.Elems == nil && v.Attr == nil {
		// A scalar: copy its bytes, if any.
		v.Str = a.keep(v.Str)
		return v
	}
	nb, nv := footprint(v)
	if len(a.bytes)+nb > cap(a.bytes) {
		a.bytes = make([]byte, 0, max(2*cap(a.bytes), nb, 256))
	}
	if len(a.vals)+nv > cap(a.vals) {
		a.vals = make([]Value, 0, max(2*cap(a.vals), nv, 8))
	}
	return a.copy(v)
}

// keep returns a copy of b in the Arena (nil for nil), growing it when
// b does not fit: a scalar's bytes, for Retain and Reader.Scalars.
func (a *Arena) keep(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(a.bytes)+len(b) > cap(a.bytes) {
		a.bytes = make([]byte, 0, max(2*cap(a.bytes), len(b), 256))
	}
	off := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[off:len(a.bytes):len(a.bytes)]
}

// footprint counts the bytes and the element values v holds.
func footprint(v Value) (nb, nv int) {
	nb = len(v.Str)
	nv = len(v.Elems)
	for _, e := range v.Elems {
		b, n := footprint(e)
		nb, nv = nb+b, nv+n
	}
	if v.Attr != nil {
		b, n := footprint(*v.Attr)
		nb, nv = nb+b, nv+n+1
	}
	return nb, nv
}

func (a *Arena) copy(v Value) Value {
	if v.Str != nil {
		off := len(a.bytes)
		a.bytes = append(a.bytes, v.Str...)
		v.Str = a.bytes[off:len(a.bytes):len(a.bytes)]
	}
	if v.Elems != nil {
		off := len(a.vals)
		a.vals = append(a.vals, v.Elems...)
		elems := a.vals[off:len(a.vals):len(a.vals)]
		for i := range elems {
			elems[i] = a.copy(elems[i])
		}
		v.Elems = elems
	}
	if v.Attr != nil {
		a.vals = append(a.vals, Value{})
		p := &a.vals[len(a.vals)-1]
		*p = a.copy(*v.Attr)
		v.Attr = p
	}
	return v
}
