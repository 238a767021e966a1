// Package cache serves reads from the client's own memory and keeps them
// true with the server's help: client-side caching with server-assisted
// invalidation (CLIENT TRACKING), on Valkey and Redis 6+.
//
//	c, err := cache.New(ctx, cache.Options{Options: conn.Options{Addr: "127.0.0.1:6379"}})
//	defer c.Close()
//	v, found, err := c.GetInto(ctx, buf[:0], "user:42", time.Minute)   // GET, from memory when it can
//	err = c.DoCached(ctx, time.Minute, fn, "HGET", "user:42", "name") // any cacheable read
//	vals, err := c.MGet(ctx, time.Minute, "a", "b", "c")               // per key; the misses pipelined
//	_, err = c.Do(ctx, "SET", "user:42", "…")                          // a write: read your writes
//
// # What is cached
//
// Read-only commands whose reply depends on one key (argument 1) and
// nothing else, as the servers' own command table says (package cmds,
// generated from COMMAND INFO): the readonly flag, one key as argument 1
// (EXISTS k, not EXISTS a b), and no nondeterministic_output tip. So GET,
// GETRANGE, STRLEN, EXISTS, TYPE, the bit reads; HGET, HMGET, HGETALL and
// the other hash reads; the set, sorted-set and list reads (SMEMBERS,
// ZRANGE, ZSCORE, LRANGE, LPOS, …); XLEN, XRANGE, XREVRANGE; EXPIRETIME,
// GEOPOS, GEOSEARCH and the like. Not TTL or PTTL (they change with time),
// nor SRANDMEMBER, HSCAN and the like (tagged nondeterministic), nor
// commands of several keys. A missing key is cached too (a nil GET): the
// server tracks the key's name, so its creation invalidates it. Server error replies are
// never kept.
//
// A reply is kept for about the TTL the call gives, and never past the
// key's own expiry: every read from the server is sent as <command>
// followed by PTTL <key> in the same write, and the entry is not served
// once send time + PTTL has passed on the real clock. (PTTL runs after
// the command; a change to the key in between is itself an
// invalidation, and the reply is then not kept.) The caller's TTL is a
// freshness budget, not what keeps the cache true (the server's
// invalidations do), so it is checked against a clock the Cache moves
// every 5 ms: a hit then costs an atomic load instead of a clock read,
// and an entry may outlive its TTL by a few milliseconds.
//
// # Never stale: the argument
//
// The server remembers the keys a connection read (or, in Broadcast
// mode, the prefixes it asked for) and sends an invalidation when one
// changes; the Cache drops what it holds for the key. Three things can
// go wrong, and each is closed:
//
// The read in flight. A read is sent, the key changes, the invalidation
// is applied, and only then the (old) reply arrives: kept, it would be
// stale for ever, since the server has already sent the one invalidation
// it owed. Every key has a generation, bumped by each invalidation of
// it, and the store an epoch, bumped by each flush. A read records both
// (and holds a "pending" mark on the key so that its generation lives
// while the read is in flight) before it is sent; its reply is kept only
// if neither moved by the time the reply arrives, checked under the same
// lock that invalidations take. Under RESP3 the invalidations arrive on
// the connection that reads, and the connection's reader goroutine
// applies pushes and replies strictly in stream order (the loader's Done
// runs there): the server answers a read at the moment it runs it and
// sends an invalidation for every later change of the key after that
// answer, so a reply is true from the moment it is read until the next
// invalidation of its key in the stream. An invalidation read before the
// reply came from a change before the read ran (the reply already shows
// it) and only costs a miss, since the generation check discards the
// reply conservatively. Under RESP2 the invalidations come on another
// connection (REDIRECT), in no order relative to the reply: the
// generation check alone decides, and an invalidation that arrives after
// the reply was kept removes it, as for any entry.
//
// The lost connection. The server forgets a connection's tracking when
// the connection ends. When the reading connection, or under RESP2 the
// invalidation connection, fails (CLIENT KILL, a server restart, a
// network fault, a failover that drops clients), the session is marked
// dead, the whole cache is emptied and the Cache redials and turns
// tracking on again; reads meanwhile fail with ErrNotConnected. Every
// hit checks that its session is still live (non-blocking receives on
// the connections' done channels), so nothing is served from memory
// once the connection is known lost, before the supervisor has emptied
// it. A reply kept on a session checks, under the shard lock, that the
// session is not dead. A fault that sends no error (a silent network: a
// NAT, a firewall or a load balancer that forgets a connection, which
// the server then closes, tracking and all, while the client is told
// nothing) is caught by the health check: every HealthInterval (1 s) it
// asks each connection the tracking depends on, the reading one (INFO
// commandstats: the tracking belongs to its client id, under RESP2's
// REDIRECT too) and under RESP2 the invalidation one (a PING), and each
// must answer within HealthTimeout (3 s) in all, else the session is
// treated as lost; such a fault can therefore leave entries served for
// at most about their sum.
//
// The flush. FLUSHALL and FLUSHDB (of any database, ASYNC too; DEBUG
// RELOAD likewise) send an invalidation with a null key list (so does
// the server when it gives up tracking): the epoch moves and everything
// is dropped. A key that expires or that maxmemory evicts on the server
// is invalidated like any change. The servers track key names over
// every database, so MOVE and COPY … DB invalidate the key's name (and a
// change to the same name in another database costs a miss).
//
// SWAPDB. The servers send no invalidation for SWAPDB, nor a keyspace
// event (Redis 7.0.15 and Valkey 8.0.1, in every mode and protocol,
// alone, in a transaction or in a script): the keys keep their names
// while the database under them changes. So the Cache refuses SWAPDB
// (ErrRefused, nothing sent), and for a SWAPDB it cannot refuse (another
// client's, or one in a script) the health check compares the server's
// count of SWAPDB calls (INFO commandstats, which counts those in
// transactions and scripts too) with the one it read before, and empties
// the cache when it moved (Stats.Flushes), tracking kept: a SWAPDB by
// another client, of any two databases, can leave entries served for at
// most HealthInterval + HealthTimeout, and Sync does not wait for it.
// Where the server refuses INFO (an ACL without it, a renamed command),
// or its reply is over the connection's Limits, the check still proves
// the connection answers, but a SWAPDB by
// another client goes unseen: an entry is then served until its TTL or
// the key's expiry, or until any change to its key's name, so give such
// a Cache short TTLs, or do not swap its database. SELECT, RESET and
// HELLO (which would move the Cache's connection to another database or
// reset its tracking) and a MULTI without its EXEC are refused by the
// connection (a *conn.CommandError).
//
// What the guarantee is: a read through the Cache that starts after a
// write through the same Cache returned (Do, DoFunc) sees that write or
// a later one. (DoFunc sends the command and a PING together: the server
// sends the invalidations a command causes before it answers the next
// command, so the PING's reply follows them. In Broadcast mode the
// server sends them at the end of its event loop, and under RESP2 on the
// other connection, so there DoFunc waits for a PING sent after the
// reply instead: one more round trip.) A write through another client is seen once its
// invalidation has arrived, which is a matter of the network; Sync waits
// for it (one round trip). The cache is therefore exactly as fresh as
// the invalidation stream, and never serves a reply older than the last
// invalidation it applied.
//
// # Modes and protocols
//
// Default tracks each key read; Broadcast (BCAST) receives an
// invalidation for every change under Options.Prefixes, read or not,
// and caches only keys under them; OptIn (OPTIN) tracks only the reads
// the Cache caches, each preceded by CLIENT CACHING yes in the same
// write (a submission of counted commands is written contiguously, so
// nothing comes between them). Under RESP3 the reading connection gets
// the pushes itself; under RESP2 a second connection subscribes to
// __redis__:invalidate and the reading connection turns tracking on
// with REDIRECT to it.
//
// Every submission the Cache sends (a load, the tracking setup, the
// health check's INFO, a command and its PING, ASKING and the command
// after it, CLUSTER SLOTS) carries the facts of its commands
// (cmds.Fact), made where the Cache encodes them, so that its connection
// does not read the bytes back; a caller's resp.Cmd given to DoFunc is
// read once, for its fact.
//
// # Hooks
//
// Options.Hooks and Observer (conn.Hook) see each command the caller
// sent through the Cache that went to the server, once, with its reply:
// a miss's read, a write. A hit sends nothing and is not seen. The
// Cache's own commands are not shown: CLIENT TRACKING, the PTTL read
// beside each miss and OptIn's CLIENT CACHING, the PING after a write,
// Sync's and the health check's PINGs, a ClusterCache's CLUSTER SLOTS
// and the ASKING before a command it follows ASK with. A ClusterCache
// runs the hooks in the Cache of each node a call goes to: a read or
// write answered MOVED or ASK and sent again is seen once per node.
//
// # Memory
//
// Options.MaxBytes bounds the cache: replies, lookup keys and a fixed
// overhead per entry are counted. The store is sharded by key (up to 64
// shards, each with its own lock and an equal part of the budget) and
// evicts by SIEVE (NSDI 2024): entries in insertion order with a visited
// bit, a hand that clears bits from the oldest towards the newest and
// evicts the first unvisited entry. A hit only sets the bit under the
// shard's read lock, so concurrent hits on hot keys do not contend on a
// list as LRU would, and SIEVE keeps a skewed hot set at least as well
// as LRU. A reply over MaxEntryBytes is returned but not kept.
//
// # Cluster
//
// ClusterCache keeps a Cache per primary, each tracking its own node,
// and routes reads by slot. A MOVED answer refreshes the slot map (CLUSTER
// SLOTS, also read every RefreshInterval) and the call is retried on the
// new owner; every node whose slots changed is emptied. Replies of keys
// that do not exist (PTTL -2) are not kept on a cluster: once the key's
// slot moves, the key may be created on the new owner, which the node
// that answered would never report. A kept reply is of a key that exists
// on its node, and moving it away (MIGRATE) deletes it there, which is
// an invalidation. A failover is where a cluster cache can lag: the old
// primary's entries are served until the new primary's writes reach it
// by replication (each an invalidation), or the slot map refresh shows
// the move (RefreshInterval), whichever comes first; a primary cut off
// from the cluster but still answering this client serves its entries
// until the refresh. Hits never ask a node, so nothing quicker can tell
// the client that the node lost its slots. During a slot migration, a
// key already moved is answered ASK by its old owner: a write (Do) is
// sent to the importing node after ASKING, and a read is read there the
// same way and not kept. MGet groups its keys by node and reads each
// group through that node's Cache at once.
package cache
