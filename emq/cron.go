package emq

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

var scriptCronFire = dispatch.NewScript("cron_fire", source("cron_fire"))

// TypeCron is the key of a queue's schedules: emq:{q}:cron, a hash from
// a schedule's name to the Unix ms of its last fired slot.
const TypeCron = "cron"

// MaxCronName is the longest schedule name, in bytes.
const MaxCronName = 1024

// CronFired says what [Queue.CronFire] did with one slot.
type CronFired int8

// The results of firing a slot.
const (
	CronAhead   CronFired = -1 // later than the server's now plus the allowance: nothing written
	CronAlready CronFired = 0  // this slot or a later one had fired: nothing written
	CronPending CronFired = 1  // fired: its job is in pending
	CronDelayed CronFired = 2  // fired early (the caller's clock runs ahead): its job waits in delayed for the slot
	CronExists  CronFired = 3  // the slot is taken, but its job exists (it fired before the cron hash was reset): no job written
)

// CronCandidates is how many ids [Queue.CronFire] offers per slot: the
// first, [CronID], and then [CronIDK] 1, 2, 3. The script takes the first
// whose row is free (or is this schedule's job of this slot), so that two
// schedules whose ids coincide both fire.
const CronCandidates = 4

// TypeCronJobs is the record of the jobs cron_fire wrote:
// emq:{q}:cronjobs, a zset, member "<id>\n<name>", score the slot (kept
// 30 days), by which a candidate's row is known to be the schedule's own.
const TypeCronJobs = "cronjobs"

// cronBits returns the 22 node and sequence bits of candidate k of a
// schedule's ids; a variable so that a test can force two names onto the
// same first id.
var cronBits = func(name string, k int) uint32 {
	h := []byte(name)
	if k > 0 {
		h = append(h, 0, byte('0'+k))
	}
	sum := sha256.Sum256(h)
	return binary.BigEndian.Uint32(sum[:4]) >> 10
}

// Fired reports whether the slot was taken by this call.
func (f CronFired) Fired() bool { return f == CronPending || f == CronDelayed || f == CronExists }

// CronID returns the first candidate job id of a schedule's slot: JOB +
// the snowflake whose time is the slot (ms since 2024-01-01) and whose
// node and sequence (22 bits) are the first bits of sha256(name). Every
// scheduler derives the same id for the same slot. Two schedules of one
// queue whose slots coincide have the same first id with a chance of
// 2^-22 per pair; [Queue.CronFire] then gives the later one its next
// candidate ([CronIDK]), so that neither misses the slot. A slot before
// the epoch or past 2093 is an *[ArgError].
func CronID(name string, slot time.Time) (string, error) { return CronIDK(name, slot, 0) }

// CronIDK returns candidate k (0 to [CronCandidates]-1) of a schedule's
// slot: k = 0 is [CronID]; k ≥ 1 takes its 22 bits from
// sha256(name + "\x00" + the digit k).
func CronIDK(name string, slot time.Time, k int) (string, error) {
	if k < 0 || k >= CronCandidates {
		return "", &ArgError{Arg: "k", Reason: "not a candidate"}
	}
	low := cronBits(name, k) // 22 bits: node, then sequence
	sf, err := ComposeSnowflake(slot, uint16(low>>12), uint16(low&MaxSeq))
	if err != nil {
		return "", &ArgError{Arg: "slot", Reason: err.Error()}
	}
	return FormatID(JobNamespace, sf)
}

// CronResult is the outcome of [Queue.CronFire].
type CronResult struct {
	// Last is the schedule's last fired slot after the call; zero when it
	// never fired.
	Last time.Time
	// Fired[i] is what became of slots[i].
	Fired []CronFired
	// IDs[i] is slots[i]'s job id: the candidate its job was written
	// under (CronPending, CronDelayed) or found under (CronExists); ""
	// for a slot not fired, or taken with every candidate another's.
	IDs []string
}

