// Package cluster routes commands over a Valkey or Redis Cluster.
//
//	cl, err := cluster.NewClient(ctx, cluster.Options{Seeds: []string{"10.0.0.1:6379"}})
//	// or: opts, err := cluster.ParseURL("redis://:pw@10.0.0.1:6379,redis://10.0.0.2:6379")
//	defer cl.Close()
//	v, err := cl.Do(ctx, "GET", "user:42")
//	q, err := emq.Open(ctx, cl, "orders") // every transition to the queue's slot's primary
//
// A Client satisfies conn.Sender, so pipeline.Batch, dispatch's executors
// and emq (queues, workers, sharded queues) run over it unchanged.
//
// # Topology
//
// The Client reads which primary serves each of the 16,384 slots from
// CLUSTER SHARDS (Valkey, Redis 7.0+), or CLUSTER SLOTS on older servers,
// and keeps one pipelining conn.Client per primary, dialed on first use
// (it redials after faults and gives blocking commands connections of
// their own). It reads the topology again after a MOVED, after a
// connection fault, and every RefreshInterval with jitter; one read at a
// time however many ask, and those that calls ask for (a MOVED, a fault,
// a slot no primary serves) at most once per 100 ms: while a slot has no
// owner its calls fail at once with ErrNoNode, and do not read the
// topology each. A primary no longer in the topology (a demoted primary,
// a removed node) gets no new call from the read on, but its connection
// is closed only once the calls already written on it have ended with
// their replies (a demoted primary answers MOVED, which the
// redirects follow as any): nothing is cut in flight. A node
// that does not answer them is closed after 10 s (drain.Grace), and
// Close closes the draining ones at once. A replica leaving the read set
// drains the same way.
//
// # Routing
//
// A command goes to the primary serving the slot of its keys: CRC16 of
// each key's hashtag. Where the keys are is what the submission's facts
// say (cmds.Fact: a typed builder's key positions, or, for a command
// given as arguments, the key specs of the command table generated from
// the servers' own COMMAND INFO, applied where it was encoded); a
// submission of raw resp types is read once, when it is sent, and its
// facts go on to the primaries' connections. So EVAL/EVALSHA/FCALL
// numkeys, XREAD … STREAMS, MSET, SORT … STORE and MIGRATE … KEYS are
// found as COMMAND GETKEYS finds them, with no table read from a server
// at connect. Where a keyless command goes (one primary, or every one)
// is the table's request policy (Info.Policy).
// A command the table does not know (a module's, a newer server's, a
// renamed one) is routed as keyless: to the batch's first keyed command's
// primary, or any primary. Where that primary does not serve its keys it
// answers MOVED, which means the command did not run, and the Client
// sends it to the owner, as for any MOVED: it runs once, at the cost of a
// round trip. A table read from the server at run time would save that
// round trip but is the second table and the second key parser this
// package had, for commands no caller here sends; build such commands
// with their slot in mind, or route them with Dedicated. A command whose keys hash to
// different slots is refused before anything is sent (ErrCrossSlot); so
// is a transaction (MULTI … EXEC in one batch) that spans slots. A
// transaction in a batch is one unit: it goes whole, its MULTI and EXEC
// too, to its slot's primary, and the batch's other commands route as
// usual. A keyless command goes with the first keyed command of its
// batch, or to any primary when sent alone; one whose tips ask for every
// shard or node on either server (FLUSHALL, SCRIPT FLUSH, SCRIPT LOAD,
// CONFIG SET, CONFIG RESETSTAT, ACL SETUSER, DBSIZE, KEYS, INFO …) goes
// to every primary when sent alone, and their
// replies are combined as the tips say (DBSIZE sums). CLUSTER SLOT-STATS
// (Valkey 8.0), which each node answers for its own slots, goes to every
// primary (its tip is all_shards) but has no response policy, so this
// package merges its replies by a rule of its own, into what one node
// serving every slot would answer: for SLOTSRANGE the union of the
// primaries' entries in slot order; for ORDERBY metric [LIMIT n]
// [ASC|DESC] the n first of their entries (each primary's own first n)
// by the metric, descending unless ASC, ties in slot order, as a node
// orders its own. In a batch, where
// they would reach one node only, such commands are refused before
// anything is sent (a *RouteError matching ErrUnroutable), PING excepted.
//
// # WAIT
//
// WAIT (and WAITAOF) counts the replicas that acknowledged the writes made
// earlier on the same connection, so it must run where the caller's
// writes ran. In a batch it goes with the keyed command before it, and
// the batch is sent whole to that primary on one connection (a blocking
// command's own): SET k v; WAIT 1 100 returns how many of k's primary's
// replicas have the SET. When a write before it is refused and runs
// elsewhere (MOVED, ASK), the WAIT is sent again after it there. Sent
// alone, before any write of its batch, or in a batch whose commands go
// to several primaries, it is refused before anything is sent, with a
// *RouteError that says how: a batch, or Dedicated, whose connection
// carries both the writes and the WAIT.
//
// A batch whose commands all go to one primary is sent there as one
// pipeline and its replies pass straight through; one spread over several
// primaries is split, the parts sent to all of them at once, and the
// replies handed back in the caller's order. Commands of one slot keep
// their relative order. A blocking command (BLPOP, XREAD … BLOCK, …)
// holds its primary's connection until it ends, so a batch holding one
// must go to one primary: spread over several it is refused before
// anything is sent (a *RouteError).
//
// # Redirects and refusals
//
// MOVED, ASK, TRYAGAIN and CLUSTERDOWN are refusals: the node did not run
// the command, so sending it again is safe. Only the refused command is
// sent again: after MOVED to the new owner (the slot map is updated at
// once and the topology read again), after ASK with ASKING to the
// importing node (the map unchanged), after TRYAGAIN or CLUSTERDOWN to the
// slot's owner after a bounded backoff. A command refused inside a
// transaction is never sent alone, outside it: the server discarded the
// transaction (its EXEC answers EXECABORT, or is refused itself), so the
// transaction is sent again whole, MULTI to EXEC, where the refusal says
// (after ASK, ASKING before MULTI: the server keeps it for the whole
// transaction); one whose EXEC ran or that was discarded is not sent
// again, and the refusal is the refused command's reply.
//
// A command's bounds: MOVED and ASK are redirects, and past
// Options.MaxRedirects of them in a row (a redirect loop) it fails with a
// *RedirectError. TRYAGAIN and CLUSTERDOWN are waits: a slot migration
// answers TRYAGAIN to a multi-key command whose keys are split, or
// missing on the importing node (a new key), for as long as the
// migration lasts, and a failover answers CLUSTERDOWN until a replica
// takes over. The command waits (Options.RetryBackoff, doubled per wait,
// up to 1 s) and is sent again until it is served, until its ctx ends
// (ctx's error), or past Options.RetryTimeout from its first wait (a
// *RedirectError); each wait starts the redirect count again. NOSCRIPT
// is neither: the script is loaded on the node that answered it and the
// command sent there again, with ASKING when it came through ASK; it does
// not count against MaxRedirects, and after two reloads the NOSCRIPT is
// the command's reply.
//
// Nothing else is ever sent twice: a call that fails because a
// connection broke may or may not have run and fails with an error
// matching conn.ErrBroken.
//
// # Replica reads
//
// With Options.Reads on (a replica.Route other than replica.Primary), a
// submission whose every command is read-only by its facts (the command
// table's readonly flag: GET, HGETALL, ZRANGE, EVAL_RO, …; no write, no
// blocking command, no transaction, no WAIT) goes to a replica of the
// shard serving its slot: picked at random, by the lowest round trip, or
// in the client's availability zone (replica.Options). A split batch
// sends each part to a replica of its part's shard. The replicas are
// those the topology lists online in each shard (CLUSTER SHARDS'
// health, CLUSTER SLOTS' replica entries), each reached over a
// connection that sent READONLY when it was dialed (after AUTH), and
// probed every Reads.ProbeInterval. A replica that does not serve the
// slot any more (the slot moved) answers MOVED, and the command is sent
// to the owner the MOVED names, as any MOVED. With no replica up in a
// shard its reads go to the primary, or fail with an error matching
// replica.ErrNoReplica when Reads.Strict. A replica read may not see a
// write just acknowledged: see package replica, and put a WAIT in the
// write's batch for read-after-write. Replicas lists the replicas taking
// reads. With Reads off nothing of this runs: a call costs what it did.
//
// # Hooks
//
// Options.Node's Hooks and Observer (conn.Hook) see each submission the
// caller sent through the Client once, with its final replies, run by
// the Client rather than by the nodes' connections: a command answered
// MOVED, ASK, TRYAGAIN or NOSCRIPT and sent again is seen once, ending
// with the reply it finally got. The Client's own commands are not
// shown: the topology reads (CLUSTER SHARDS, CLUSTER SLOTS), the SCRIPT
// LOAD after a NOSCRIPT, the ASKING before a command that follows ASK.
// What the caller sends on a node's own connection (Node, Dedicated) is
// seen there, as on any conn.Client.
//
// # Printing
//
// Options and *Client print with the password redacted, in every fmt
// verb, as conn's types do.
//
// # Pub/sub
//
// PUBLISH and SPUBLISH are ordinary commands: SPUBLISH is routed by its
// channel's slot. A subscription has a connection of its own (package
// pubsub): SUBSCRIBE and PSUBSCRIBE work on any node, since a cluster
// relays PUBLISH to every node; SSUBSCRIBE must be made at the channel's
// owner, which Owner names. A sharded subscription does not follow its
// channel when the slot moves.
//
// # Scripts
//
// Every primary has its own script cache. dispatch's scripted executor
// registers its scripts with the Client; when a node answers NOSCRIPT for
// one, the Client sends one SCRIPT LOAD to that node (single-flight per
// node and script, with the same load-generation rule as dispatch: a
// command that met NOSCRIPT after a load completed is simply sent again)
// and re-sends the refused commands there. Split pipelines do the same
// per node, so each node loads a script once, when it first runs it.
package cluster
