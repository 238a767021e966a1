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
// time however many ask. Primaries no longer in the topology are closed.
//
// # Routing
//
// A command goes to the primary serving the slot of its keys: CRC16 of
// each key's hashtag. Where the keys are is read from the server's own
// command table at connect (COMMAND key specs), not from a hand-kept list,
// so EVAL/EVALSHA/FCALL numkeys, XREAD … STREAMS, MSET and commands a
// later server adds are all routed right. A command whose keys hash to
// different slots is refused before anything is sent (ErrCrossSlot); so
// is a transaction (MULTI … EXEC in one batch) that spans slots. A keyless
// command goes with the keyed commands of its batch, or to any primary;
// one whose server tips ask for every shard (FLUSHALL, SCRIPT FLUSH,
// CONFIG RESETSTAT, DBSIZE, KEYS …) and SCRIPT LOAD go to every primary,
// and their replies are combined as the tips say (DBSIZE sums).
//
// A batch whose commands all go to one primary is sent there as one
// pipeline and its replies pass straight through; one spread over several
// primaries is split, the parts sent to all of them at once, and the
// replies handed back in the caller's order. Commands of one slot keep
// their relative order.
//
// # Redirects and refusals
//
// MOVED, ASK, TRYAGAIN and CLUSTERDOWN are refusals: the node did not run
// the command, so sending it again is safe. Only the refused command is
// sent again: after MOVED to the new owner (the slot map is updated at
// once and the topology read again), after ASK with ASKING to the
// importing node (the map unchanged), after TRYAGAIN or CLUSTERDOWN to the
// slot's owner after a bounded backoff. Past Options.MaxRedirects the
// command fails with a *RedirectError. Nothing else is ever sent twice:
// a call that fails because a connection broke may or may not have run
// and fails with an error matching conn.ErrBroken.
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
