// Package kv is typed helpers for the commands users reach for first:
// strings, hashes, lists, sets, sorted sets, the SCAN family and streams.
// Each is a function over a conn.Sender (a conn.Client, a conn.Conn, or
// any client built on them), named after its command:
//
//	err := kv.Set(ctx, cl, "greeting", "hello")
//	ok, err := kv.SetWith(ctx, cl, "lock", token, kv.SetOptions{TTL: 30 * time.Second, NX: true})
//	v, ok, err := kv.Get(ctx, cl, "greeting")
//	n, err := kv.Incr(ctx, cl, "visits")
//	user, err := kv.HGetAll(ctx, cl, "user:42") // map[string]string
//	for key, err := range kv.Scan(ctx, cl, kv.ScanOptions{Match: "user:*"}) { … }
//
// # The one call
//
// Any command of package cmds runs in one line with its typed result:
// Call sends a built command and reads its reply with the decoder cmds
// names for it (Info.Reply: cmds.Int, cmds.Strings, cmds.StringMap, …);
// CallNull does the same for a reply that can be nil, with an ok bool:
//
//	var b cmds.Builder // one per goroutine
//	n, err := kv.Call(ctx, cl, b.Incrby("visits", 5).Build(), cmds.Int)
//	v, ok, err := kv.CallNull(ctx, cl, b.Get("greeting").Build(), cmds.String)
//
// In a pipeline the same command and decoder make the typed handle:
// pipeline.Decode(&batch, cmd, cmds.Int) (batch.Int(cmd) for short).
// The named helpers below are short names for the commands used most;
// those added with package cmds are Call over a pooled Builder.
//
// # Arguments
//
// Keys, fields and names are strings. Values (SET's, list elements, set
// members, hash values, stream fields) are any of string, []byte, the
// integer types and float64 (see Value): no strconv at the call site.
// HSetFields takes fields of mixed value types, each made with F
// (kv.F("name", "Ada"), kv.F("visits", 3)); HSetMap one type per call.
// Durations are time.Duration, sent in the unit the command takes (EX in
// seconds when whole, else PX in milliseconds rounded up; BLPOP's
// and BRPOP's timeout in seconds with up to three decimals, rounded up to
// the millisecond). Options the server would refuse (NX with
// XX, a negative TTL, a NaN score, increment or score bound) are refused
// before sending, with an error matching ErrInvalid.
//
// # Nil
//
// One convention, everywhere: a reply that can be nil (a missing key,
// field or member, an empty list, a timeout) is returned with an ok
// bool, false when the server said nil, like a map lookup:
//
//	v, ok, err := kv.Get(ctx, cl, "k")
//	if err != nil { … }   // the call failed: err is never "not found"
//	if !ok { … }          // no such key
//
// A reply that is a collection is returned empty for nil (HGetAll of a
// missing key is an empty map, XReadGroup that timed out returns no
// streams), and MGet returns a map that holds only the keys that exist.
// Commands that report whether they did something return a bool for it
// (SetWith with NX, Expire of a missing key, XGroupCreate of a group
// that exists).
//
// # RESP2 and RESP3
//
// Replies read the same under both protocols: HGETALL is a map either
// way, ZRANGE … WITHSCORES and ZPOPMIN give []Z, a score is a float64
// whether it came as a RESP3 double or a RESP2 string, XREADGROUP gives
// []XStream from a RESP3 map or a RESP2 array.
//
// # Built with package cmds
//
// Every helper (Get, Set, HSet, …, and those added with package cmds:
// Decr, IncrByFloat, GetDel, Persist, HLen, HMGet, HExists, LLen, BRPop,
// SCard, SPop, ZCard, ZIncrBy, ZRank, ZRevRange, ZRangeByScore, XRange,
// XRead, XDel, XPending, …) builds its command with its typed builder
// and reads the reply with its decoder; Z and the XPENDING types are package cmds'
// own, so a value read here and one read from a typed pipeline
// (pipeline.Batch's Scored) are the same type. For a command kv has no
// helper for, build it with cmds and read it with cmds' decoders.
//
// # Cost
//
// Every helper builds its command with package cmds' builder (one
// encoder behind kv: a pooled cmds.Builder, its values given as text
// without a copy) and reads the reply in place, as Call does: the hot
// ones allocate nothing beyond the result asked for. Set, Incr, IncrBy, HSet, HIncrBy, Del,
// Exists, Expire, TTL and GetBytes (with room in dst) allocate nothing;
// Get and HGet allocate the returned string. Their CPU cost over a raw
// DoFunc is measured in BENCHMARKS.md.
//
// # Blocking commands
//
// BLPop and XReadGroup with Block are blocking commands: a conn.Client
// sends each on a connection of its own, by itself, so it never holds up
// other calls. When the caller's ctx ends first, the Client unblocks the
// command on the server (CLIENT UNBLOCK, sent on its shared connection)
// before the call returns, and the lent connection is kept for the next
// one; an element popped meanwhile is returned rather than lost, so the
// server never hands an element to nobody. Only when the server cannot
// be told does the Client close the connection instead (see conn's doc,
// "The guarantee"). TestBLPopCancelledUnblocksNotCloses shows it.
package kv
