package conn

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
)

// The guard: what a Conn checks, from the facts of each submission's
// commands (cmds.Fact: their kinds, refined by their arguments), before it
// sends them, so that no command can make another caller's reply go
// astray.
//
//	kind         shared Conn                    Conn of Client.Dedicated
//	ReplyModel   refused                        refused
//	Blocking     sent; liveness waits for it    sent; liveness waits for it
//	MULTI        only with its EXEC or DISCARD  sent
//	             in the same submission
//	WATCH        refused                        sent
//
// A Client sends blocking commands on a dedicated connection by itself,
// but WAIT and WAITAOF (which count the writes of the connection they run
// on) on its shared connection, refusing them without a timeout there.

// ErrCommandRefused is matched (errors.Is) by the error of a command a
// connection will not send because it would break the connection for
// other callers (see CommandError). Nothing was sent.
var ErrCommandRefused = errors.New("conn: command refused")

// CommandError is the error of a refused command: it names the command
// and says what to use instead. It matches ErrCommandRefused.
type CommandError struct {
	// Command is the command's name in upper case ("SUBSCRIBE",
	// "CLIENT REPLY").
	Command string
	// Reason says why it was refused and what to use instead.
	Reason string
}

// Error names the command and the reason.
func (e *CommandError) Error() string {
	return "conn: " + e.Command + " refused: " + e.Reason
}

// Is makes errors.Is(err, ErrCommandRefused) true.
func (e *CommandError) Is(target error) bool { return target == ErrCommandRefused }

// ArgTooLargeError is the error of a submission with an argument longer
// than Options.MaxArg (the server's proto-max-bulk-len): the server would
// answer it with a protocol error and close the connection, failing
// every other call on it, so nothing is sent. It matches
// ErrCommandRefused.
type ArgTooLargeError struct {
	// Command is the name of the command with the argument, as sent.
	Command string
	// Size is the argument's length in bytes; Max is Options.MaxArg.
	Size, Max int
}

// Error names the command, the size and the limit.
func (e *ArgTooLargeError) Error() string {
	return fmt.Sprintf("conn: %s refused: an argument of %d bytes, over Options.MaxArg of %d "+
		"(the server's proto-max-bulk-len: it would close the connection)", e.Command, e.Size, e.Max)
}

// Is makes errors.Is(err, ErrCommandRefused) true.
func (e *ArgTooLargeError) Is(target error) bool { return target == ErrCommandRefused }

// checkArgs refuses a submission with an argument longer than max; only
// one longer than max in all can have one, so the others are not read.
func checkArgs(w wire.Cmds, max int) error {
	if max < 0 || len(w.Bytes()) <= max {
		return nil
	}
	if at, size, over := wire.ArgOver(w.Bytes(), max); over {
		return &ArgTooLargeError{Command: strings.ToUpper(string(wire.NameOf(w.Bytes()[at:]))), Size: size, Max: max}
	}
	return nil
}

// reasons, by what the command does.
const (
	reasonSubscribe = "it puts the connection in subscriber mode, where replies are no longer " +
		"one per command; a subscription needs a connection of its own"
	reasonReplyModel = "it changes how the server replies on this pipelined connection, which " +
		"other callers share; the connection's handshake (Options) and Close cover " +
		"HELLO, AUTH, SELECT, RESET and QUIT"
	reasonMulti = "a transaction must be sent whole (MULTI … EXEC in one pipeline.Batch), or " +
		"on a connection of its own (Client.Dedicated): other callers' commands would " +
		"be queued into it"
	reasonWatch = "WATCH holds state for the connection's next EXEC, which other callers " +
		"share; use Client.Dedicated"
	reasonWaitForever = "a Client sends WAIT and WAITAOF on its shared connection, where the " +
		"caller's writes went, and holds up the commands behind it until it returns: " +
		"give it a timeout (on a Conn of Client.Dedicated it counts only that " +
		"connection's writes)"
	reasonNotWaiting = "a blocking command would hold up the commands queued behind it; send it " +
		"with Do, DoFunc or pipeline.Batch, which give it a connection of its own"
)

var errBadSubmission = errors.New("conn: submission of no commands or no handler")

