package cache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/echomq/echomq-go/resp"
)

// The store: shards of entries, each shard a map plus a SIEVE queue
// (Zhang et al., NSDI 2024) under a byte budget of its own.
//
// SIEVE keeps entries in insertion order with one "visited" bit each; a
// hit only sets the bit, so hits take the shard's read lock and never
// move anything. Eviction moves a hand from the oldest entry towards the
// newest, clearing visited bits and evicting the first entry it finds
// unvisited. On the skewed (Zipf) read patterns a cache sees, it keeps
// the hot set as well as LRU or better, and unlike LRU a hit writes
// nothing shared but one bit, once.
//
// An entry belongs to the shard of its Redis key, so every cached reply
// of one key (GET k, HGET k f, STRLEN k …) is found in one place when the
// server invalidates k. Each key also has a generation, bumped by every
// invalidation of it, and a count of the reads in flight for it: a read
// records the generation (and the store's epoch, bumped by every flush)
// before it is sent, and its reply is kept only if neither moved by the
// time it arrives.

// entryOverhead approximates the bytes an entry costs beyond its lookup
// key and value: the entry struct, its map slots and its key state.
const entryOverhead = 192

// nowNano is the monotonic clock the store's expiries use.
var clockBase = time.Now()

func nowNano() int64 { return int64(time.Since(clockBase)) }

// entry is one cached reply.
type entry struct {
	id      string // lookup key: command name and arguments (lookupKey)
	ks      *keyState
	val     resp.Value // owned; never modified once stored
	ttlEnd  int64      // the caller's TTL ends (checked on the coarse clock)
	hardEnd int64      // the key expires on the server (nowNano; 0: never)
	epoch   uint64     // the store's epoch when it was read
	size    int64
	visited atomic.Bool
	// SIEVE queue: prev is towards the newest (head), next towards the
	// oldest (tail).
	prev, next *entry
}

// keyState is one Redis key with cached replies or reads in flight.
type keyState struct {
	key     string
	gen     uint64 // bumped by each invalidation of key
	pending int    // reads in flight
	entries []*entry
}

// shard is one part of the store, guarded by mu.
type shard struct {
	mu      sync.RWMutex
	entries map[string]*entry
	keys    map[string]*keyState
	head    *entry // newest
	tail    *entry // oldest
	hand    *entry // SIEVE's hand: the next candidate for eviction
	bytes   int64
	max     int64

	hits      atomic.Uint64
	misses    atomic.Uint64
	evictions uint64 // under mu
	inval     uint64 // entries dropped by invalidations, under mu
	discarded uint64 // replies not kept: raced with an invalidation
	tooLarge  uint64
	_         [64]byte
}

// store is the whole cache's memory.
type store struct {
	shards   []shard
	mask     uint64
	seed     maphash.Seed
	epoch    atomic.Uint64
	maxEntry int64
	flushes  atomic.Uint64
	keysInv  atomic.Uint64 // keys named by invalidation messages
	// coarse is nowNano, refreshed every coarseTick by the Cache's
	// clock goroutine: the caller's TTL is a freshness budget, not a
	// correctness bound (the server invalidates what changes), so it is
	// checked against this clock, which costs a hit one atomic load
	// instead of a clock read. A key's expiry on the server is checked
	// against the real clock.
	coarse atomic.Int64
}

// coarseTick is how often the coarse clock moves.
const coarseTick = 5 * time.Millisecond

