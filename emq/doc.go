// Package emq speaks the EchoMQ job-queue wire, echomq:6.0.0, over Valkey or
// Redis: the keys, the ids and the atomic transitions every EchoMQ runtime
// shares, and (layered on them) the verbs and the worker.
//
// The wire is a contract between runtimes. Below it sit the keys and field
// names (L1) and the transitions (L2), fixed and shared; above it sit the
// executor that sends a transition to the server (L3) and this package's
// Go API (L4), which are ours to shape. Nothing in this package may change
// a key, a field name or a script reply: a peer in another language reads
// the same rows.
//
// # Keyspace
//
// Every key of queue q starts with its base "emq:{q}:" (see [Keys]):
//
//	emq:{q}:job:<id>   hash  the job row: state, attempts, payload [, error]
//	emq:{q}:pending    zset  ids waiting; score 0, so byte order = mint order
//	emq:{q}:active     zset  claimed ids; score = lease deadline, ms, server clock
//	emq:{q}:delayed    zset  ids waiting for a time; score = due time, ms
//	emq:{q}:dead       zset  ids that used up their attempts; score = time of death
//	emq:{q}:meta       hash  queue flags: paused = 1 while paused
//	{emq}:version      string the fence, "echomq:6.0.0" ([VersionKey], [Version])
//
// The braces are the cluster hashtag: every key of a queue hashes to one
// slot ([Hashtag], [Slot]), so one script may touch them all, standalone or
// on a cluster node. That is why a queue name may not hold a brace
// ([ValidQueue]): an invalid name is an error, never a key. Build a queue's
// keys once with [NewKeys]; [Keys.AppendJob] makes a row key without
// allocating.
//
// # Ids
//
// A job is named by a branded id ([ParseID], [FormatID]): 14 bytes, a
// 3-byte [A-Z] namespace ("JOB" for jobs) and a 63-bit snowflake in base62,
// padded to 11 digits. The alphabet is in ASCII order, so ids sort as their
// snowflakes do, and a snowflake is its mint time (41 bits of ms since
// 2024-01-01), a node (10 bits) and a sequence (12 bits). An [IDGenerator]
// mints ids strictly increasing within a process; since pending scores are
// all 0, that byte order is the order in which jobs are claimed.
//
// # Scripts
//
// Each transition is a Lua script run inside the server, atomically,
// embedded here from scripts/*.lua: the six core transitions [EnqueueLua],
// [ClaimLua], [CompleteLua], [RetryLua], [PromoteLua], [ReapLua], and the
// extensions [ClaimBatchLua], [ExtendLua], [EnqueueAtLua],
// [CompleteBatchLua] ([Scripts] lists them with their KEYS counts). Each
// file's header names its KEYS, ARGV and replies. The rules they keep:
//
//   - Every key a script touches is in KEYS[] or derived from a declared
//     base KEYS[n] ("emq:{q}:" .. "job:" .. id), never built from ARGV.
//   - Time is read inside the script with TIME: leases and due times are on
//     the server's clock, never a client's.
//   - Extensions are new scripts; they never change a core script's keys,
//     fields or replies.
//   - Malformed numeric arguments are refused with an "EMQARG ..." error
//     before anything is written.
//
// Claim increments the row's attempts and returns the new value: that is
// the fencing token. Complete, retry and extend act only while the row is
// still active with that same attempts value, and answer 0 otherwise (the
// lease was lost, to the reaper or to another claimant).
//
// # Fence
//
// At connect the verb layer reads [VersionKey]. Absent, it is set to
// [Version] (SET NX); the same major goes on; another major is refused with
// an error naming both versions.
//
// # Verbs and worker
//
// The verbs (enqueue, claim, complete, retry, promote, reap, pending size,
// browse) and the worker that loops over claim sit on top of this
// foundation, with a script dispatcher that sends each script by the SHA1
// of its source (EVALSHA, one SCRIPT LOAD on NOSCRIPT) and maps replies to
// typed results; the server's error text (EMQKIND, EMQARG) reaches callers
// byte for byte.
package emq
