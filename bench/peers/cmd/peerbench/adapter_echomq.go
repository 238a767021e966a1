package main

// This file is the ONLY place to change to put echomq-go into the peer
// comparison. Nothing else in bench/peers needs to know the library's API.
//
// To wire it, make newEchomq return a runner (see runner.go) that:
//
//   - newEchomq(cfg config) (runner, error): connects to cfg.addr. In
//     goroutine mode (cfg.goroutines > 1) it must be safe for
//     cfg.goroutines concurrent callers; size any pool/multiplexing to that.
//     cfg.depth is the batch size, for sizing reusable buffers.
//   - run(ctx, w, n): n ops of w.name (wPing, wSet, wGet, wEnqueue):
//   - w.goroutines > 1: call fanOut(ctx, w, n, func(seq uint64) error {...})
//     and send ONE command per call (the library's own batching decides).
//   - else w.depth == 1: batches(n, 1, ...) with the one-command call.
//   - else batches(n, w.depth, func(first uint64, k int) error {...}):
//     ops first..first+k-1 in one pipeline over one connection.
//   - commands: PING; SET setKey w.payload; GET setKey;
//     EVALSHA w.sha 2 <row key> pendingKey <id> w.payload, where the row
//     key comes from w.appendJobKey(buf[:0], seq) (allocation-free) or
//     w.jobKey(seq) (strings) and the id is the key's last idLen bytes.
//     The script is already loaded by main (SCRIPT LOAD before timing), so
//     NOSCRIPT never happens in a run.
//   - replies: PING -> "PONG", SET -> "OK", GET -> w.payload, EVALSHA ->
//     integer 1. A wrong reply or a server error reply: w.fail(seq, got)
//     and carry on. Return a non-nil error only for I/O/protocol failures.
//   - close(): release connections.
//
// Until then it reports errNotWired, and run-peers.sh skips it with a note.
func newEchomq(cfg config) (runner, error) {
	return nil, errNotWired
}
