// Package conn connects to Valkey or Redis and runs commands over one
// pipelined connection shared by every goroutine.
//
// # Connecting and running a command
//
// Most programs want a Client: it dials, redials after a fault, and
// gives blocking commands a connection of their own.
//
//	cl, err := conn.NewClient(ctx, conn.Options{Addr: "127.0.0.1:6379"})
//	// or: opts, err := conn.ParseURL("redis://:password@127.0.0.1:6379/0")
//	defer cl.Close()
//
//	var b cmds.Builder
//	n, err := kv.Call(ctx, cl, b.Incrby("visits", 5).Build(), cmds.Int) // the one call: typed, 0 allocations
//	v, ok, err := kv.CallNull(ctx, cl, b.Get("greeting").Build(), cmds.String)
//
// The one call for any command is package kv's Call (CallNull for a
// reply that can be nil) over a command built with package cmds and the
// decoder cmds names for its reply; in a pipeline the same command and
// decoder make a typed handle (pipeline.Decode). kv's named helpers
// (kv.Get, kv.Set, …) are short names for the commands used most. What
// this package offers under them is the raw layer:
//
//	v, err := cl.Do(ctx, "SET", "greeting", "hello") // ad hoc: a reply that owns its memory (it allocates)
//	err = cl.DoFunc(ctx, resp.Command(buf[:0], "GET", "greeting"), func(v resp.Value) error {
//		… // v is valid only during fn; DoFunc allocates nothing
//	})
//
// Do takes its arguments as values: strings, []byte, every integer type,
// floats (written as the server reads them: strconv 'f' format, "inf"),
// and a time.Duration as a blocking command's timeout (see Conn.Do for
// the rules and what is refused with ErrBadArg). DoInt is DoFunc for an
// integer reply, kept for the Sender interface; new code reads an
// integer with kv.Call and cmds.Int.
//
// Dial gives a single Conn without redialing.
//
// # The client interface: Sender
//
// Conn, Client and cluster.Client satisfy Sender, which is what package
// kv, pipeline (explicit batches and long streams), dispatch (scripts)
// and emq (the job queue) send through, and what a program should hold.
// It uses only public types, so it can be implemented outside this
// module: a fake for tests, or a wrapper around another Sender. Its one
// primitive is Send(ctx, Cmds, Handler): a submission of counted
// commands (Cmds: N commands encoded back to back, made by CmdsOf or
// CmdsOfBatch, read back with Cmds.All) and the Handler that receives
// their replies in order, then Done once. SendFunc turns a Send function
// into a whole Sender (Do, DoFunc and DoInt built on it):
//
//	fake := conn.SendFunc(func(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
//		for i, args := range cmds.All() {
//			h.Reply(i, answer(args)) // a resp.Value
//		}
//		h.Done(nil)
//		return nil
//	})
//	kv.Set(ctx, fake, "k", 1)
//
// Cmds and Handler are aliases of the module's plumbing types rather
// than copies, so that a Sender written outside forwards a submission to
// a Conn or Client as it is, with no conversion nor allocation; Send
// stays the primitive (rather than a smaller Do-only interface) because
// pipelines, streams and the dispatch executors need one submission of
// many commands with their replies in place, and a fake or wrapper must
// see those too. A Handler is the module's to implement: a Sender only
// calls it.
//
// # The guarantee
//
// Every call ends exactly once, with its own reply or an error; no call
// ever receives another's reply, and nothing is re-sent after a failure
// that may have reached the server. It holds against every call a user
// can make:
//
//   - Commands are counted where they are encoded: a resp.Cmd holds
//     exactly one command, a resp.Cmds (or a pipeline.Batch) knows how
//     many it holds, and one built wrong (no arguments, another number of
//     arguments than Begin announced) is refused before anything is sent.
//   - Commands that change the reply model of a shared connection are
//     refused before sending, with a *CommandError (errors.Is
//     ErrCommandRefused) that names the command: the subscribe family,
//     MONITOR, CLIENT REPLY OFF|SKIP, RESET, QUIT, SYNC, and HELLO,
//     SELECT and AUTH (the handshake's business: see Options). A
//     transaction is sent whole (MULTI … EXEC in one pipeline.Batch) or
//     on a connection lent by Client.Dedicated, where WATCH is allowed.
//   - A command with an argument longer than the server takes
//     (Options.MaxArg: its proto-max-bulk-len, 512 MiB by default) is
//     refused before sending, with an *ArgTooLargeError (errors.Is
//     ErrCommandRefused): the server would answer it with a protocol
//     error and close the connection, and every call sharing it would
//     fail not knowing whether it ran.
//   - Blocking commands (BLPOP, BRPOP, BLMOVE, BLMPOP, BRPOPLPUSH,
//     BZPOPMIN, BZPOPMAX, BZMPOP, XREAD and XREADGROUP with BLOCK) go to
//     a dedicated connection of the Client's by themselves, and the call
//     returns only once it has ended: with its reply; with ErrBroken as
//     soon as that connection breaks (its slot is given back); or, when
//     its context ends first, once the server no longer holds it. The
//     Client then sends CLIENT UNBLOCK with the lent connection's CLIENT
//     ID on its shared connection, which makes the command reply as if
//     its timeout had passed, popping nothing, and the call returns
//     ctx.Err(); a reply that won the race is returned instead, as are
//     the replies of a submission holding other commands besides (an
//     LPOP in the batch ran), so an element is either still on the
//     server or the caller's. Only when
//     the server cannot be told (no connection to it can be made, or
//     CLIENT UNBLOCK is refused) does the Client close the lent
//     connection and return ctx.Err() at once: the server ends the
//     command when it sees the close, and an element it popped before
//     then is lost.
//   - WAIT and WAITAOF count the writes of the connection they run on,
//     so a Client sends them on its shared connection, where the
//     caller's writes went (in a submission with other blocking
//     commands they go with those, after the submission's own writes).
//     There they hold up the commands queued behind them for up to their
//     timeout, and a Client refuses them without one (a *CommandError).
//     After a redial, writes made on the connection that failed are not
//     counted. On a bare Conn blocking commands are sent in line.
//     Either way the liveness check waits for the command's own timeout
//     (for ever while a timeout of 0 is outstanding) instead of
//     breaking the connection.
//   - A context already done sends nothing.
//   - A reply's decoded size is bounded (Options.Limits: resp.Limits,
//     MaxReplyBytes 64 MiB by default), so memory stays in proportion to
//     the wire. A well-formed reply over the limits is skipped on the
//     wire in bounded memory and fails its own call alone with a
//     *resp.ReplyTooLargeError (errors.Is resp.ErrReplyTooLarge; in a
//     pipeline.Batch, that command's Err) naming the limit to raise; the
//     connection and every other call go on. A push over the limits is
//     skipped and given to OnPush as a resp.TooLarge value.
//
// # Faults and cancellation
//
// A server error reply is a value (a *resp.ServerError); the connection
// lives on, as it does after a reply skipped for its size (a
// *resp.ReplyTooLargeError). An I/O error, a protocol error (bytes that
// are not RESP), the peer closing, or
// ReadTimeout passing with replies owed and no byte arriving fail every
// queued and in-flight call with a *BrokenError (errors.Is ErrBroken,
// and the cause), and the Conn is done; a Client dials a new one in the
// background and fails calls made meanwhile at once with ErrNotConnected
// (nothing was sent; it never matches ErrBroken). A call on a Conn that
// has already failed, or that the server closed while it was idle (its
// timeout, CLIENT KILL: found before sending, on TCP and unix sockets
// under Linux, over TLS too; the fault matches ErrIdleClosed), sends
// nothing and gets the Conn's fault, matching ErrNotSent besides: the
// command did not run, so sending it again elsewhere is safe; a Client sends
// such a call on the connection its supervisor dials next, or fails it
// with ErrNotConnected when that dial fails; so are the calls made
// meanwhile, rather than failed at once. A caller whose context ends
// returns ctx.Err() at once; its command stays queued and its late reply
// is read and dropped, so the connection stays in sync.
//
// RESP3 push frames never take a caller's place: they go to
// Options.OnPush (on the reading goroutine; with OnPush set, the reader
// goroutine reads continuously so pushes arrive promptly), or are
// dropped.
//
// # Connecting
//
// Dial performs the handshake in one batch: HELLO 3 with AUTH and
// SETNAME, plus SELECT; when the server refuses HELLO it falls back to
// RESP2 with AUTH, CLIENT SETNAME and SELECT. TLS, unix sockets and URLs
// (ParseURL: redis://, rediss://, valkey://, valkeys://, unix://) are
// supported. A password never appears in an error, nor when Options, a
// Conn or a Client is printed with any fmt verb.
//
// # Hooks and observing
//
// Options.Hooks wrap every command and every pipeline a Conn or Client
// sends: a Hook's BeforeCommand as a command is queued (with its
// CommandInfo: the upper-case name, the script's SHA1 for EVALSHA; and
// a RawCommand: the command as encoded and its keys, as views, from the
// facts its encoder knew), its AfterCommand once,
// with the reply or the error that ended it (a server error reply, a
// refusal, a done ctx, a fault) and the duration since it was queued;
// BeforePipeline and AfterPipeline around a submission of several
// commands. Every command is seen exactly once, in order; a Client runs
// the hooks once per submission, even when it moves one that nothing had
// sent onto its next connection. The rule: hooks see each command the
// user submitted, once, with its final outcome; the module's own
// housekeeping is not shown. So what a Client sends on its own behalf
// (CLIENT UNBLOCK for a cancelled blocking call, CLIENT ID for a lent
// connection under RESP2) and the handshake are not seen, nor, through
// the packages built on conn, a cache's CLIENT TRACKING, the PTTL beside
// each read and its PINGs (package cache), a cluster's topology reads,
// SCRIPT LOADs and the MOVED or ASK answers it follows (package cluster:
// it runs the hooks itself, once per submission), a subscription's
// health-check PING (package pubsub). The context a Before function returns
// reaches the matching After functions, which is how a tracer carries
// its span (contrib/otel; contrib/prometheus counts with one).
//
// A Hook is a struct of functions rather than a middleware around
// Sender: the connection calls them at the points where a command is
// queued and where its reply is read, so they see what no wrapper of
// Send can (the refusals a Client makes, each command of a pipeline as
// its reply arrives, one submission moved to another connection) and
// cost nothing when absent: without hooks (nor an Observer) a connection
// does no hook work at all, a pointer check per submission; a hook that
// keeps its context allocates nothing per command in steady state.
//
// A panic in a hook, in OnPush, in Options.Dialer or in a Handler (a
// pipeline.Stream's ReplyFunc among them) is the user's bug,
// but it runs where the caller cannot recover it (the reader goroutine,
// the redial) or would leave the connection's reader or writer role
// held: it is recovered as a *PanicError (see there for each function).
// A Before function's refuses its call, nothing sent; an After
// function's fails its call (the command ran); OnPush's, and one met by
// a call that had failed by itself, are logged to Options.Logger; a
// Handler's in Reply fails its submission (the rest of its replies read
// and dropped), in Done is logged; every other call ends as it would
// have. DoFunc's fn runs on its caller's goroutine, holding nothing: its
// panic is the caller's.
//
// Options.Observer (CommandStart, CommandEnd) is the older form of the
// same, kept working: it runs as one more hook, after Options.Hooks
// (ObserverHook).
//
// # Pipelining, under the hood
//
// Commands from any number of goroutines are appended to one write
// buffer and written together: when the connection is idle the sender
// writes its own commands at once, straight from its own bytes (one write
// call, no copy); when it is busy the writer goroutine gathers everything
// sent meanwhile into one write. Replies complete
// submissions strictly in the order they were sent. No goroutine is
// started per call. A caller that waits for its own replies (Do, DoFunc,
// pipeline.Batch) reads them on its own goroutine when nobody else is
// reading, which saves two goroutine switches per round trip; otherwise
// the connection's reader goroutine reads, and completes callers in
// order.
//
// Replies are decoded without copying (package resp): a reply views the
// connection's read buffer and is valid only until the next reply is
// read. DoFunc and pipeline.Batch copy it into a pooled arena owned by
// the call, whose memory is reused, so the hot path allocates nothing;
// Do returns a reply that owns its memory. A batch's scalar replies
// (simple strings, errors, integers, bulk strings) that arrived together
// are decoded in one pass straight into its reply slots
// (resp.Reader.Scalars), without a call per reply.
package conn
