package emq

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
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
	CronExists  CronFired = 3  // the slot is taken, but a row with its id exists: no job written
)

// Fired reports whether the slot was taken by this call.
func (f CronFired) Fired() bool { return f == CronPending || f == CronDelayed || f == CronExists }

// CronID returns the job id of a schedule's slot: JOB + the snowflake
// whose time is the slot (ms since 2024-01-01) and whose node and
// sequence (22 bits) are the first bits of sha256(name). Every scheduler
// derives the same id for the same slot; two schedules of one queue
// whose slots coincide collide with a chance of 2^-22 per pair, which
// [Queue.CronFire] reports as [CronExists]. A slot before the epoch or
// past 2093 is an *[ArgError].
func CronID(name string, slot time.Time) (string, error) {
	sum := sha256.Sum256([]byte(name))
	low := binary.BigEndian.Uint32(sum[:4]) >> 10 // 22 bits: node, then sequence
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
	// IDs[i] is slots[i]'s job id.
	IDs []string
}

// CronFire fires slots of the schedule name in queue q, in one atomic
// call (cron_fire): each slot later than the schedule's last fired one
// (emq:{q}:cron) is taken and its job (id [CronID], the payload)
// enqueued in the same step, into pending when its time has come on the
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
	res := CronResult{IDs: make([]string, len(slots))}
	for i, s := range slots {
		if i > 0 && !s.After(slots[i-1]) {
			return CronResult{}, &ArgError{Arg: "slots", Reason: "not strictly ascending"}
		}
		if res.IDs[i], err = CronID(name, s); err != nil {
			return CronResult{}, err
		}
		a.ArgInt(s.UnixMilli())
		a.Arg(res.IDs[i])
	}
	err = q.reaper.Eval(ctx, scriptCronFire, &a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != 1+len(slots) {
			return badReply("cron_fire", v, "{last, one result per slot}")
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
			r, err := v.Elems[1+i].AsInt()
			if err != nil || r < -1 || r > 3 {
				return badReply("cron_fire", v, "results -1 to 3")
			}
			res.Fired[i] = CronFired(r)
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