// inspect checks the facts of one submission's commands. It reports
// whether the submission blocks, and for how long at most (0: maybe for
// ever), or the error that refuses it.
func (c *Conn) inspect(w wire.Cmds) (blocking bool, timeout time.Duration, err error) {
	exclusive := c.exclusive.Load()
	blocking, timeout, tx, err := inspectFacts(w, exclusive)
	if tx && exclusive {
		c.txUsed.Store(true)
	}
	return blocking, timeout, err
}

// checkShared is what a shared connection (not of Client.Dedicated)
// would refuse of w, with Options.MaxArg maxArg (0: the default): for a
// sender that splits a submission between connections (a cluster's
// primaries), to refuse it before any part is sent.
func checkShared(w wire.Cmds, maxArg int) error {
	if _, _, _, err := inspectFacts(w, false); err != nil {
		return err
	}
	if maxArg == 0 {
		maxArg = DefaultMaxArg
	}
	return checkArgs(w, maxArg)
}

// inspectFacts is inspect for a connection that is exclusive (of
// Client.Dedicated) or not; tx reports a MULTI or WATCH seen.
func inspectFacts(w wire.Cmds, exclusive bool) (blocking bool, timeout time.Duration, tx bool, err error) {
	inMulti, forever := false, false
	at := uint32(0)
	for i := range w.Facts() {
		f := &w.Facts()[i]
		cmd := w.Bytes()[at : at+f.Size]
		at += f.Size
		if f.Kind&cmds.Guarded == 0 {
			continue
		}
		switch {
		case f.Kind&cmds.ReplyModel != 0:
			return false, 0, tx, refusal(f, cmd)
		case f.Kind&cmds.Blocking != 0:
			if inMulti {
				continue // queued by the transaction: it does not block
			}
			blocking = true
			if f.Timeout == 0 {
				forever = true
			}
			timeout = min(timeout+f.Timeout, math.MaxInt64/2)
		case f.Kind&cmds.TxMulti != 0:
			// With an argument it is refused for its arity and opens no
			// transaction: the commands after it run (and block) at once.
			tx = true
			if f.Arg1 == (cmds.Span{}) {
				inMulti = true
			}
		case f.Kind&cmds.TxEnd != 0:
			// With an argument it is refused for its arity, and the
			// server's transaction stays open (DISCARD x; EXEC x
			// discards it, but not for sure on every server).
			if f.Arg1 == (cmds.Span{}) {
				inMulti = false
			}
		case f.Kind&cmds.TxWatch != 0:
			if !exclusive {
				return false, 0, tx, &CommandError{Command: "WATCH", Reason: reasonWatch}
			}
			tx = true
		}
	}
	if inMulti && !exclusive {
		return false, 0, tx, &CommandError{Command: "MULTI", Reason: reasonMulti}
	}
	if forever {
		timeout = 0
	}
	return blocking, timeout, tx, nil
}

// commandName is the name of the command of f, encoded in cmd, in upper
// case, with its subcommand when the table has one ("CLIENT REPLY"), for
// errors.
func commandName(f *cmds.Fact, cmd []byte) string {
	if f.Info != nil {
		return strings.Join(f.Info.Words, " ")
	}
	return strings.ToUpper(string(f.Name.Of(cmd)))
}

// refusal is the error for a command that changes the reply model.
func refusal(f *cmds.Fact, cmd []byte) error {
	name := commandName(f, cmd)
	if f.Kind&cmds.PubSub != 0 {
		return &CommandError{Command: name, Reason: reasonSubscribe}
	}
	return &CommandError{Command: name, Reason: reasonReplyModel}
}

// forever is blockUntil's value while a blocking command without a
// timeout is outstanding.
const forever = math.MaxInt64

// blockStart notes a blocking submission, with mu held: the liveness
// check waits for it until its own timeout has passed.
func (c *Conn) blockStart(d time.Duration) {
	until := int64(forever)
	if d > 0 {
		until = time.Now().Add(d).UnixNano()
	}
	if until > c.blockUntil.Load() {
		c.blockUntil.Store(until)
	}
	c.blocked.Add(1)
}

// blockEnd notes that a blocking submission has ended.
func (c *Conn) blockEnd() {
	c.mu.Lock()
	if c.blocked.Add(-1) == 0 {
		c.blockUntil.Store(0)
	}
	c.mu.Unlock()
}

// blockedNow reports whether a blocking command may still be waiting on
// the server within its own timeout.
func (c *Conn) blockedNow() bool {
	return c.blocked.Load() > 0 && time.Now().UnixNano() < c.blockUntil.Load()
}
