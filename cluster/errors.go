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
// redirected (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) after
// Options.MaxRedirects tries. The server refused it every time, so it
// did not run.
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
