package kv

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Streams are the durable half of the bus: unlike pub/sub, the server
// keeps every entry until it is trimmed, and a consumer group hands each
// entry to one consumer and remembers it until acknowledged (XACK), so a
// consumer that fails can have its entries claimed by another
// (XAUTOCLAIM).

// XEntry is one entry of a stream: its ID and its fields and values in
// order (cmds.Entry; Value and Map read them). An entry deleted while it
// was pending in a group has its ID alone.
type XEntry = cmds.Entry

// XStream is the entries read from one stream (cmds.Stream: Key and
// Entries).
type XStream = cmds.Stream

// XAddOptions are XADD's options. The zero value adds an entry with an
// id of the server's choosing, creating the stream if need be, and
// trims nothing.
type XAddOptions struct {
	// ID is the new entry's id; "" lets the server choose ("*").
	ID string
	// MaxLen, when positive, trims the stream to about (Approx) or
	// exactly this many entries (MAXLEN [~] n).
	MaxLen int64
	Approx bool
	// NoMkStream adds nothing when the stream does not exist
	// (NOMKSTREAM).
	NoMkStream bool
}

// XAdd appends an entry of field-value pairs (field, value, field,
// value, …) to stream, creating it if need be, and returns its id
// (XADD stream * …).
func XAdd[V Value](ctx context.Context, s conn.Sender, stream string, fieldValues ...V) (string, error) {
	id, _, err := XAddWith(ctx, s, stream, XAddOptions{}, fieldValues...)
	return id, err
}

// XAddWith is XAdd with options; ok is false when NoMkStream found no
// stream, so nothing was added.
func XAddWith[V Value](ctx context.Context, s conn.Sender, stream string, o XAddOptions, fieldValues ...V) (id string, ok bool, err error) {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return "", false, invalid("XADD needs field-value pairs")
	}
	b := builder()
	for i := 0; i < len(fieldValues); i += 2 {
		b.fvs = append(b.fvs, cmds.FieldValue{Field: argText(b, fieldValues[i]), Value: argText(b, fieldValues[i+1])})
	}
	x := b.Xadd(stream, b.fvs...)
	if o.NoMkStream {
		x = x.Nomkstream()
	}
	if o.MaxLen > 0 {
		x = x.Trim(cmds.MaxLen, argText(b, o.MaxLen))
		if o.Approx {
			x = x.TrimApproximately()
		}
	}
	if o.ID == "" {
		x = x.AutoId()
	} else {
		x = x.Id(o.ID)
	}
	return callOK(ctx, s, b, x.Build(), cmds.String)
}

// XLen returns the number of entries in stream (XLEN; 0 when it does
// not exist).
func XLen(ctx context.Context, s conn.Sender, stream string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Xlen(stream).Build(), cmds.Int)
}

// XGroupCreate creates consumer group on stream, creating an empty
// stream if need be (XGROUP CREATE stream group start MKSTREAM). start
// is the id after which the group begins reading: "$" for entries added
// from now on, "0" for the whole stream. It returns false, and no
// error, when the group exists already (BUSYGROUP), so it can be called
// at every start-up.
func XGroupCreate(ctx context.Context, s conn.Sender, stream, group, start string) (bool, error) {
	b := builder()
	err := do(ctx, s, b, b.XgroupCreate(stream, group).Id(start).Mkstream().Build(), nil)
	if resp.IsCode(err, "BUSYGROUP") {
		return false, nil
	}
	return err == nil, err
}

// BlockForever makes XRead and XReadGroup wait for entries with no
// timeout (BLOCK 0), where a Block of 0 does not wait; it is the only
// negative Block they accept. BLPop and BRPop take it too, as they take
// 0: waiting for ever.
const BlockForever time.Duration = -1

// XReadGroupArgs are XREADGROUP's arguments.
type XReadGroupArgs struct {
	// Group and Consumer name the consumer group and this consumer.
	Group, Consumer string
	// Streams are the stream keys to read.
	Streams []string
	// IDs are where to read each stream from: ">" for entries never
	// delivered to any consumer of the group (the default when IDs is
	// nil), or an id for this consumer's own pending entries after it
	// ("0" for all of them).
	IDs []string
	// Count, when positive, bounds the entries read per stream.
	Count int64
	// Block, when positive, waits up to this long for entries (BLOCK,
	// in milliseconds, rounded up); BlockForever waits with no timeout;
	// 0 returns at once. Any other negative value is refused (ErrInvalid)
	// before anything is sent: a computed timeout that went negative must
	// not become a wait with no end. A conn.Client sends a blocking
	// read on a connection of its own, so it never holds up other
	// calls; when ctx ends first the Client unblocks it on the server
	// (CLIENT UNBLOCK) before the call returns, and entries delivered
	// meanwhile are returned rather than lost.
	Block time.Duration
	// NoAck delivers without adding the entries to the pending list
	// (NOACK): they need no XACK, and are lost if this consumer fails.
	NoAck bool
}

