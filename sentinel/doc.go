// Package sentinel connects to the primary of a Valkey or Redis master set
// through its sentinels, and follows it across failovers.
//
//	cl, err := sentinel.Connect(ctx, "redis+sentinel://:data-pw@s1:26379,s2:26379,s3:26379/mymaster/0?sentinel_password=sent-pw")
//	// or sentinel.NewClient(ctx, sentinel.Options{MasterName: "mymaster", Sentinels: […], …})
//	defer cl.Close()
//	_, err = cl.Do(ctx, "SET", "k", "v") // cl is a *conn.Client underneath: a conn.Sender
//
// A MasterSet (New) is the part that follows the primary; its Options are
// conn.Options whose Dialer goes to the current primary, for anything that
// takes conn.Options: conn.NewClient, pubsub.New (a Subscription reconnects
// to the new primary and restores its channels, reporting the gap as
// pubsub.ErrGap), cache.New (the Cache is emptied when its connection is
// ended, as after any lost connection, and tracks again on the new
// primary), and emq through the Client.
//
// # Finding the primary
//
// The sentinels are asked in order (SENTINEL MASTER for the master set's
// config-epoch, then SENTINEL GET-MASTER-ADDR-BY-NAME), and the list is
// completed with the sentinels the first knows (SENTINEL SENTINELS). A
// sentinel down, or refusing, is passed over; so is one whose
// config-epoch is older than one another sentinel told (ErrStaleSentinel:
// it has not yet learnt of a failover, or is cut off from the others;
// New asks every sentinel's epoch first, and when every answer is stale
// the newest of them is taken on the next pass). An answer is believed
// only once the node named answers role master (below): only then is it
// the Primary, and its sentinel asked first from then on; a node that
// cannot be reached, or is not a primary, has the next sentinel asked. When none answers the error is a
// *ResolveError holding each sentinel's failure: errors.Is matches
// ErrNoSentinel, ErrSentinelAuth when a sentinel refused the sentinel
// credentials (SentinelUsername, SentinelPassword: apart from the data
// nodes' Username and Password), ErrUnknownMaster when a sentinel monitors
// no master set of that name.
//
// Every connection to a data node starts with a role check, before the
// connection's handshake: HELLO 2 (with AUTH), whose reply names the role,
// or AUTH and ROLE where HELLO is refused. A node that answers anything but
// master is refused (a *RoleError, ErrNotPrimary: a sentinel behind the
// times, or one that lies), nothing else is sent to it, and the sentinels
// are asked again, the one that named it last (three times in all per
// dial; then the dial fails and the Client's backoff applies). A node
// that answers role master to a sentinel as current as the others is
// taken: two nodes that both say master to current sentinels (a split the
// sentinels have not yet resolved) cannot be told apart here.
//
// # During a failover
//
// The MasterSet subscribes to every sentinel's announcements. When a
// sentinel begins to fail the primary over (+try-failover), the old
// primary is fenced: every connection to it is ended at once (its socket
// shut down), and no new one is made to it while a sentinel still names
// it, for up to FailoverPause (or until every sentinel that tried has
// aborted with no replica selected); connections go to the replica the
// leader names (+selected-slave) as soon as it answers role master, then
// to the primary +switch-master names. The replica stops copying the old
// primary two of the sentinel's ticks after +try-failover at the
// soonest (a tick is 50–100 ms: the election, +selected-slave, then
// REPLICAOF NO ONE on the next tick), so when the announcement reaches the MasterSet
// and the replica has copied the old primary within that time, no write
// acknowledged through the MasterSet is lost to the switch itself. A
// client or replica starved of CPU for longer than that can lose the
// writes the old primary acknowledged in it (seen in tests at a load
// average of 10 on 2 cores, with the fence at +selected-slave, one tick
// before the promotion: 150 of 7,900 jobs), as asynchronous
// replication can. What
// asynchronous replication can lose when the primary dies (kill -9, a
// crash: writes acknowledged and not yet copied) it still loses. When the
// leading sentinel cannot be heard, +switch-master from any sentinel ends
// the connections to the old primary (a late +switch-master to a node
// since replaced is ignored, and an abort lifts the fence only when it
// comes from the sentinel that announced the promotion, before the
// switch), and a write answered READONLY, a
// gap in a sentinel's announcements, or a lost connection have the
// sentinels asked again.
//
// What the calls see, by conn's rules:
//
//   - A call in flight on an ended connection fails with conn.ErrBroken: it
//     may have run (on the old primary, before the replica stopped copying
//     it) and is never sent again, by the Client nor here. The caller
//     decides; emq's completions are fenced by their token, so a job whose
//     completion failed so is either completed (it ran) or reaped and run
//     again, never completed twice.
//   - A call on an idle connection that was ended finds the close before
//     sending (conn.ErrNotSent) and is sent on the next connection, to the
//     new primary.
//   - Calls made while there is no primary to dial fail at once with
//     conn.ErrNotConnected (wrapping ErrFailover, a *RoleError or a
//     *ResolveError); nothing was sent, so they may be retried. The Client
//     redials with its backoff (MinBackoff, MaxBackoff), so service comes
//     back within the sentinels' failover time plus one backoff.
//
// # Replica reads
//
// With Options.Reads on (a replica.Route other than replica.Primary), a
// Client sends every submission whose commands are all read-only by
// their facts (the command table's readonly flag; no write, no blocking
// command, no transaction, no WAIT) to one of the master set's replicas,
// and the rest to the primary. The replicas are those a sentinel lists
// (SENTINEL REPLICAS) neither down, disconnected nor cut off from their
// primary, listed again every Reads.ProbeInterval and at once after a
// failover, and probed (PING for the round trip, INFO server for Valkey
// 8.1's availability_zone). A replica whose connection is down is passed
// over; with none left, reads go to the primary, or fail with an error
// matching replica.ErrNoReplica when Reads.Strict. The embedded
// conn.Client (cl.Client) always goes to the primary: a read that must see
// the latest write goes there, or follows a WAIT in the write's batch (see
// package replica for what a replica reader gives up). Replicas lists the
// replicas taking reads. With Reads off, the Client's calls are the
// conn.Client's, at its cost.
//
// # URLs
//
//	redis+sentinel://[user[:password]@]host[:port][,host[:port]…]/master[/db][?option=value…]
//
// valkey+sentinel:// is the same; rediss+sentinel:// and valkeys+sentinel://
// use TLS. The user info is the data nodes'; the sentinels' credentials
// are the options sentinel_username and sentinel_password. See ParseURL.
//
// The MasterSet's goroutines (a watcher per sentinel, a checker) are its
// own and end at Close.
package sentinel
