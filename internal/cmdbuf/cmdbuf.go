// Package cmdbuf pools the buffers that typed command helpers (packages
// kv and pubsub) encode one command into. A connection copies a
// command's bytes when it is sent, so a buffer goes back to the pool as
// soon as the call that sent it returns; in steady state encoding a
// command allocates nothing.
package cmdbuf

import "sync"

// Buf is one pooled buffer.
type Buf struct {
	B []byte
}

// maxKept is the largest buffer put back in the pool: a huge command
// does not keep its memory for good.
const maxKept = 64 << 10

var pool = sync.Pool{New: func() any { return &Buf{B: make([]byte, 0, 256)} }}

// Get returns an empty buffer from the pool.
func Get() *Buf {
	b := pool.Get().(*Buf)
	b.B = b.B[:0]
	return b
}

// Put returns b to the pool, keeping the memory it grew to (up to
// 64 KiB). used is the slice the buffer was last encoded into, which
// may have grown past b.B.
func Put(b *Buf, used []byte) {
	if cap(used) > cap(b.B) {
		b.B = used
	}
	if cap(b.B) > maxKept {
		b.B = make([]byte, 0, 256)
	}
	pool.Put(b)
}