// XReadGroup reads entries as a consumer of a group (XREADGROUP). A
// read that found nothing (a timeout) returns no streams; under RESP2
// and RESP3 alike.
func XReadGroup(ctx context.Context, s conn.Sender, a XReadGroupArgs) ([]XStream, error) {
	if len(a.Streams) == 0 || a.IDs != nil && len(a.IDs) != len(a.Streams) {
		return nil, invalid("XREADGROUP needs streams, and one id per stream")
	}
	if a.Block < 0 && a.Block != BlockForever {
		return nil, invalid("XREADGROUP with a negative Block (BlockForever waits with no timeout, 0 not at all)")
	}
	b := builder()
	ids := a.IDs
	if ids == nil {
		for range a.Streams {
			b.strs = append(b.strs, ">")
		}
		ids = b.strs
	}
	x := b.Xreadgroup(a.Group, a.Consumer, a.Streams, ids...)
	if a.Count > 0 {
		x = x.Count(a.Count)
	}
	if a.Block != 0 {
		x = x.Block(max(a.Block, 0)) // milliseconds rounded up; BlockForever: BLOCK 0
	}
	if a.NoAck {
		x = x.Noack()
	}
	return call(ctx, s, b, x.Build(), cmds.Streams)
}

// XAck acknowledges entries of stream for group (XACK), removing them
// from its pending list, and returns how many were pending.
func XAck(ctx context.Context, s conn.Sender, stream, group string, ids ...string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Xack(stream, group, ids...).Build(), cmds.Int)
}

// XAutoClaimArgs are XAUTOCLAIM's arguments.
type XAutoClaimArgs struct {
	// Stream, Group and Consumer: the consumer that takes the entries.
	Stream, Group, Consumer string
	// MinIdle: only entries pending longer than this are claimed.
	MinIdle time.Duration
	// Start is the id to scan the pending list from: "" for the start
	// ("0-0"), else the Next of the previous call.
	Start string
	// Count, when positive, bounds the entries claimed (server default
	// 100).
	Count int64
}

// XAutoClaimResult is what XAutoClaim claimed.
type XAutoClaimResult struct {
	// Next is where the next call should start; "0-0" when the whole
	// pending list was scanned.
	Next string
	// Entries are the entries now owned by the consumer.
	Entries []XEntry
	// Deleted are the ids of pending entries that no longer exist in
	// the stream (Redis 7), removed from the pending list.
	Deleted []string
}

// XAutoClaim transfers to a consumer the entries pending in its group
// for longer than MinIdle (XAUTOCLAIM), so the entries of a consumer
// that failed are processed by another.
func XAutoClaim(ctx context.Context, s conn.Sender, a XAutoClaimArgs) (XAutoClaimResult, error) {
	start := a.Start
	if start == "" {
		start = "0-0"
	}
	b := builder()
	// Whole milliseconds, truncated (package cmds would round up).
	x := b.Xautoclaim(a.Stream, a.Group, a.Consumer, max(a.MinIdle.Truncate(time.Millisecond), 0), start)
	if a.Count > 0 {
		x = x.Count(a.Count)
	}
	var r XAutoClaimResult
	err := do(ctx, s, b, x.Build(), func(v resp.Value) (err error) {
		if v.Type != resp.Array || len(v.Elems) < 2 {
			return &resp.TypeError{Want: "[next, entries, deleted]", Got: v.Type}
		}
		if r.Next, err = text(v.Elems[0]); err != nil {
			return err
		}
		if r.Entries, err = cmds.Entries(v.Elems[1]); err != nil {
			return err
		}
		if len(v.Elems) > 2 {
			r.Deleted, err = cmds.Strings(v.Elems[2])
		}
		return err
	})
	return r, err
}

// XRange returns the entries of stream with ids from start to end,
// both included ("-" and "+" for the first and the last; "(" before an
// id excludes it), oldest first (XRANGE); at most count when count is
// positive.
func XRange(ctx context.Context, s conn.Sender, stream, start, end string, count int64) ([]XEntry, error) {
	b := builder()
	x := b.Xrange(stream, start, end)
	if count > 0 {
		x = x.Count(count)
	}
	return call(ctx, s, b, x.Build(), cmds.Entries)
}

