package emq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

var scriptUniqueEnqueue = dispatch.NewScript("unique_enqueue", source("unique_enqueue"))

// TypeUnique is the prefix of a unique key: emq:{q}:unique:<hash>, a
// string holding the id of the job that owns it (see [Queue.EnqueueUnique]).
const TypeUnique = "unique:"

// UniqueMode says what [Queue.EnqueueUnique] does when the key is held.
type UniqueMode uint8

// The modes of a unique enqueue.
const (
	// UniqueKeep keeps the owner and writes nothing: the first job wins.
	UniqueKeep UniqueMode = iota
	// UniqueReplace deletes a waiting owner (pending or delayed) and
	// enqueues the new job in its place: the last job wins. An active
	// owner is kept.
	UniqueReplace
	// UniqueDebounce updates a waiting owner in place: it keeps its id,
	// takes the new payload and is due Delay from now, so that a burst of
	// enqueues runs once, after the last. An active owner is kept.
	UniqueDebounce
)

var uniqueModes = [...]string{UniqueKeep: "keep", UniqueReplace: "replace", UniqueDebounce: "debounce"}

// String returns "keep", "replace" or "debounce".
func (m UniqueMode) String() string {
	if int(m) < len(uniqueModes) {
		return uniqueModes[m]
	}
	return "UniqueMode(?)"
}

// UniqueJob is one job of [Queue.EnqueueUniqueBatch].
type UniqueJob struct {
	// Key is the unique key, any bytes up to [MaxUniqueKey]: it is hashed here
	// ([UniqueHash]) and only its hash is sent.
	Key     string
	Payload []byte
	Mode    UniqueMode
	// Delay: 0 (or less) enqueues into pending, else into delayed, due
	// after Delay on the server's clock.
	Delay time.Duration
	// Period: 0 holds the key while its owner lives (pending, delayed or
	// active); else at most Period, then the key is free whatever the
	// owner's state. Negative is an error.
	Period time.Duration
}

// UniqueStatus is what a unique enqueue did.
type UniqueStatus uint8

// The results of a unique enqueue.
const (
	UniqueEnqueued  UniqueStatus = iota + 1 // the key was free: the new job was enqueued and owns it
	UniqueExisting                          // the key is held: nothing written; ID is the owner
	UniqueReplaced                          // the waiting owner (Replaced) was deleted; the new job owns the key
	UniqueDebounced                         // the waiting owner (ID) took the new payload and due time
)

// String names the status.
func (s UniqueStatus) String() string {
	switch s {
	case UniqueEnqueued:
		return "enqueued"
	case UniqueExisting:
		return "existing"
	case UniqueReplaced:
		return "replaced"
	case UniqueDebounced:
		return "debounced"
	}
	return "UniqueStatus(?)"
}

// UniqueResult is the outcome of one unique enqueue.
type UniqueResult struct {
	// ID is the job that owns the key after the call: the new job's id
	// (Enqueued, Replaced) or the owner's (Existing, Debounced).
	ID       string
	Status   UniqueStatus
	Replaced string // the deleted owner's id, for UniqueReplaced
	// Err is nil, or ErrDuplicate (the new id names a row: nothing
	// written), or a *ScriptError for the call.
	Err error
}

// UniqueHash returns the hex sha256 of a unique key: the suffix of its
// key, emq:{q}:unique:<hash>. A key of any length costs 64 bytes on the
// wire and in the server.
func UniqueHash(key string) string {
	var h [64]byte
	return string(uniqueHash(&h, key))
}

// uniqueHash writes key's hex sha256 into h and returns it.
func uniqueHash(h *[64]byte, key string) []byte {
	sum := sha256.Sum256([]byte(key))
	hex.Encode(h[:], sum[:])
	return h[:]
}

// MaxUniqueKey is the longest unique key accepted, 64 KiB: a longer one
// is refused with an [*ArgError] before anything is sent (a key that
// long is a payload used by mistake, and would be hashed on every
// enqueue). Only the key's hash reaches the server, whatever its length.
const MaxUniqueKey = 64 << 10

// uniqueChunk is the most jobs one unique_enqueue call carries.
const uniqueChunk = 1000

// EnqueueUnique admits one job under a unique key, minting its id (see
// [UniqueJob] and [Queue.EnqueueUniqueBatch]). The key is tied to its
// owner's state: a job that completes, dies or is deleted — by any peer,
// with the core scripts too — frees its key by that fact, with no lock to
// release.
func (q *Queue) EnqueueUnique(ctx context.Context, j UniqueJob) (UniqueResult, error) {
	r, err := q.EnqueueUniqueBatch(ctx, []UniqueJob{j})
	if err != nil {
		return UniqueResult{}, err
	}
	return r[0], r[0].Err
}

// uniqueArgs are the options a unique_enqueue call's jobs share.
type uniqueArgs struct {
	mode       UniqueMode
	delay, ttl int64
}

func uniqueArgsOf(j *UniqueJob) uniqueArgs {
	delay, _ := millis("delay", j.Delay, true)
	ttl, _ := millis("period", j.Period, false)
	return uniqueArgs{j.Mode, delay, ttl}
}

