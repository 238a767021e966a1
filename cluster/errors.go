package cluster

import (
	"errors"
	"strconv"
)

// ErrCrossSlot is matched (errors.Is) by the error of a command whose
// keys hash to different slots, or of a transaction (MULTI … EXEC) whose
// commands do: a cluster cannot run it on one node. Nothing was sent.
var ErrCrossSlot = errors.New("cluster: keys in different slots")

// CrossSlotError names the command and two of its slots.
type CrossSlotError struct {
	Command string // the command's name
	Slots   [2]int // two slots its keys hash to
}

// Error names the command and the slots.
func (e *CrossSlotError) Error() string {
	return "cluster: " + e.Command + "'s keys hash to slots " + strconv.Itoa(e.Slots[0]) +
		" and " + strconv.Itoa(e.Slots[1]) + ": a cluster runs a command on one slot's node " +
		"(give the keys one hashtag, as in {q}:a and {q}:b)"
}

// Is makes errors.Is(err, ErrCrossSlot) true.
func (e *CrossSlotError) Is(target error) bool { return target == ErrCrossSlot }

// ErrRedirectLimit is matched by the error of a command that was still
// refused after its bounds: Options.MaxRedirects MOVED or ASK in a row,
// or TRYAGAIN or CLUSTERDOWN for longer than Options.RetryTimeout. The
// server refused it every time, so it did not run.
var ErrRedirectLimit = errors.New("cluster: too many redirects")

// RedirectError is the error of a command past the redirect limit: it
// carries the server's last refusal.
type RedirectError struct {
	Last string // the last refusal, byte for byte (e.g. "MOVED 3999 10.0.0.2:6379")
	Hops int    // how many times the command was sent
}

// Error quotes the last refusal.
func (e *RedirectError) Error() string {
	return ErrRedirectLimit.Error() + ": sent " + strconv.Itoa(e.Hops) + " times, last refused with " + strconv.Quote(e.Last)
}

// Is makes errors.Is(err, ErrRedirectLimit) true.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirectLimit }

// ErrNoNode is matched by the error of a command whose slot no known
// primary serves, even after reading the topology again.
var ErrNoNode = errors.New("cluster: no primary serves the slot")

// ErrUnroutable is matched by the error of a submission the Client will
// not route as given, because no routing of it would do what it says:
// WAIT or WAITAOF sent alone, or without the writes it counts before it
// in its batch, or after writes to several primaries; a command that goes
// to every primary (FLUSHALL, DBSIZE, KEYS, INFO, …) inside a batch.
// Nothing was sent. The RouteError says how to send it instead.
var ErrUnroutable = errors.New("cluster: cannot route the command as sent")

// RouteError is the error of a submission refused with ErrUnroutable.
type RouteError struct {
	Command string // the command's name, upper case
	Reason  string // why, and how to send it instead
}

// Error names the command and says why and what to do.
func (e *RouteError) Error() string {
	return "cluster: " + e.Command + ": " + e.Reason
}

// Is makes errors.Is(err, ErrUnroutable) true.
func (e *RouteError) Is(target error) bool { return target == ErrUnroutable }

// The reasons of RouteError.
const (
	reasonWaitAlone = "WAIT counts the replicas that acknowledged the writes made earlier on the same " +
		"connection, and a cluster client spreads its calls over connections to every primary: send it " +
		"in one batch right after the writes it counts, all on one primary (pipeline.Batch: SET k v; WAIT 1 100), " +
		"or on a connection lent at the key's primary (Client.Dedicated(ctx, k, …))"
	reasonWaitFirst = "WAIT in a batch counts the writes before it on the same primary; this one has no " +
		"keyed command before it: put it after the writes it counts (SET k v; WAIT 1 100)"
	reasonWaitSpread = "WAIT in a batch counts the writes before it on one primary's connection, and this " +
		"batch's commands go to several primaries: send the writes of each primary, each followed by its " +
		"WAIT, in a batch of its own (or use Client.Dedicated at the key)"
	reasonBlockingSpread = "a blocking command holds its primary's connection until it ends, and this " +
		"batch's commands go to several primaries, whose parts are sent without waiting for one another: " +
		"send the blocking command alone (Client.Do), or in a batch whose commands all go to its primary"
	reasonEveryShard = "it goes to every primary (its server tips say so), which a batch sent along with " +
		"other commands cannot do: send it alone (Client.Do), where its replies are combined, or on one " +
		"node (Client.Node)"
)