func newStore(maxBytes, maxEntry int64, nshards int) *store {
	n := 1
	for n < nshards {
		n <<= 1
	}
	st := &store{shards: make([]shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed(), maxEntry: maxEntry}
	st.coarse.Store(nowNano())
	per := max(maxBytes/int64(n), 1)
	for i := range st.shards {
		sh := &st.shards[i]
		sh.entries = make(map[string]*entry)
		sh.keys = make(map[string]*keyState)
		sh.max = per
	}
	return st
}

func (st *store) shardOf(key string) *shard {
	return &st.shards[maphash.String(st.seed, key)&st.mask]
}

// lookup returns the live entry for id in sh, counting a hit or a miss.
// The entry's value is immutable and may be read after the lock is
// released. The caller holds no lock.
func (st *store) lookup(sh *shard, id []byte, sess *session) *entry {
	sh.mu.RLock()
	e := sh.entries[string(id)]
	if e != nil && (e.epoch != st.epoch.Load() || st.coarse.Load() >= e.ttlEnd ||
		e.hardEnd != 0 && nowNano() >= e.hardEnd || !sess.live()) {
		e = nil
	}
	if e != nil && !e.visited.Load() {
		e.visited.Store(true)
	}
	sh.mu.RUnlock()
	if e == nil {
		sh.misses.Add(1)
		return nil
	}
	sh.hits.Add(1)
	return e
}

// begin notes a read of key in flight and returns its generation and the
// store's epoch, which the reply must find unchanged to be kept.
func (st *store) begin(sh *shard, key string) (ks *keyState, gen, epoch uint64) {
	sh.mu.Lock()
	epoch = st.epoch.Load()
	ks = sh.keys[key]
	if ks == nil {
		ks = &keyState{key: key}
		sh.keys[key] = ks
	}
	ks.pending++
	gen = ks.gen
	sh.mu.Unlock()
	return ks, gen, epoch
}

// end finishes a read begun with begin. When keep is set and nothing
// invalidated the key (nor flushed the store, nor lost the session) since
// begin, the reply val is stored under id until ttlEnd (the caller's
// TTL) or hardEnd (the key's expiry on the server; 0: none); otherwise it is
// discarded. It reports whether the reply was stored.
func (st *store) end(sh *shard, ks *keyState, gen, epoch uint64, sess *session, keep bool, id string, val resp.Value, ttlEnd, hardEnd int64) bool {
	size := int64(len(id)) + valueSize(val) + entryOverhead
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// The read's pending mark is held until the end, so that removing a
	// reply it replaces does not drop ks from the shard's keys while the
	// new reply joins it.
	stored := false
	switch {
	case !keep:
	case ks.gen != gen || st.epoch.Load() != epoch || !sess.usable():
		sh.discarded++
	case size > st.maxEntry || size > sh.max:
		sh.tooLarge++
	default:
		if old := sh.entries[id]; old != nil {
			sh.remove(old)
		}
		e := &entry{id: id, ks: ks, val: val, ttlEnd: ttlEnd, hardEnd: hardEnd, epoch: epoch, size: size}
		sh.entries[id] = e
		ks.entries = append(ks.entries, e)
		sh.pushHead(e)
		sh.bytes += size
		for sh.bytes > sh.max {
			sh.evict()
		}
		stored = true
	}
	ks.pending--
	if ks.pending == 0 && len(ks.entries) == 0 && sh.keys[ks.key] == ks {
		delete(sh.keys, ks.key)
	}
	return stored
}

// invalidate drops every reply cached for key and fails the reads of it
// in flight (they will not be kept). The key is counted once applied, so
// that whoever sees the count sees its effect.
func (st *store) invalidate(key []byte) {
	sh := st.shardOf(unsafe.String(unsafe.SliceData(key), len(key)))
	sh.mu.Lock()
	ks := sh.keys[string(key)]
	if ks != nil {
		ks.gen++
		for len(ks.entries) > 0 {
			sh.inval++
			sh.remove(ks.entries[len(ks.entries)-1])
		}
		if ks.pending == 0 {
			delete(sh.keys, ks.key)
		}
	}
	sh.mu.Unlock()
	st.keysInv.Add(1)
}

// flushAll empties the store: the epoch moves first, so from that moment
// no entry is served and no read in flight is kept.
func (st *store) flushAll() {
	st.epoch.Add(1)
	st.flushes.Add(1)
	for i := range st.shards {
		sh := &st.shards[i]
		sh.mu.Lock()
		for _, ks := range sh.keys {
			ks.gen++
			ks.entries = nil
			if ks.pending == 0 {
				delete(sh.keys, ks.key)
			}
		}
		clear(sh.entries)
		sh.head, sh.tail, sh.hand, sh.bytes = nil, nil, nil, 0
		sh.mu.Unlock()
	}
}

// pushHead puts e at the head (newest end) of the queue.
func (sh *shard) pushHead(e *entry) {
	e.prev, e.next = nil, sh.head
	if sh.head != nil {
		sh.head.prev = e
	}
	sh.head = e
	if sh.tail == nil {
		sh.tail = e
	}
}

// remove takes e out of the shard: map, queue, its key's list, bytes.
func (sh *shard) remove(e *entry) {
	if sh.hand == e {
		sh.hand = e.prev
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sh.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sh.tail = e.prev
	}
	e.prev, e.next = nil, nil
	if sh.entries[e.id] == e {
		delete(sh.entries, e.id)
	}
	list := e.ks.entries
	for i, x := range list {
		if x == e {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			e.ks.entries = list[:len(list)-1]
			break
		}
	}
	if len(e.ks.entries) == 0 && e.ks.pending == 0 && sh.keys[e.ks.key] == e.ks {
		delete(sh.keys, e.ks.key)
	}
	sh.bytes -= e.size
}

// evict removes one entry by SIEVE: from the hand (or the tail) towards
// the head, clearing visited bits, the first unvisited entry goes.
func (sh *shard) evict() {
	e := sh.hand
	if e == nil {
		e = sh.tail
	}
	for e != nil && e.visited.Load() {
		e.visited.Store(false)
		e = e.prev
		if e == nil {
			e = sh.tail
		}
	}
	if e == nil {
		return
	}
	sh.hand = e.prev
	sh.remove(e)
	sh.evictions++
}

// valueSize approximates the memory of an owned value.
func valueSize(v resp.Value) int64 {
	n := int64(len(v.Str))
	for _, x := range v.Elems {
		n += int64(unsafe.Sizeof(x)) + valueSize(x)
	}
	return n
}
