package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// enqueueScript is the PROTOCOL.md "enqueue" transition, byte for byte the
// contract: KEYS[1] row, KEYS[2] pending; ARGV[1] id, ARGV[2] payload.
const enqueueScript = `if string.sub(ARGV[1],1,3) ~= 'JOB' then return redis.error_reply('EMQKIND job id must be JOB-namespaced') end if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end redis.call('HSET', KEYS[1], 'state','pending','attempts','0','payload',ARGV[2]) redis.call('ZADD', KEYS[2], 0, ARGV[1]) return 1`

// Keys every client uses, so the server does the same work whoever asks.
const (
	setKey      = "key:__rand_int__" // redis-benchmark -t set without -r uses this literal key
	jobPrefix   = "emq:{bench}:job:"
	pendingKey  = "emq:{bench}:pending"
	idLen       = 14 // "JOB" + 11 base62 digits
	jobKeyLen   = len(jobPrefix) + idLen
	base62Chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// epoch2024 is the PROTOCOL.md snowflake epoch, 2024-01-01T00:00:00Z in ms.
const epoch2024 = 1704067200000

// scriptSHA is the SHA1 of enqueueScript, computed client-side.
var scriptSHA = func() string {
	h := sha1.Sum([]byte(enqueueScript))
	return hex.EncodeToString(h[:])
}()

// Workload names accepted by -workload.
const (
	wPing    = "ping"
	wSet     = "set"
	wEnqueue = "enqueue"
	wGet     = "get"
	wPubsub  = "pubsub"
)

// workload is one benchmark's fixed shape plus its shared per-op state: the
// id counter and the reply verifier. Every adapter reads it the same way.
type workload struct {
	name       string
	depth      int // commands per batch from one goroutine (goroutines == 1)
	goroutines int // > 1: G goroutines, one command at a time each
	payload    string
	sha        string

	idBase uint64        // first id's counter value (time-seeded)
	next   atomic.Uint64 // ops claimed so far, in goroutine mode

	errs     atomic.Int64
	errOnce  sync.Once
	firstErr string

	bus bus // pubsub: what the subscriber received
}

func newWorkload(name string, depth, goroutines, size int) (*workload, error) {
	switch name {
	case wPing, wSet, wEnqueue, wGet, wPubsub:
	default:
		return nil, fmt.Errorf("unknown workload %q (want ping|set|enqueue|get|pubsub)", name)
	}
	if depth < 1 || goroutines < 1 || size < 0 {
		return nil, fmt.Errorf("need depth >= 1, goroutines >= 1, size >= 0")
	}
	if depth > 1 && goroutines > 1 {
		return nil, fmt.Errorf("choose -depth N or -goroutines G, not both")
	}
	ms := uint64(time.Now().UnixMilli() - epoch2024)
	return &workload{
		name:       name,
		depth:      depth,
		goroutines: goroutines,
		payload:    strings.Repeat("x", size),
		sha:        scriptSHA,
		idBase:     ms << 22, // snowflake layout: ms | node 0 | sequence
		bus:        bus{reached: make(chan struct{}, 1)},
	}, nil
}

// appendJobKey appends the row key "emq:{bench}:job:JOBxxxxxxxxxxx" for op
// seq to dst. The id is the key's last idLen bytes. This is the per-op id
// generation every client runs inside the timed loop.
func (w *workload) appendJobKey(dst []byte, seq uint64) []byte {
	dst = append(dst, jobPrefix...)
	dst = append(dst, "JOB"...)
	var digits [11]byte
	v := w.idBase + seq
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = base62Chars[v%62]
		v /= 62
	}
	return append(dst, digits[:]...)
}

// jobKey returns the row key for op seq and its id (a substring of the key),
// for clients whose API takes strings: one allocation per op.
func (w *workload) jobKey(seq uint64) (key, id string) {
	var buf [jobKeyLen]byte
	key = string(w.appendJobKey(buf[:0], seq))
	return key, key[len(jobPrefix):]
}

// fail records a wrong reply. The run goes on; main reports the count and
// exits non-zero.
func (w *workload) fail(seq uint64, got any) {
	w.errs.Add(1)
	w.errOnce.Do(func() {
		w.firstErr = fmt.Sprintf("op %d (%s): unexpected reply %#v", seq, w.name, got)
	})
}

// want is the expected reply text for the status-reply workloads.
func (w *workload) want() string {
	if w.name == wPing {
		return "PONG"
	}
	return "OK"
}

// advance moves the id counter past n ops, so the next run (timed after
// warmup) mints fresh ids and every enqueue creates a new row.
func (w *workload) advance(n int) { w.idBase += uint64(n) }
