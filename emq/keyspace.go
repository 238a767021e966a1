package emq

import (
	"errors"
	"fmt"

	keyslot "github.com/echomq/echomq-go/internal/slot"
)

// The fence: the key every speaker reads at connect, and the wire it holds.
const (
	// VersionKey is the fence key. Its hashtag is "emq", so it lives in a
	// slot of its own, apart from every queue.
	VersionKey = "{emq}:version"
	// Version is the wire this package speaks.
	Version = "echomq:6.0.0"
)

// MaxQueueLen is the longest queue name, in bytes.
const MaxQueueLen = 256

// Key types: the suffixes [QueueKey] appends to a queue's base.
const (
	TypePending = "pending" // zset of waiting ids, score 0
	TypeActive  = "active"  // zset of claimed ids, score = lease deadline (ms)
	TypeDelayed = "delayed" // zset of scheduled ids, score = due time (ms)
	TypeDead    = "dead"    // zset of exhausted ids, score = time of death (ms)
	TypeMeta    = "meta"    // hash of queue flags: paused = 1
	TypeJob     = "job:"    // prefix of a job row: emq:{q}:job:<id>
)

// ErrInvalidQueue is the error class of a queue name that may not become a
// key. Every error [ValidQueue] returns is a *[QueueError] that matches it
// with errors.Is.
var ErrInvalidQueue = errors.New("emq: invalid queue name")

// QueueError says why a queue name was refused.
type QueueError struct {
	Queue  string // the name as given
	Reason string // what is wrong with it
}

// Error names the problem and quotes the queue, clipped if it is long.
func (e *QueueError) Error() string {
	return "emq: invalid queue name " + quoteClipped(e.Queue) + ": " + e.Reason
}

// Unwrap returns [ErrInvalidQueue].
func (e *QueueError) Unwrap() error { return ErrInvalidQueue }

// clipLen is how many bytes of a bad name or id an error message quotes.
const clipLen = 64

// quoteClipped quotes s with %q, keeping the first clipLen bytes of a long s
// and saying how long it was.
func quoteClipped(s string) string {
	if len(s) <= clipLen {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:clipLen], len(s))
}

// ValidQueue reports whether q may name a queue: 1 to [MaxQueueLen] bytes,
// with no '{', '}' or NUL. A brace would move the cluster hashtag off the
// queue name; NUL is refused by the protocol. The error is a *[QueueError]
// matching [ErrInvalidQueue]. ValidQueue does not allocate when q is valid.
func ValidQueue(q string) error {
	switch {
	case len(q) == 0:
		return &QueueError{Queue: q, Reason: "empty"}
	case len(q) > MaxQueueLen:
		return &QueueError{Queue: q, Reason: fmt.Sprintf("%d bytes, longer than %d", len(q), MaxQueueLen)}
	}
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '{', '}':
			return &QueueError{Queue: q, Reason: fmt.Sprintf("contains %q at byte %d", q[i], i)}
		case 0:
			return &QueueError{Queue: q, Reason: fmt.Sprintf("contains NUL at byte %d", i)}
		}
	}
	return nil
}

// mustQueue panics with the validation error when q is not a valid queue.
func mustQueue(q string) {
	if err := ValidQueue(q); err != nil {
		panic(err)
	}
}

// QueueKey returns "emq:{" + q + "}:" + typ, the key of one of q's
// structures (typ is usually one of the Type constants).
//
// An invalid name never becomes a key: QueueKey panics if q fails
// [ValidQueue]. Check untrusted names first, or build a [Keys] with
// [NewKeys], which returns the error instead.
func QueueKey(q, typ string) string {
	mustQueue(q)
	return "emq:{" + q + "}:" + typ
}

// Base returns q's base "emq:{q}:", the declared root from which scripts
// derive row keys. It is never a key by itself. It panics if q is invalid,
// like [QueueKey].
func Base(q string) string { return QueueKey(q, "") }

// JobKey returns the key of a job row, "emq:{q}:job:" + id. It panics if q is
// invalid, like [QueueKey].
//
// The id is not checked here: an id cannot move a key off its queue's slot,
// because the hashtag is the first {...}, which is the queue's. Whether an id
// is well formed is the verbs' question, answered by [ValidID] before any
// key is built.
func JobKey(q, id string) string { return QueueKey(q, TypeJob) + id }

// AppendJobKey appends the key of a job row, "emq:{q}:job:" + id, to dst
// and returns the extended buffer. It does not allocate when dst has room.
// It panics if q is invalid, like [QueueKey]; on a hot path prefer
// [Keys.AppendJob], which validated the name once.
func AppendJobKey(dst []byte, q, id string) []byte {
	mustQueue(q)
	dst = append(dst, "emq:{"...)
	dst = append(dst, q...)
	dst = append(dst, "}:job:"...)
	return append(dst, id...)
}

// Keys holds every key of one queue, built once from a validated name.
// The zero Keys holds no queue; make one with [NewKeys]. A Keys is a value:
// copy it freely, share it between goroutines.
type Keys struct {
	Queue     string // the queue name
	Base      string // emq:{q}:   the declared root; never a key itself
	Pending   string // emq:{q}:pending
	Active    string // emq:{q}:active
	Delayed   string // emq:{q}:delayed
	Dead      string // emq:{q}:dead
	Meta      string // emq:{q}:meta
	JobPrefix string // emq:{q}:job:   a row key is JobPrefix + id
	Slot      uint16 // the cluster slot every key of the queue hashes to
}

// NewKeys validates q once and builds all of its keys. The error is a
// *[QueueError] matching [ErrInvalidQueue].
func NewKeys(q string) (Keys, error) {
	if err := ValidQueue(q); err != nil {
		return Keys{}, err
	}
	base := "emq:{" + q + "}:"
	return Keys{
		Queue:     q,
		Base:      base,
		Pending:   base + TypePending,
		Active:    base + TypeActive,
		Delayed:   base + TypeDelayed,
		Dead:      base + TypeDead,
		Meta:      base + TypeMeta,
		JobPrefix: base + TypeJob,
		Slot:      Slot(base),
	}, nil
}

// Job returns the key of the row of job id: k.JobPrefix + id. Like
// [JobKey], it does not check id.
func (k Keys) Job(id string) string { return k.JobPrefix + id }

// AppendJob appends the key of the row of job id to dst and returns the
// extended buffer. It does not allocate when dst has room.
func (k Keys) AppendJob(dst []byte, id string) []byte {
	return append(append(dst, k.JobPrefix...), id...)
}

// Hashtag returns the part of key a cluster hashes: the bytes inside the
// first '{' and the first '}' after it, when there is such a pair and the
// bytes between are not empty; otherwise the whole key. So "emq:{q}:pending"
// hashes "q", "foo{}{bar}" hashes all of itself (the first pair is empty),
// and "foo{{bar}}zap" hashes "{bar".
func Hashtag(key string) string { return keyslot.Hashtag(key) }

// SlotCount is the number of cluster hash slots.
const SlotCount = keyslot.Count

// Slot returns the cluster slot of key: CRC16-XMODEM of [Hashtag](key),
// mod [SlotCount]. Slot("123456789") == 12739.
func Slot(key string) uint16 { return keyslot.Of(key) }
