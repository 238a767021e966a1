package pubsub

import "github.com/echomq/echomq-go/resp"

// The three kinds of subscription, and their words on the wire.
type kind uint8

const (
	channels kind = iota // SUBSCRIBE
	patterns             // PSUBSCRIBE
	shards               // SSUBSCRIBE
	nkinds
)

// kinds names each kind's commands and confirmations.
var kinds = [nkinds]struct {
	sub, unsub       string // commands
	subbed, unsubbed string // confirmation words
}{
	channels: {"SUBSCRIBE", "UNSUBSCRIBE", "subscribe", "unsubscribe"},
	patterns: {"PSUBSCRIBE", "PUNSUBSCRIBE", "psubscribe", "punsubscribe"},
	shards:   {"SSUBSCRIBE", "SUNSUBSCRIBE", "ssubscribe", "sunsubscribe"},
}

// What a frame on a subscriber connection is.
type frame uint8

const (
	frameOther   frame = iota // a push we do not handle (tracking's invalidate, …)
	frameMessage              // message, pmessage, smessage
	frameConfirm              // a (un)subscribe confirmation
	frameReply                // the reply to a command (PING's, an error)
)

// classify tells what v is. Under RESP3 messages and confirmations are
// push frames and everything else is a reply; under RESP2 they are
// arrays, and PING's reply in subscriber mode is ["pong", ""]. For a
// confirmation it returns the word ("subscribe", …).
func classify(v resp.Value, protocol int) (frame, string) {
	switch {
	case v.Type == resp.Push:
	case v.Type == resp.Array && protocol == 2 && len(v.Elems) == 3 && v.Elems[0].Type == resp.BulkString:
		// Possibly a message or a confirmation; PING's ["pong", ""] is
		// a reply.
	case v.Type == resp.Array && protocol == 2 && len(v.Elems) == 4 && v.Elems[0].Equal("pmessage"):
		return frameMessage, ""
	default:
		return frameReply, ""
	}
	if len(v.Elems) == 0 {
		return frameOther, ""
	}
	w := v.Elems[0].Str
	switch string(w) {
	case "message", "smessage":
		if len(v.Elems) == 3 {
			return frameMessage, ""
		}
	case "pmessage":
		if len(v.Elems) == 4 {
			return frameMessage, ""
		}
	default:
		for _, k := range kinds {
			switch string(w) {
			case k.subbed:
				return frameConfirm, k.subbed
			case k.unsubbed:
				return frameConfirm, k.unsubbed
			}
		}
	}
	if v.Type == resp.Array {
		return frameReply, ""
	}
	return frameOther, ""
}

// message reads a message frame's parts (views of v).
func message(v resp.Value) (pattern, channel, payload []byte, sharded bool) {
	e := v.Elems
	if len(e) == 4 {
		return e[1].Str, e[2].Str, e[3].Str, false
	}
	return nil, e[1].Str, e[2].Str, e[0].Equal("smessage")
}