// CronFire fires slots of the schedule name in queue q, in one atomic
// call (cron_fire): each slot later than the schedule's last fired one
// (emq:{q}:cron) is taken and its job (the payload, under the first free
// candidate id of [CronCandidates], [CronID] first) enqueued in the same
// step, into pending when its time has come on the
// server's clock, else into delayed until it. So however many schedulers
// fire a slot, one job is enqueued for it. slots must be strictly
// ascending; a slot more than ahead past the server's now is refused
// ([CronAhead]), with every slot after it. Firing again after an
// ambiguous failure is safe: a slot that fired answers [CronAlready].
func (q *Queue) CronFire(ctx context.Context, name string, payload []byte, ahead time.Duration, slots []time.Time) (CronResult, error) {
	if len(name) == 0 || len(name) > MaxCronName {
		return CronResult{}, &ArgError{Arg: "name", Reason: "a schedule name is 1 to " + strconv.Itoa(MaxCronName) + " bytes"}
	}
	if len(slots) == 0 {
		return CronResult{}, &ArgError{Arg: "slots", Reason: "none"}
	}
	aheadMs, err := millis("ahead", ahead, false)
	if err != nil {
		return CronResult{}, err
	}
	var a dispatch.Args
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.Arg(name)
	a.ArgBytes(payload)
	a.ArgInt(aheadMs)
	a.ArgInt(CronCandidates)
	res := CronResult{IDs: make([]string, len(slots))}
	for i, s := range slots {
		if i > 0 && !s.After(slots[i-1]) {
			return CronResult{}, &ArgError{Arg: "slots", Reason: "not strictly ascending"}
		}
		a.ArgInt(s.UnixMilli())
		for k := range CronCandidates {
			id, err := CronIDK(name, s, k)
			if err != nil {
				return CronResult{}, err
			}
			a.Arg(id)
		}
	}
	err = q.reaper.Eval(ctx, scriptCronFire, &a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != 1+2*len(slots) {
			return badReply("cron_fire", v, "{last, a result and an id per slot}")
		}
		last, err := v.Elems[0].AsInt()
		if err != nil {
			return badReply("cron_fire", v, "{last, one result per slot}")
		}
		if last >= 0 {
			res.Last = time.UnixMilli(last)
		}
		res.Fired = make([]CronFired, len(slots))
		for i := range slots {
			r, err := v.Elems[1+2*i].AsInt()
			id := v.Elems[2+2*i]
			if err != nil || r < -1 || r > 3 || !isString(id) {
				return badReply("cron_fire", v, "results -1 to 3, and ids")
			}
			res.Fired[i], res.IDs[i] = CronFired(r), string(id.Str)
		}
		return nil
	})
	if err != nil {
		return CronResult{}, wrapErr("cron_fire", err)
	}
	return res, nil
}

// CronStart gives a schedule that never fired its origin: its last slot
// becomes origin unless it has one already (HSETNX on emq:{q}:cron), so
// that the schedulers of a new schedule, started at different times or on
// skewed clocks, all fire every slot after the first one's origin. It
// returns the schedule's last slot after the call.
func (q *Queue) CronStart(ctx context.Context, name string, origin time.Time) (time.Time, error) {
	if len(name) == 0 || len(name) > MaxCronName {
		return time.Time{}, &ArgError{Arg: "name", Reason: "a schedule name is 1 to " + strconv.Itoa(MaxCronName) + " bytes"}
	}
	if _, err := q.sender.Do(ctx, "HSETNX", q.keys.Base+TypeCron, name, strconv.FormatInt(origin.UnixMilli(), 10)); err != nil {
		return time.Time{}, err
	}
	last, ok, err := q.CronLast(ctx, []string{name})
	if err != nil {
		return time.Time{}, err
	}
	if !ok[0] { // deleted in between: start from the origin all the same
		return origin, nil
	}
	return last[0], nil
}

// CronLast reads the last fired slot of each schedule of names (one
// HMGET on emq:{q}:cron); ok[i] is false for a schedule that never fired.
func (q *Queue) CronLast(ctx context.Context, names []string) (last []time.Time, ok []bool, err error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	args := make([]any, 0, 2+len(names))
	args = append(args, "HMGET", q.keys.Base+TypeCron)
	for _, n := range names {
		args = append(args, n)
	}
	v, err := q.sender.Do(ctx, args...)
	if err != nil {
		return nil, nil, err
	}
	if v.Type != resp.Array || len(v.Elems) != len(names) {
		return nil, nil, badReply("HMGET", v, "one value per name")
	}
	last, ok = make([]time.Time, len(names)), make([]bool, len(names))
	for i, e := range v.Elems {
		if e.Type == resp.Null {
			continue
		}
		ms, err := strconv.ParseInt(string(e.Str), 10, 64)
		if err != nil {
			return nil, nil, badReply("HMGET", v, "slots in Unix ms")
		}
		last[i], ok[i] = time.UnixMilli(ms), true
	}
	return last, ok, nil
}

// CronSchedule is one schedule of a queue, as [Queue.CronSchedules]
// reads it.
type CronSchedule struct {
	Name string
	Last time.Time // its last fired slot (or its origin, if none fired yet)
}

// CronSchedules lists the queue's schedules by name (HGETALL on
// emq:{q}:cron): every schedule a scheduler started, with its last slot.
func (q *Queue) CronSchedules(ctx context.Context) ([]CronSchedule, error) {
	v, err := q.sender.Do(ctx, "HGETALL", q.keys.Base+TypeCron)
	if err != nil {
		return nil, err
	}
	pairs := v.Elems // an Array (RESP2) or a Map (RESP3): names and slots in turn
	if (v.Type != resp.Array && v.Type != resp.Map) || len(pairs)%2 != 0 {
		return nil, badReply("HGETALL", v, "name and slot pairs")
	}
	out := make([]CronSchedule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		ms, err := strconv.ParseInt(string(pairs[i+1].Str), 10, 64)
		if err != nil {
			return nil, badReply("HGETALL", v, "slots in Unix ms")
		}
		out = append(out, CronSchedule{Name: string(pairs[i].Str), Last: time.UnixMilli(ms)})
	}
	slices.SortFunc(out, func(a, b CronSchedule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