// XRevRange is XRange newest first (XREVRANGE): from end down to start.
func XRevRange(ctx context.Context, s conn.Sender, stream, end, start string, count int64) ([]XEntry, error) {
	b := builder()
	x := b.Xrevrange(stream, end, start)
	if count > 0 {
		x = x.Count(count)
	}
	return call(ctx, s, b, x.Build(), cmds.Entries)
}

// XReadArgs are XREAD's arguments.
type XReadArgs struct {
	// Streams are the stream keys to read.
	Streams []string
	// IDs are where to read each stream from, one per stream: the entries
	// after it are read; "$" for only the entries added from now on.
	IDs []string
	// Count, when positive, bounds the entries read per stream.
	Count int64
	// Block is as XReadGroupArgs.Block: positive waits up to this long
	// (BLOCK, in milliseconds rounded up), BlockForever with no timeout,
	// 0 returns at once; any other negative value is refused.
	Block time.Duration
}

// XRead reads the entries after the given ids of streams (XREAD). A read
// that found nothing (a timeout) returns no streams, under RESP2 and
// RESP3 alike. With Block, a conn.Client runs it on a connection of its
// own, as XReadGroup.
func XRead(ctx context.Context, s conn.Sender, a XReadArgs) ([]XStream, error) {
	if len(a.Streams) == 0 || len(a.IDs) != len(a.Streams) {
		return nil, invalid("XREAD needs streams, and one id per stream")
	}
	if a.Block < 0 && a.Block != BlockForever {
		return nil, invalid("XREAD with a negative Block (BlockForever waits with no timeout, 0 not at all)")
	}
	b := builder()
	x := b.Xread(a.Streams, a.IDs...)
	if a.Count > 0 {
		x = x.Count(a.Count)
	}
	if a.Block != 0 {
		x = x.Block(max(a.Block, 0)) // BlockForever: BLOCK 0
	}
	return call(ctx, s, b, x.Build(), cmds.Streams)
}

// XDel deletes entries of stream by id (XDEL) and returns how many
// existed.
func XDel(ctx context.Context, s conn.Sender, stream string, ids ...string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Xdel(stream, ids...).Build(), cmds.Int)
}

// XPendingSummary is XPENDING's summary of a group: how many entries
// are pending, the lowest and highest id, and how many each consumer
// has (package cmds' PendingSummary).
type XPendingSummary = cmds.PendingSummary

// XPendingConsumer is a consumer and how many entries it has pending.
type XPendingConsumer = cmds.PendingConsumer

// XPending returns the summary of the entries pending in group
// (XPENDING stream group); a Count of 0 when there are none.
func XPending(ctx context.Context, s conn.Sender, stream, group string) (XPendingSummary, error) {
	b := builder()
	return call(ctx, s, b, b.Xpending(stream, group).Build(), cmds.PendingSummaryOf)
}

// XPendingArgs select pending entries for XPendingRange.
type XPendingArgs struct {
	// Stream and Group name the group.
	Stream, Group string
	// Start and End bound the ids ("" for "-" and "+": all).
	Start, End string
	// Count bounds the entries returned; it must be positive.
	Count int64
	// Consumer, when set, returns only its entries.
	Consumer string
	// MinIdle, when positive, returns only the entries pending at least
	// this long (IDLE, in milliseconds rounded up).
	MinIdle time.Duration
}

// XPendingEntry is one pending entry: its id, its consumer, how long it
// has been pending and how many times it was delivered (package cmds'
// PendingEntry).
type XPendingEntry = cmds.PendingEntry

// XPendingRange returns the pending entries of a group, oldest first
// (XPENDING stream group [IDLE] start end count [consumer]).
func XPendingRange(ctx context.Context, s conn.Sender, a XPendingArgs) ([]XPendingEntry, error) {
	if a.Count <= 0 {
		return nil, invalid("XPENDING with a range needs a positive Count")
	}
	if a.MinIdle < 0 {
		return nil, invalid("XPENDING with a negative MinIdle")
	}
	start, end := a.Start, a.End
	if start == "" {
		start = "-"
	}
	if end == "" {
		end = "+"
	}
	b := builder()
	x := b.Xpending(a.Stream, a.Group).Filters(start, end, a.Count)
	if a.MinIdle > 0 {
		x = x.FiltersIdle(a.MinIdle)
	}
	if a.Consumer != "" {
		x = x.FiltersConsumer(a.Consumer)
	}
	return call(ctx, s, b, x.Build(), cmds.PendingEntries)
}
