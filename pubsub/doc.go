// Package pubsub is the bus: publish/subscribe over Valkey or Redis,
// with a connection of its own per Subscription.
//
// # Subscribing
//
// A subscriber connection carries nothing but its subscriptions, so a
// Subscription dials one for itself, with the same Options a
// conn.Client is given (TLS, AUTH/ACL, HELLO 3 with a RESP2 fallback,
// the client name, the redial backoff, the hooks). Subscribe connects
// and subscribes in one call, with a Client's options, say:
//
//	sub, err := pubsub.Subscribe(ctx, client.Options(), "orders") // confirmed by the server
//	defer sub.Close()
//
// New connects one subscribed to nothing yet, with a Buffer or a
// PingInterval of your own:
//
//	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: "127.0.0.1:6379"}})
//	defer sub.Close()
//	err = sub.Subscribe(ctx, "orders")   // returns once the server confirmed it
//	err = sub.PSubscribe(ctx, "audit.*") // patterns
//	err = sub.SSubscribe(ctx, "cache")   // sharded channels (SPUBLISH)
//	for msg, err := range sub.Messages(ctx) {
//		if errors.Is(err, pubsub.ErrGap) {
//			continue // some messages were lost: see below
//		}
//		if err != nil {
//			break // Close, or ctx's end
//		}
//		… msg.Channel, msg.Pattern, msg.Payload
//	}
//
// Receive takes one message at a time, for a select-free loop of your
// own. Unsubscribe (PUnsubscribe, SUnsubscribe) drops channels, or all
// of them; Close ends the subscription. Publishing is an ordinary
// command, sent on any conn.Sender: Publish and SPublish return how
// many subscribers received the message.
//
// Under RESP3 messages arrive as push frames; under RESP2 (an old
// server, HELLO renamed away, or Options.Protocol 2) the connection is
// in subscriber mode. Either way the Messages are the same.
//
// # At most once
//
// Pub/sub delivers each message at most once, to the subscribers
// connected when it is published; the server keeps nothing for a
// subscriber that is not. When the connection is lost (the server
// restarts, the network fails, or the health check's PING goes
// unanswered for ReadTimeout), the Subscription reconnects by itself,
// with backoff, and restores every channel, pattern and sharded channel
// of its set. Messages published in between are gone: Receive reports
// the gap as a *GapError (errors.Is ErrGap), in order, after the last
// message received before the loss and before the first one after it.
// A Subscribe made during an outage waits for the restore. When
// messages must not be lost, use a stream (package kv's XAdd and
// XReadGroup), which the server keeps.
//
// # Messages over the limits
//
// A message that breaks the reply decoder's bounds (Options.Limits: a
// payload longer than MaxBulk, by default 512 MiB, or over any other
// resp.Limits field) is skipped on the wire in bounded memory, and the
// connection is kept. Receive reports the drop as a *GapError in the
// message's place, with Dropped counting it and Cause the
// *resp.ReplyTooLargeError (errors.Is resp.ErrReplyTooLarge) that names
// the limit to raise; Stats.Dropped counts them all. (Keep MaxBulk above
// the longest channel name: a confirmation of SUBSCRIBE over the limits
// would be taken for a dropped message, and the Subscribe would wait for
// its ctx.)
//
// # Slow consumers
//
// The policy is backpressure: nothing is dropped by the client.
// Messages wait for the consumer in a buffer of Options.Buffer (default
// 4096). When it is full, the subscription stops reading its
// connection until the consumer takes a message, and the messages that
// follow wait in the socket and then in the server's output buffer for
// this client. The server bounds that buffer (client-output-buffer-limit
// pubsub; by default 32 MB at once, or 8 MB for 60 s): past it the
// server closes the connection and drops what it held. The subscription
// then reconnects and reports the loss as a *GapError, as for any other
// fault. Stats counts the stalls (times the buffer was full) and their
// length, so a consumer that falls behind can be seen before the server
// cuts it off. Time spent stalled does not count against the health
// check.
//
// Subscribe, Unsubscribe and the health check wait for replies that
// come after the messages already on their way. While one waits, the
// subscription reads on however full the buffer is, so a consumer that
// changes the subscription itself, from the loop that receives, never
// waits for its own reading: the buffer then holds more than Buffer, by
// the messages the server sent before the reply.
//
// Messages are copied out of the read buffer into memory the receiver
// owns; channel names are interned and small payloads share blocks of
// memory, so receiving costs about one allocation per 32 KiB of
// payloads.
package pubsub
