// Package cmds builds every Valkey and Redis command with typed
// arguments, and reads the common replies into Go values the same way
// under RESP2 and RESP3.
//
// The builders are generated (cmdgen, in internal/cmdgen) from the
// servers' own command tables, COMMAND DOCS and COMMAND INFO, captured
// from Redis 7.0.15 and Valkey 8.0.1: one builder for every command and
// subcommand of the union of the two tables.
//
//	var b cmds.Builder
//	cmd := b.Set("user:1", "Ada").Nx().Ex(time.Minute).Build()
//	err := c.DoFunc(ctx, cmd.Cmd(), func(v resp.Value) error {
//		set, err = cmds.OKOrNil(v)
//		return err
//	})
//
// # Arguments
//
// A command's required arguments are the parameters of its Builder
// method, in the order of the command's syntax; everything optional is a
// method of the command's builder type, which may be called in any order:
// Build writes the arguments in the order the server wants. Of the
// methods of one choice (NX or XX, EX or PX or KEEPTTL) the last called
// wins; the methods of a repeated choice (BITFIELD's operations, CLIENT
// KILL's filters) add one more each call, in call order. A choice whose
// alternatives are blocks with options of their own (CLUSTER
// SLOT-STATS: SlotsRange, or OrderBy with OrderByLimit and
// OrderByAsc/OrderByDesc) is one choice too, the last alternative called
// winning; an option of one alternative built with another (OrderByLimit
// with SlotsRange) matches ErrAlone. Integers are
// int64, doubles float64, keys and values string, a choice among tokens
// inside an argument a small type of constants (Side: Left, Right). A
// count of the keys that follow (EVAL's numkeys) is written from the keys
// given.
//
// Durations are time.Duration, written in the unit the server reads,
// always rounded away from zero so that no duration but 0 is sent as 0:
// whole seconds (EXPIRE, SET's EX), whole milliseconds (PEXPIRE, SET's
// PX, XREAD's BLOCK, WAIT's timeout), or seconds with up to three
// decimals (the timeouts of BLPOP, BRPOP, BLMOVE, BZPOPMIN, …: 1500ms is
// written 1.5). A timeout of 0 blocks for ever; a negative one, -1ns
// included, is sent negative (-1: BLPOP's in whole seconds, as the
// servers read -0.001 as 0), which the server refuses ("timeout is
// negative") rather than blocking for ever. A float64 is
// written the shortest way that reads back exactly, infinities as +inf
// and -inf; NaN, which no server takes, makes the command's Err match
// ErrNaN and it is never sent. Points in time are
// time.Time, written as Unix seconds (truncated) or milliseconds. Score
// bounds (ZRANGEBYSCORE's min and max) are strings, so that -inf, +inf
// and exclusive bounds such as "(1.5" can be given.
//
// # What a Command knows
//
// Build returns a Command: its encoded form (Cmd, the resp.Cmd that
// conn's DoFunc takes), its name, its Kind (ReadOnly, Write, Blocking
// with its Timeout, ReplyModel, NoKeys, … from COMMAND INFO's flags and
// our own list of the commands that change the reply model) and the
// positions of its keys (KeyPos, Key), all known when it is built: the
// arguments the docs tie to a key spec, which a test of cmdgen checks
// against the key specs (begin_search by index or keyword, find_keys by
// range or keynum) and the tests here against COMMAND GETKEYS on the real
// servers. The shard channels of SPUBLISH, SSUBSCRIBE and SUNSUBSCRIBE,
// whose key specs are "not_key", are not keys but are routed like them:
// ShardChannel has them. A command built without
// what it needs (XADD with neither an ID nor "*", DEL with no key, a
// zero choice constant) has an Err matching ErrMissing and a Cmd of no
// bytes carrying that error, which a connection refuses with it; an
// option given without the option it belongs to (XADD's TrimLimit
// without Trim) an Err matching ErrAlone.
//
// # Facts: born with the bytes
//
// Fact is what a connection, a cluster router and the hooks need of an
// encoded command: its Info, its Kind refined by its arguments (XREAD …
// BLOCK, CLIENT REPLY OFF|SKIP), its blocking Timeout, its size, and where
// its name, second argument and keys are in its bytes (Span offsets).
// Each encoder makes it as it writes: Command.Fact from what the Builder
// noted (its keys' places, the Info's words, the mode it wrote);
// AppendFactOf from the spans package resp records while it encodes a
// command given as arguments (resp.AppendCommandSpans, Cmds.AddSpans);
// dispatch from the pieces of its calls. The RESP layout, where a header
// ends and an argument starts, is known in package resp alone. A
// submission carries one Fact per command (conn.Cmds.Facts) from where it
// is encoded, so nothing reads the bytes again; only bytes no encoder of
// this module wrote (submit.New's, a submission made from raw resp types)
// are read, once, by resp.SplitCommand. Inspect (or Info.Fact) computes
// the Fact of a command given as arguments, without encoding it.
//
// Plain (a test of a name's first letter and length against the table)
// says that no command of that name is of a Guarded kind, whatever its
// arguments. An encoder of raw commands (pipeline.Batch, a DoFunc of a
// resp.Cmd, a Stream, dispatch's calls) tests each name with it instead
// of inspecting the command: a submission of plain commands goes Plain,
// without facts, to a connection without hooks, which sends it without
// reading it; for hooks, a cluster's router or a wrapper, which need the
// keys, the facts are read from its bytes once (a Plain submission is
// never handed to code outside the module, which could edit it). PING or
// SET in a pipeline costs one load, as it did before the facts.
//
// # Lifetimes
//
// A Builder reuses its memory: once it has grown, building a command
// allocates nothing. That memory holds one command at a time, and what
// views it knows which one it is (a generation, which never wraps):
//
//   - A builder value (what b.Set(key, value) returns) is the command
//     its Builder has open: its options write into it until its Build,
//     and only while the Builder has started no other command. An option
//     given after Build, or after the Builder started another command,
//     writes nothing and touches no other command: the value it returns
//     is stale, and a Command built of it has an Err matching ErrStale
//     (and is never sent). Build again on a value built, with no option
//     refused since, returns the same Command.
//   - A Command is immutable: its bytes, keys and kind are those it was
//     built with. It views the Builder's memory and is valid until the
//     Builder starts the next command; used later it is refused, its Err
//     matching ErrStale, its Cmd of no bytes carrying that error (which a
//     connection refuses before sending), and it names nothing.
//   - Builders are independent: values and Commands of one never see
//     another's commands. A Builder is not safe for concurrent use: give
//     each goroutine its own (pipeline.Batch has one, Batch.Builder).
//
// So nothing a misused builder value or Command does puts on the wire
// bytes that are not a whole command built as written: each is either
// the command built, or refused with a typed error before it is sent.
// Queueing a Command in a pipeline.Batch copies it; the Builder may then
// go on.
//
// # Key specs and policies
//
// Each Info carries, from the servers' COMMAND INFO, the command's key
// specs as data (begin_search by index or keyword, find_keys by range or
// keynum) and its request and response policies (Policy, Aggregate),
// for a command given as raw arguments rather than built: the cluster
// router finds its keys and shard channels with AppendRouteKeys, as
// COMMAND GETKEYS does (SORT's STORE and MIGRATE's KEYS, which the specs
// do not describe, as the servers' own code finds them; a spec that finds
// nothing in arguments cut short is skipped, where the servers give up on
// the command, which then fails on the server), and sends it to every
// primary when its Policy is AllShards. The two servers' key specs agree
// (cmdgen stops otherwise); their tips do not always: a command either
// tags all_shards or all_nodes goes to every primary (Valkey 8.0 tags
// ACL SETUSER, CLIENT SETNAME, CONFIG REWRITE; Redis 7.0 does not), and
// the response policy is the newest server's that gives one (LATENCY
// RESET sums, as Valkey says). The node-wide admin commands (CONFIG SET,
// CONFIG RESETSTAT, FLUSHALL, FUNCTION LOAD, …) are AllShards also by
// cmdgen's own list, for a server that leaves them untagged (Redis 7.0
// does CONFIG RESETSTAT).
//
// # Replies
//
// The decoders (Int, Float, Bool, String, Strings, NullStrings,
// StringMap, Scored, PoppedOrNil, ScanPageOf, Entries, Streams,
// PendingSummaryOf, PendingEntries, …) fold the two protocols: a RESP3
// map and a RESP2 flat array read as the same map; scores read from a
// RESP3 double or a RESP2 string, and text that is not a number is an
// error; a RESP3 double read as a string is its text as sent (the RESP2
// string), read by Int a whole number; a nil is reported by an ok bool. Each command's Info.Reply
// names the decoder of its reply, from a reply table of our own
// (internal/cmdgen/replies.go).
//
// # Left out
//
// Of the 373 commands and subcommands of Valkey 8.0.1's COMMAND LIST and
// the 366 of Redis 7.0.15's, these have no builder:
//
//   - the 15 container names (ACL, CLIENT, CLUSTER, COMMAND, CONFIG,
//     FUNCTION, LATENCY, MEMORY, MODULE, OBJECT, PUBSUB, SCRIPT, SLOWLOG,
//     XGROUP, XINFO), which are not commands of their own: each of their
//     subcommands has a builder;
//   - DEBUG and REPLCONF: the servers document none of their arguments;
//   - SYNC and PSYNC: internal to replication, the connection becomes a
//     replication stream.
//
// That is 362 of Redis's 366 entries (98.9%) and 369 of Valkey's 373
// (98.9%), the containers counted through their subcommands; of the
// commands and subcommands alone, 347 of 351 (98.9%) and 354 of 358
// (98.9%). TestCoverage counts them from the servers' lists.
//
// Where the two servers' docs differ, the builder follows Valkey 8.0.1's
// and says so on the options Redis 7.0.15 lacks ("Only in
// valkey-8.0.1"). Two documented types are corrected: ZINCRBY's
// increment is a float64 (the docs say integer), and the SCAN family's
// cursor a string (an unsigned 64-bit number, passed back as received).
package cmds

//go:generate go run ../internal/cmdgen -in ../internal/cmdgen/testdata -out .