// EnqueueUniqueBatch admits each job under its unique key, minting the
// ids, in atomic unique_enqueue calls of up to 1,000 jobs (all calls in
// one pipeline; a call's jobs share their mode, delay and period, so a
// run of jobs with other options starts another call); results[i] is
// jobs[i]'s. The jobs are taken in order, so two jobs of one key in a
// batch behave as two calls would. Every argument is checked before
// anything is sent. The error is for the exchange as a whole; then some
// jobs may have been enqueued.
func (q *Queue) EnqueueUniqueBatch(ctx context.Context, jobs []UniqueJob) ([]UniqueResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	for i := range jobs {
		if jobs[i].Mode > UniqueDebounce {
			return nil, &ArgError{Arg: "UniqueJob.Mode", Reason: "not a mode"}
		}
		if jobs[i].Period < 0 {
			return nil, &ArgError{Arg: "UniqueJob.Period", Reason: "negative duration " + jobs[i].Period.String()}
		}
		if len(jobs[i].Key) > MaxUniqueKey {
			return nil, keyTooLong(len(jobs[i].Key))
		}
	}
	ids := q.mintIDs(len(jobs))
	o := getOp("unique_enqueue")
	var h [64]byte
	// ends[c] is where call c's jobs end; it starts where call c-1's end.
	var ends []int
	for i := 0; i < len(jobs); {
		u := uniqueArgsOf(&jobs[i])
		o.args.Reset()
		o.args.Key(q.keys.Pending)
		o.args.Key(q.keys.Delayed)
		o.args.Key(q.keys.Base)
		o.args.Arg(u.mode.String())
		o.args.ArgInt(u.delay)
		o.args.ArgInt(u.ttl)
		for end := min(i+uniqueChunk, len(jobs)); i < end && uniqueArgsOf(&jobs[i]) == u; i++ {
			j := &jobs[i]
			o.args.Arg(ids[i*IDLen : (i+1)*IDLen])
			o.args.ArgBytes(j.Payload)
			o.args.ArgBytes(uniqueHash(&h, j.Key))
		}
		o.batch.Add(scriptUniqueEnqueue, &o.args)
		ends = append(ends, i)
	}
	if err := q.reaper.EvalBatch(ctx, &o.batch); err != nil {
		putOp(o, err)
		return nil, wrapErr("unique_enqueue", err)
	}
	results := make([]UniqueResult, len(jobs))
	start := 0
	for c, end := range ends {
		part := results[start:end]
		if err := o.batch.Err(c); err != nil {
			for i := range part {
				part[i].Err = wrapErr("unique_enqueue", err)
			}
		} else if err := readUnique(o.batch.Reply(c), part, ids[start*IDLen:]); err != nil {
			putOp(o, nil)
			return nil, err
		}
		start = end
	}
	putUnique(o, jobs)
	return results, nil
}

// putUnique recycles o unless its calls carried more than 1 MiB of
// payloads (see putBig).
func putUnique(o *op, jobs []UniqueJob) {
	size := 0
	for i := range jobs {
		size += len(jobs[i].Payload)
	}
	if size <= 1<<20 {
		putOp(o, nil)
	}
}

// readUnique parses a unique_enqueue reply, {r1, r2, ...}, into part: 1
// (enqueued) or 4 (duplicate) for the new job, else the code digit 0, 2
// or 3 then the other job's id; ids holds the minted ids of part's jobs,
// IDLen bytes each.
func readUnique(v resp.Value, part []UniqueResult, ids string) error {
	const want = "one result per job"
	if v.Type != resp.Array || len(v.Elems) != len(part) {
		return badReply("unique_enqueue", v, want)
	}
	for i, e := range v.Elems {
		r := &part[i]
		own := ids[i*IDLen : (i+1)*IDLen]
		if e.Type == resp.Integer {
			switch e.Int {
			case 1:
				r.ID, r.Status = own, UniqueEnqueued
			case 4:
				r.ID, r.Err = own, ErrDuplicate
			default:
				return badReply("unique_enqueue", v, want)
			}
			continue
		}
		if !isString(e) || len(e.Str) < 2 {
			return badReply("unique_enqueue", v, want)
		}
		other := string(e.Str[1:])
		switch e.Str[0] {
		case '0':
			r.ID, r.Status = other, UniqueExisting
		case '2':
			r.ID, r.Status, r.Replaced = own, UniqueReplaced, other
		case '3':
			r.ID, r.Status = other, UniqueDebounced
		default:
			return badReply("unique_enqueue", v, want)
		}
	}
	return nil
}

// keyTooLong refuses a unique key of n bytes, over MaxUniqueKey.
func keyTooLong(n int) error {
	return &ArgError{Arg: "UniqueJob.Key", Reason: strconv.Itoa(n) + " bytes, over MaxUniqueKey (65536)"}
}

// ErrNoOwner is returned by [Queue.UniqueOwner] when the key is free.
var ErrNoOwner = errors.New("emq: the unique key is free")

// UniqueOwner returns the id of the job that holds the unique key and
// its state, read with two plain reads (not atomic: an operator's view).
// A free key (none, or its owner gone, completed or dead) is
// [ErrNoOwner].
func (q *Queue) UniqueOwner(ctx context.Context, key string) (string, State, error) {
	if len(key) > MaxUniqueKey {
		return "", "", keyTooLong(len(key))
	}
	k := q.keys.Base + TypeUnique + UniqueHash(key)
	v, err := q.sender.Do(ctx, "GET", k)
	if err != nil {
		return "", "", err
	}
	if v.Type == resp.Null {
		return "", "", ErrNoOwner
	}
	id := string(v.Str)
	if err := checkID(id); err != nil {
		return "", "", err
	}
	st, err := q.sender.Do(ctx, "HGET", q.keys.Job(id), "state")
	if err != nil {
		return "", "", err
	}
	s := State(st.Str)
	if st.Type == resp.Null || s == StateCompleted || s == StateDead {
		return "", "", ErrNoOwner
	}
	return id, s, nil
}
