// Package conn is a pipelining-first connection to Valkey or Redis.
//
// # Pipelining
//
// A Conn is safe for concurrent use. Commands from any number of
// goroutines are appended to one write buffer and written together: when
// the connection is idle the sender writes its own command at once; when
// it is busy the writer goroutine gathers everything sent meanwhile into
// one write. Replies complete submissions strictly in the order they were
// sent. No goroutine is started per call.
//
// # Who reads, and how long a reply lives
//
// Replies are decoded without copying (package resp): a reply views the
// connection's read buffer and is valid only until the next reply is read.
// The goroutine that reads hands each reply to the submission's Handler
// while it is valid:
//
//   - DoFunc (and pipeline.Batch) copy the reply into a pooled arena owned
//     by the call, so the caller reads it after the reader moved on; the
//     arena's memory is reused, so the hot path allocates nothing. The
//     reply passed to DoFunc's fn is valid only during fn.
//   - A Handler given to Send sees each reply during its Reply call only;
//     it must copy what it keeps (resp.Arena, Value.Clone).
//   - Do returns a reply that owns its memory (it allocates).
//
// A caller that waits for its own replies (DoFunc, Do, pipeline.Batch,
// through Exchange) reads them on its own goroutine when nobody else is
// reading, which saves two goroutine switches per round trip; otherwise
// the connection's reader goroutine reads, and completes callers in order.
//
// # Faults and cancellation
//
// Every call ends exactly once, with its own reply or an error; no call
// ever receives another's reply. A server error reply is a value (a
// *resp.ServerError); the connection lives on. An I/O error, a protocol
// error, the peer closing, or ReadTimeout passing with replies owed and
// no byte arriving fail every queued and in-flight call with a
// *BrokenError (errors.Is ErrBroken, and the cause), and the connection is
// done: use a Client to redial. A caller whose context ends returns
// ctx.Err() at once; its command stays queued and its late reply is read
// and dropped, so the connection stays in sync.
//
// RESP3 push frames never take a caller's place: they go to Options.OnPush
// (on the reading goroutine; with OnPush set, the reader goroutine reads
// continuously so pushes arrive promptly), or are dropped.
//
// # Connecting
//
// Dial performs the handshake in one batch: HELLO 3 with AUTH and SETNAME,
// plus SELECT; when the server refuses HELLO it falls back to RESP2 with
// AUTH, CLIENT SETNAME and SELECT. TLS, unix sockets and URLs (ParseURL:
// redis://, rediss://, valkey://, valkeys://, unix://) are supported. A
// password never appears in an error or in Options.String.
//
// Client owns a connection, redials after a fault with exponential backoff
// and jitter, fails calls made during an outage at once (ErrNotConnected),
// never re-sends a command by itself, and keeps a few dedicated
// connections for blocking commands (Client.Blocking).
package conn
