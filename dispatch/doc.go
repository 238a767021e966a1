// Package dispatch runs EchoMQ's Lua transitions on a server: the
// executor layer (L3) between the connection and the queue verbs.
//
// # Scripts and arguments
//
// A Script is a Lua source with its SHA1, computed once by NewScript, and
// a name: "enqueue" is sent as EVALSHA <sha> by the scripted executor and
// as EMQ.ENQUEUE by the native one. Args collects a call's KEYS then ARGV,
// each encoded as a RESP bulk string the moment it is added, so sending a
// call is one header, a pre-encoded head and one copy. An Args, like a
// Batch, is reused across calls and allocates nothing in steady state.
//
// # Executors
//
// The verbs call an Executor: Eval for one call, whose reply is handed to
// a callback on the caller's goroutine, and EvalBatch for many calls sent
// as one pipeline. A script's error reply ("EMQKIND job id must be
// JOB-namespaced", a Lua runtime error) reaches the caller as a
// *resp.ServerError, text byte for byte; it is a reply, not a fault.
//
// Scripted, the default, sends EVALSHA first and never EVAL. When the
// server answers NOSCRIPT (a cold or flushed script cache) it sends one
// SCRIPT LOAD, checks that the SHA the server returns is ours, and sends
// again only the commands that failed. Native sends the module commands of
// a server that has the EchoMQ module and loads nothing.
//
// # One load, however many callers
//
// Sixty-four goroutines calling a cold script at once, or a pipeline of a
// thousand EVALSHAs, all get NOSCRIPT; the server must still see exactly
// one SCRIPT LOAD. Two mechanisms make it so.
//
// A singleflight group (golang.org/x/sync/singleflight) keyed by SHA
// makes callers whose NOSCRIPT arrives while a load is in flight wait for
// that load and share its outcome, error included.
//
// A load generation closes the gap singleflight leaves: a caller whose
// NOSCRIPT arrives just after the load finished would find no flight and
// start a second one. So each executor counts, per script, the load
// attempts that have completed, and every command notes that count before
// it is sent. On NOSCRIPT, if an attempt completed since the send, the
// caller does not load: it re-sends (or, if that attempt failed, returns
// its error). Only a caller that saw no completed attempt since its send
// joins or leads a load, and the check and the join are one step under
// the script's lock, which the load also takes to bump the count. A
// second load therefore starts only for a command sent after the first
// load completed, that is after the server lost the script again (SCRIPT
// FLUSH, a restart, a failover), and then exactly one.
//
// A command is sent at most three times; after that the call fails with
// ErrReloadLimit instead of looping on a server that keeps losing its
// scripts. A script that does not compile fails its load once, and every
// caller waiting on that load gets the same *LoadError, which carries the
// server's text. Such an error (an ERR reply to SCRIPT LOAD) is kept: the
// executor never loads that script again, and later calls that meet
// NOSCRIPT get the same error. A load that failed for a passing reason (a
// broken connection, BUSY, LOADING, …) is tried again by the next command
// sent after it. A load is never cancelled by one caller's context: the
// others wait on it. A connection that breaks during a load fails its
// waiters with an error matching conn.ErrBroken.
//
// # Batches
//
// EvalBatch writes every call of a Batch at once. After the replies, the
// calls that answered NOSCRIPT are collected; each distinct script among
// them is loaded once under the rule above, then exactly those calls are
// sent again as one pipeline, in their original relative order, and their
// replies are put back at their indices. Replies are retained in the
// Batch's own memory, valid until its next EvalBatch or Reset.
//
// # Order and ownership
//
// Every caller gets its own reply: Eval waits on its own pooled call, a
// Batch maps replies to calls by index, and a caller whose context ends
// leaves its slot for the connection's reader to drain, as package conn
// describes. Stats exposes atomic counters of the loads, NOSCRIPT replies
// and EVALSHAs a Scripted executor saw, for benchmarks and the gate.
package dispatch
