// Package jobs is the job system over EchoMQ queues: task types and a
// router shaped like net/http, a producer, one server over many queues,
// results and waiting, cancellation, a registry of the workers running,
// and an inspector. It stands on package emq's verbs and keeps the wire
// of echomq:6.0.0: the core scripts, the rows (state, attempts, payload,
// error) and the pending score 0 do not change; what is new is an
// extension script or a key of the queue's own slot, emq:{q}:… (see
// PROTOCOL-L4.md in this directory for the conventions a peer needs).
//
// It has three faces: producers ([Client]), consumers ([Server] with a
// [Mux]; the per-queue emq.Worker stays as it is) and operators
// ([Inspector]).
//
// # Tasks and the envelope
//
// A [Task] is a type ("email:send") and a body (any bytes). Its job's
// payload is the task's [Envelope]:
//
//	EMQ1 t=email:send&r=3&to=5000&rt=60000\n<body>
//
// a magic that names the version, a header of key=value pairs ending at
// the first newline (t the type, r the retries, to the timeout and rt the
// retention, in ms), then the body raw. Encoding is one append; decoding
// ([ParseEnvelope]) allocates nothing. Values are token bytes only, so
// nothing is escaped and the header reads as it is in a dashboard. A
// payload that does not open with "EMQ<digits> " is a peer's job: a
// [Server] gives it to the [Mux]'s default handler untouched (Task.Raw,
// Body the whole payload). One that opens so but does not parse (another
// version, a bad header) is refused with an *[EnvelopeError]: the job
// goes to dead with that error, as no later attempt would parse it.
//
// # Routing
//
// A [Mux] routes by type as http.ServeMux routes by path: an exact
// pattern ("email:send"), or a prefix ending in ':', '.' or '/'
// ("email:" takes "email:send"; the longest prefix wins, an exact one
// before any); [Mux.HandleDefault] takes the rest and the raw jobs;
// [Mux.Use] wraps every route in middleware. A type no route takes with
// no default is an *[UnknownTypeError]: the job goes to dead at once with
// its text, never retried (a retry would find no handler either).
//
// A [Handler] returns a result and an error: a nil error completes the
// job, keeping the result (when not nil) for the job's retention; an
// error retries it with backoff (settle_claim's retry, as the core retry
// script does it) until its retries are used up, then it is dead; an
// error matching [ErrSkipRetry] sends it to dead at once; emq.ErrAbandon
// leaves it to the reaper.
//
// # Producer
//
// [Client.Enqueue] enqueues a task with options: [Queue], [ProcessIn] or
// [ProcessAt] (a delayed job, due on the server's clock), [MaxRetries],
// [Timeout] (of one attempt) and [Retention] (keep the completed row and
// its result, and announce the job's end, so that it can be waited for).
// [Client.EnqueueBulk] enqueues many, 1,000 per server call.
//
// A unique task ([Unique], [UniqueBy], [UniqueKeyFunc], with [UniqueMode]
// and [UniqueFor]) is enqueued only while no live job holds its key; the
// key is tied to the owner's state on the server, so a job that
// completes, dies or is deleted frees it. A held key is reported in
// [Info] (Unique, the owner's ID) and, by Enqueue, as [ErrUniqueExists].
//
// # Periodic tasks
//
// A [Scheduler] fires registered schedules (cron expressions in a time
// zone, or @every), any number of schedulers without a leader: each slot
// is taken and its job enqueued in one atomic call, once. A [Schedule]'s
// Task is enqueued in the envelope, so a Server's [Mux] routes it by type.
//
// # Server
//
// A [Server] runs handlers over many queues with one concurrency budget
// (Concurrency handlers, plus a Prefetch of jobs claimed ahead). Its
// round loop claims in batches, as emq.Worker does, one call per round
// as a rule: each round's settle_claim claims the free budget from one
// queue and settles the outcomes its handlers left for that queue. The
// other queues' outcomes ride with their own queue's next claim, or go in
// a call of their own once due: at once for a finish (a result, a death:
// someone may wait), for a queue with limits (its active jobs count), or
// for 1,000 of them; else after about 8 round trips (2 ms to 50 ms). The
// calls of one round share the connection's pipeline. The claims follow
// the weights ([ServerConfig].Queues) by a smooth weighted round robin:
// each queue not found empty is owed the free budget times its weight's
// part of the eligible weights each round, and the queue owed most takes
// the round (its credit going below zero), so that over a cycle of rounds
// the claims (and, for handlers of one speed, the service) follow the
// weights exactly, a queue's count off by less than one round's claim at
// any time. In strict mode ([ServerConfig].Strict) the highest weight is
// served first, and each lower queue with work still gets
// [ServerConfig].StrictFloor of the claims (5% by default; claimed in
// batches of an eighth of the budget, at least 16) so that none starves
// for ever; a negative floor is pure strict.
//
// A queue may have limits ([ServerConfig].Limits, or stored in its meta
// by another Server or `emq limits set`): at most N jobs active across
// every Server, and at most N claims per interval, both counted by the
// server inside the claim (emq's claim_limited); the queues without
// limits are claimed as before.
//
// Each task runs with a timeout (its envelope's, else the server's): past
// it, its context ends with a cause matching [ErrJobTimeout] and the
// attempt fails. A running job's lease is extended every ExtendInterval;
// a stale answer (the job reaped, deleted or cancelled) ends its context
// with emq.ErrLeaseLost and drops its outcome. Each queue's delayed jobs
// are promoted, its expired leases reaped and its dead set trimmed
// (DeadMaxAge, DeadMaxCount) in the background.
//
// [Server.Shutdown] stops claiming, releases the jobs claimed ahead (to
// pending, attempts kept), waits for the running handlers until its ctx
// ends and settles what they return; past ctx their contexts end (cause
// emq.ErrShutdown) and their jobs stay active for the reaper. Nothing is
// lost: each job ends completed, back in pending, or active for the
// reaper. [Server.Health] reports liveness: running, the last round and
// heartbeat, whether it hears cancels, the last error.
//
// A Server stops by itself when its sender ends for good: a *conn.Conn
// that failed or was closed, or a closed *conn.Client (a Client's faults
// are not its end: it redials, the failed rounds are recorded in Health
// and the server resumes on the new connection). Then the jobs in hand
// stay active for the reaper, the handlers' contexts end (cause matching
// [ErrSenderGone]), Health.Stopped says why, Done closes once the
// handlers returned, and Run and Shutdown return that cause.
//
// # Results and waiting
//
// A completion with a result, or of a job enqueued with [Retention], goes
// through the finish script: the row completes (kept for the retention)
// and the result is written at emq:{q}:result:<id> with the same PEXPIRE,
// in the same step, which then publishes "completed" on the channel
// emq:{q}:done:<id>. A job's death goes through finish too ("dead").
// [Client.Wait] subscribes to that channel, then reads the job's state
// once, and again only when its end is announced: it returns the result,
// or a *[JobError] with the job's last error for a dead one. A job
// enqueued without Retention cannot be waited for ([ErrNotWaitable]): its
// completed row would be gone. A Server's reaper reaps with
// reap_announce, which announces each death by lease on the done channel
// too; a job a peer's core reap kills, or a peer's core script completes,
// announces nothing. Wait also listens on the row's keyspace channel,
// which hears such an end at once when the server has keyspace
// notifications on (notify-keyspace-events Khg or KA); without them it
// rereads a job it found active at its lease deadline (a peer's
// completion is seen by then), past the deadline after [WaitReapGrace]
// doubling (a peer's reap at R is seen by R + max(WaitReapGrace, R −
// deadline)); a delayed job at its due time; a job waiting to be claimed
// (which a peer's core claim and complete may end unheard) after
// [WaitPendingRecheck], doubling while it waits (a peer's end at T of a
// job first read waiting at T0 is seen by T + (T − T0) +
// WaitPendingRecheck); and any job at least every [WaitRecheck].
//
// # Cancellation
//
// [Client.Cancel] ends a pending, delayed or running job as dead with the
// error "cancelled", in one script (cancel), announced on its done
// channel. A running job's id is also published on emq:{q}:cancel; the
// Server running it (subscribed to its queues' cancel channels) ends the
// handler's context with cause [ErrCancelled] about one round trip after
// the cancel, and drops its outcome. A Server that never hears it loses
// the job anyway: its token no longer holds (the row is dead), so its next
// lease extension ends the handler with emq.ErrLeaseLost and its
// completion is stale. A cancel for a completed or dead job is
// emq.ErrFinished, for no job emq.ErrNotFound; nothing changes.
//
// # Workers seen
//
// A running Server registers itself in each of its queues every
// Heartbeat: a zset emq:{q}:workers (id → last heartbeat, server clock)
// and a hash emq:{q}:worker:<id> (host, pid, queues, concurrency,
// started, heartbeat) that expires after 1.5 heartbeats; it leaves at
// Shutdown. A reader ([Inspector.Workers]) prunes the entries whose hash
// expired, so a server that stops beating is gone after one missed
// heartbeat.
//
// # Inspector
//
// [Inspector] is the operator's face, each method one emq operation:
// Stats, Browse (with each task's type), Requeue, Delete, Pause, Resume,
// Cancel and Workers.
package jobs
