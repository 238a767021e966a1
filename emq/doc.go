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
// mints ids strictly increasing; every [Queue] of a process mints with the
// one [DefaultIDGenerator] unless given another, so a process never mints
// an id twice. Since pending scores are all 0, that byte order is the
// order in which jobs are claimed.
//
// # Scripts
//
// Each transition is a Lua script run inside the server, atomically,
// embedded here from scripts/*.lua into one table: the six core transitions
// (enqueue, claim, complete, retry, promote, reap), the extensions
// (claim_batch, extend, enqueue_at, complete_batch, enqueue_batch,
// settle_claim) and the operations (requeue, dead_filter, delete,
// trim_dead, stats, run_now), then the job system's (package jobs: finish, cancel,
// worker_beat, workers); [Scripts] returns a copy with their KEYS counts
// and sources. Each file's header names its KEYS, ARGV and replies. The rules
// they keep:
//
//   - Every key a script touches is in KEYS[] or derived from a declared
//     base KEYS[n] ("emq:{q}:" .. "job:" .. id), never built from ARGV.
//   - Time is read inside the script with TIME: leases and due times are on
//     the server's clock, never a client's.
//   - Extensions are new scripts; they never change a core script's keys,
//     fields or replies. A batch extension does to each job exactly what
//     the core transition would, in fewer server calls per job: the
//     server's time per call is what bounds a queue's throughput.
//   - Malformed numeric arguments are refused with an "EMQARG ..." error
//     before anything is written.
//
// Claim increments the row's attempts and returns the new value: that is
// the fencing token. Complete, retry and extend act only while the row is
// still active with that same attempts value, and answer 0 otherwise (the
// lease was lost, to the reaper or to another claimant). The token is
// compared as exact decimal text, the canonical rendering of attempts: "1"
// holds attempts 1, "01", "1.0", " 1" or "1e0" never do.
//
// # Queue
//
// [Open] validates a queue name, builds its [Keys] once, checks the fence
// and returns a [Queue], safe for concurrent use. Its verbs are thin typed
// wrappers, one per transition, sent through a [dispatch.Executor]: by
// default the native module's EMQ.* commands when the server has that
// module (module/ at the repository's root; Open asks [CheckNative]: the
// commands, their module "emq" and its version, on every primary of a
// cluster; after a MODULE UNLOAD the queue falls back, see
// [ErrNativeGone]), else [dispatch.NewScripted]
// ([WithExecutorChoice] forces either;
// [WithExecutor] names an executor of the caller's; [WithExtensionExecutor]
// routes the extension transitions apart; reap and the operations run only
// as scripts, by EVALSHA, whatever the executor):
//
//	Enqueue, EnqueueID           enqueue          pending; a duplicate id is false
//	EnqueueIn, EnqueueAt         enqueue_at       delayed, due on the server's clock
//	EnqueueBatch                 enqueue × n      one pipeline, a result per job
//	EnqueueBulk                  enqueue_batch    1,000 jobs per server call
//	Claim, ClaimBatch            claim(_batch)    Job{ID, Payload, Token}
//	Complete, CompleteBatch      complete(_batch) ErrStale when the lease was lost
//	SettleClaim                  settle_claim     a worker's round: complete, retry
//	                                              and release outcomes, then claim
//	Retry                        retry            RetryRequeued, RetryDelayed, RetryDead
//	Extend                       extend           ErrStale when the lease was lost
//	Promote, Reap                promote, reap    counts moved
//	Browse, Count, PendingSize   ZRANGE, HGETALL, ZCARD: plain reads
//	Pause, Resume, Paused        HSET/HDEL/HGET meta paused
//
// # Operations
//
// The operator's verbs are extension scripts too, run only by EVALSHA
// (as reap is), whatever the executor, each bounded so that a huge set
// never holds the server:
//
//	Requeue, RequeueBatch        requeue          dead → pending by id; ErrNotDead
//	RequeueDead(DeadFilter)      dead_filter      by error prefix and time of death; requeues a job only if still dead, 1,000 examined per call
//	DeleteDead(DeadFilter)       dead_filter      the same filter; deletes a job only if still dead, 1,000 examined per call
//	PayloadHeads(ids, n, max)    payload_heads    a read: each payload's size and first n bytes, 1,000 ids per call
//	Delete, DeleteBatch          delete           any state, with the row; ErrNotFound
//	TrimDead(maxAge, maxCount)   trim_dead        oldest dead first, 1,000 per call
//	Stats                        stats            counts, due, expired leases, paused, lag: one atomic read
//	RunNow, RunNowBatch          run_now          delayed → pending by id, before its due time; ErrNotDelayed
//
// The job system's verbs (package jobs stands on them) run as scripts
// too:
//
//	Finish                       finish           complete with a result kept at emq:{q}:result:<id>, or die; announced on emq:{q}:done:<id>
//	Cancel                       cancel           pending, delayed or active → dead; ErrFinished, ErrNotFound
//	Heartbeat, Workers           worker_beat, workers  the registry emq:{q}:workers of live consumers
//	Result, Row                  GET, HMGET       plain reads
//
// A requeued job keeps its attempts, the fencing token, which never goes
// back: should it fail again past the worker's MaxAttempts, it returns
// to dead. A deleted active job's worker finds its lease lost.
//
// Invalid input never reaches the server: an invalid queue name is a
// *[QueueError] ([ErrInvalidQueue]), an invalid id an *[IDError]
// ([ErrInvalidID]), checked before any key is built; a malformed duration
// or count an *[ArgError] ([ErrArg]): a lease under a millisecond, a
// negative retention or age. The scripts take integers up to 2^53 - 1
// and refuse any other (one such argument would refuse a whole
// settle_claim round), so every time.Duration is sent as its whole
// milliseconds, rounded up without overflow: math.MaxInt64 ns, about 292
// years, is 9,223,372,036,855 ms, valid as a lease, a delay, a retention
// or an age, and the server's clock plus it an exact score. A negative
// delay is due at once; a count or limit past 2^53 - 1 is sent as 2^53 -
// 1, which means the same. A script's error reply is a
// *[ScriptError] whose text is the server's byte for byte and which
// matches [ErrKind] (EMQKIND) or [ErrArg] (EMQARG). The hot verbs reuse
// pooled argument buffers: Enqueue allocates only the id it mints.
//
// # Fence
//
// At connect ([Open], or [CheckFence]) the verb layer reads [VersionKey].
// Absent, it is set to [Version] (SET NX, re-read when another client won
// the race); the same major goes on; another major, or a value of another
// shape, is refused with a *[FenceError] naming both versions ([ErrFence]).
// That check is the fence for the scripts, which never read the key. The
// native module reads it again on every call on a standalone server; on a
// cluster, where the key lives in one slot of one primary, it loads with
// "fence client" (module/README.md, "On a cluster") and reads it on no
// call: there, as for the scripts, this check at Open is the fence, and a
// queue's calls go on under the version it found until it is reopened.
//
// # Worker
//
// A [Worker] runs a [Handler] ([HandlerFunc], wrapped in [Middleware] as
// net/http handlers are) on Concurrency goroutines. Its conversation with
// the server is a loop of rounds, one in flight at a time: each round is
// one settle_claim that settles the outcomes its handlers left since the
// last (a handler's nil completes the job, an error retries it with
// exponential backoff and jitter, dead after MaxAttempts, [ErrSkipRetry]
// at once) and claims jobs for the handlers that will be free. Outcomes
// that arrive while a round is out share the next, and a round waits
// (about a round trip at most) for the handlers still running, so even a
// few handlers share round trips; the worker also claims ahead of its
// free handlers a prefetch sized to what they finish in about two round
// trips (up to Prefetch; none for slow handlers), so that a handler that
// finishes starts its next job at once. While the queue is empty it
// backs off from PollMin to PollMax. [ErrAbandon] leaves a job to the
// reaper, and a panic is recovered as a *[PanicError] and retried. An
// extender renews the lease of a long-running handler every
// ExtendInterval (a job claimed ahead that waited that long is extended
// before it starts) and cancels its context (cause [ErrLeaseLost]) when
// the lease was lost. Every job has a timeout (Timeout, default 30 min;
// TimeoutFor overrides it job by job): past it the handler's context ends
// (a cause matching [ErrJobTimeout]), the lease is extended no more, and
// the job is retried as a failure ("emq: job timed out after ..."),
// counted in its attempts and dead after MaxAttempts; a lease is thus
// extended for at most the timeout. A handler that ignores its context
// and runs on holds no slot: a new goroutine takes its place at the
// timeout, its late result is dropped (the job's token is stale anyway),
// and until it returns it is counted in [WorkerStats].Hung
// ([EventTimedOut] reports each timeout). A claimed job whose id is not a
// branded id (a row another runtime wrote) is not run, as no transition
// could settle it: an [EventError] with Op "claim", and the reaper takes
// it back. A maintainer promotes due jobs and reaps expired
// leases on jittered intervals, and a trimmer keeps the dead set within
// DeadMaxAge and DeadMaxCount. Each job's context is its own and ends
// when its handler returns. A round that failed without being sent
// (conn.ErrNotConnected) is sent again, up to three times; one that failed
// ambiguously never is. [Worker.Shutdown] stops claiming, releases the
// jobs claimed ahead that no handler started (back to pending, their
// attempts kept), waits for running handlers until its context ends, then
// cancels the rest (cause [ErrShutdown]) and the exchanges in flight,
// leaves their jobs to the reaper and reports the outcomes it never sent
// as events; every goroutine the worker starts is stopped, and
// [Worker.Done] reports when the last handler has
// returned. A worker whose connection is finished for good (a *conn.Conn
// that failed or was closed) stops on its own: [Worker.Run] returns, and
// [Worker.Err] holds, an error matching [ErrSenderDone] that wraps the
// connection's.
package emq
