// Package replica configures replica reads: read-only commands sent to
// the primary's replicas instead of the primary, by a sentinel.Client
// (the master set's replicas, as SENTINEL REPLICAS lists them) or a
// cluster.Client (each slot's shard's replicas, from CLUSTER SHARDS or
// CLUSTER SLOTS, on connections that sent READONLY). Replica reads are
// opt-in: give sentinel.Options.Reads or cluster.Options.Reads a Route
// other than Primary.
//
//	cl, err := sentinel.NewClient(ctx, sentinel.Options{…, Reads: replica.Options{Route: replica.Latency}})
//	cl.Do(ctx, "GET", "k")      // a replica
//	cl.Do(ctx, "SET", "k", "v") // the primary
//
// # Which commands
//
// A submission (one command, or a pipeline.Batch) goes to a replica when
// every command in it is read-only by the server's own command table
// (COMMAND INFO flag readonly, which the builders of package cmds and the
// table behind Do carry in each command's cmds.Fact): GET, HGETALL,
// ZRANGE, SCAN, EVAL_RO, FCALL_RO, … A submission holding anything else
// (a write, a command the table does not know, a blocking command, a
// transaction, WATCH, WAIT, a script run with EVALSHA) goes whole to the
// primary, as do Dedicated connections.
//
// # What a reader gives up
//
// Replication is asynchronous. A read from a replica sees the primary's
// writes only once they reached that replica: a write acknowledged by the
// primary may not be visible yet (replication lag, usually under a
// millisecond on a quiet network, seconds under load or after a resync),
// so read-your-writes is off, and two reads in a row may go to two
// replicas and see the data go back in time. A replica that lost its
// primary answers from what it has (or MASTERDOWN, when configured with
// replica-serve-stale-data no).
//
// What runs over the client reads the same way: a queue opened on it
// (emq.Open) sends its scripts to the primary (EVALSHA is no read), but
// its plain reads (a job's fields, a set's size) may go to a replica and
// lag. Open the queue on the primary (a sentinel.Client's cl.Client) when
// those must be current.
//
// # Read after write
//
// When a read must see a write, either read from the primary (a
// sentinel.Client's embedded conn.Client, cl.Client, always goes to the
// primary; on a cluster, Dedicated), or make the write wait for the
// replicas: WAIT numreplicas timeout, sent on the connection that made the
// write, in the same batch, returns how many replicas have it.
//
//	var b pipeline.Batch
//	b.Add("SET", "k", "v")
//	b.Add("WAIT", "2", "100") // every replica, 100 ms at most
//	err := b.Exec(ctx, cl)    // one connection, on the primary
//	// b.Reply(1).Int == 2: every replica has the SET; a replica read sees it.
//
// WAIT counts replicas, not which ones: with fewer acknowledgements than
// replicas, a read may still go to one that lacks the write.
//
// # When replicas fail
//
// The replicas are probed every ProbeInterval. A replica whose
// connection is down is passed over; with none left, reads go to the
// primary, or, with Strict, fail with an error matching ErrNoReplica. A
// read in flight when its replica's connection breaks fails with
// conn.ErrBroken and is not sent again (as any call); so do the reads in
// flight on a node a sentinel reconfigures at a failover, since it ends
// the node's client connections (CLIENT KILL TYPE normal), and the
// connection is dialed again for the next read. A replica promoted
// to primary keeps serving the reads routed to it until the next listing
// takes it off the replicas; writes go to it as the primary from the
// failover on.
package replica
