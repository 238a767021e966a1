package emq

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// IDGenerator mints branded ids in one namespace for one node. The ids one
// generator mints are strictly increasing, as strings and as numbers, even
// when the wall clock steps backwards. It is safe for concurrent use; the
// hot path is one compare-and-swap on a packed state, with no lock.
//
// Up to 4096 ids are minted per millisecond. When a millisecond's sequence
// runs out, Next waits for the clock's next millisecond. When the clock has
// gone back, the generator keeps the last millisecond it used and goes on
// counting from there, carrying into the following millisecond when that
// sequence runs out, until the clock catches up.
//
// Two generators with the same namespace and node, in one process or in
// two, can mint the same id: within a process share one generator (the
// queues [Open] makes share [DefaultIDGenerator]), and give every process
// minting into one queue its own node.
type IDGenerator struct {
	// Set at construction, read only after.
	ns   string
	node uint64       // node << nodeShift
	now  func() int64 // Unix ms; the wall clock unless a test injects one

	_ [64]byte // keep the written state off the read-only fields' cache line

	// state is the last minted (elapsedMs << SeqBits | seq).
	state atomic.Uint64
}

// NewIDGenerator returns a generator of ids in namespace ns (3 bytes of
// [A-Z], [JobNamespace] for jobs) for node (0 to [MaxNode]; see
// [DefaultNode]). The error matches [ErrInvalidID].
func NewIDGenerator(ns string, node uint16) (*IDGenerator, error) {
	if p := nsProblem(ns); p != "" {
		return nil, &IDError{ID: ns, Reason: p}
	}
	if node > MaxNode {
		return nil, &IDError{ID: ns, Reason: fmt.Sprintf("node %d above %d", node, MaxNode)}
	}
	return &IDGenerator{ns: ns, node: uint64(node) << nodeShift, now: wallMillis}, nil
}

func wallMillis() int64 { return time.Now().UnixMilli() }

// Namespace returns the namespace of the ids g mints.
func (g *IDGenerator) Namespace() string { return g.ns }

// Node returns the node g stamps into every snowflake.
func (g *IDGenerator) Node() uint16 { return uint16(g.node >> nodeShift) }

// Next mints the next id. It waits when this millisecond's 4096 ids are
// spent, and panics only if the clock is past the 41-bit range (after 2093).
func (g *IDGenerator) Next() string {
	var buf [IDLen]byte
	return string(g.AppendNext(buf[:0]))
}

// AppendNext mints the next id, appends it to dst and returns the extended
// buffer. It does not allocate when dst has room.
func (g *IDGenerator) AppendNext(dst []byte) []byte {
	return appendID(dst, g.ns, g.NextSnowflake())
}

// NextSnowflake mints the next id and returns its snowflake; format it with
// [FormatID] in g's namespace.
func (g *IDGenerator) NextSnowflake() uint64 {
	x, _ := g.reserve(1)
	return g.snowflake(x)
}

// appendRun mints up to n ids (n >= 1) that follow one another in one
// millisecond's sequence, with one clock read and one compare-and-swap
// for the lot, appends them to dst and returns the extended buffer and how
// many it minted (1 to n: fewer when the millisecond's sequence ends
// first). The ids are those n calls of NextSnowflake would have minted at
// that clock reading.
func (g *IDGenerator) appendRun(dst []byte, n int) ([]byte, int) {
	first, k := g.reserve(n)
	for x := first; x < first+uint64(k); x++ {
		dst = appendID(dst, g.ns, g.snowflake(x))
	}
	return dst, k
}

// reserve takes the next k states (1 <= k <= n), elapsedMs << SeqBits |
// seq, all in one millisecond, and returns the first: one clock read and
// one compare-and-swap.
func (g *IDGenerator) reserve(n int) (first uint64, k int) {
	for {
		// Load the state before reading the clock: the clock read then comes
		// after whichever read minted the state, so a clock that has not
		// stepped back never reads behind the state's millisecond.
		old := g.state.Load()
		last := old >> SeqBits
		now := g.elapsed()
		switch {
		case now > last:
			first = now << SeqBits // a fresh millisecond, sequence 0
		case old&MaxSeq < MaxSeq || now < last:
			// Same millisecond, or the clock is behind: count on; a spent
			// sequence carries into the next millisecond (borrowing).
			first = old + 1
		default:
			g.waitPast(last) // this millisecond is spent
			continue
		}
		run := min(uint64(n), MaxSeq-first&MaxSeq+1) // the rest of first's millisecond
		end := first + run - 1
		if end>>SeqBits > MaxElapsedMs {
			panic("emq: IDGenerator: clock past the 41-bit snowflake range")
		}
		if g.state.CompareAndSwap(old, end) {
			return first, int(run)
		}
	}
}

// snowflake is the snowflake of state x (elapsedMs << SeqBits | seq).
func (g *IDGenerator) snowflake(x uint64) uint64 {
	return x>>SeqBits<<timeShift | g.node | x&MaxSeq
}

// elapsed returns milliseconds since the epoch, 0 for a clock before it.
func (g *IDGenerator) elapsed() uint64 {
	ms := g.now() - EpochMillis
	if ms < 0 {
		return 0
	}
	return uint64(ms)
}

// waitPast waits while the clock reads millisecond ms. The wait is under a
// millisecond, shorter than a timer's slack, so it yields rather than
// sleeps; only a clock that seems stuck is waited on with short sleeps. It
// returns as soon as the clock reads any other millisecond, later or
// (stepping back) earlier.
func (g *IDGenerator) waitPast(ms uint64) {
	for i := 0; g.elapsed() == ms; i++ {
		if i < 1<<12 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// DefaultIDGenerator returns the process's generator of job ids: one
// [IDGenerator] in [JobNamespace] on [DefaultNode], made on first use and
// shared by every [Queue] that [Open] makes without [WithIDGenerator].
// Sharing it is what keeps the ids of one process unique and strictly
// increasing: two generators on one node would mint the same ids.
func DefaultIDGenerator() *IDGenerator { return defaultIDs() }

var defaultIDs = sync.OnceValue(func() *IDGenerator {
	g, err := NewIDGenerator(JobNamespace, DefaultNode())
	if err != nil {
		panic(err) // unreachable: JOB is a namespace and DefaultNode <= MaxNode
	}
	return g
})

// DefaultNode derives a node id from a hash (FNV-1a) of the host name and
// the process id. It is stable for the life of a process and differs
// between processes more often than not, but with 1024 nodes two processes
// collide with about even odds once some 38 of them mint together. Where
// processes mint into the same queues, assign nodes explicitly.
func DefaultNode() uint16 { return defaultNode() }

var defaultNode = sync.OnceValue(func() uint16 {
	host, _ := os.Hostname()
	h := fnv.New32a()
	h.Write([]byte(host))
	var pid [4]byte
	binary.BigEndian.PutUint32(pid[:], uint32(os.Getpid()))
	h.Write(pid[:])
	s := h.Sum32()
	return uint16((s ^ s>>10 ^ s>>20 ^ s>>30) & MaxNode)
})
