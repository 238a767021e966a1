package pubsub

import (
	"context"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/cmdbuf"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Publish sends PUBLISH on any Sender (a conn.Client, a conn.Conn: an
// ordinary command, not one for a Subscription's connection) and returns
// how many subscribers received the message: on a single node, 0 means
// nobody heard it. It allocates nothing.
func Publish[M string | []byte](ctx context.Context, s conn.Sender, channel string, msg M) (int64, error) {
	return publish(ctx, s, "PUBLISH", channel, msg)
}

// SPublish sends SPUBLISH, publishing to a sharded channel (Redis 7 and
// Valkey), and returns how many subscribers received the message.
func SPublish[M string | []byte](ctx context.Context, s conn.Sender, channel string, msg M) (int64, error) {
	return publish(ctx, s, "SPUBLISH", channel, msg)
}

func publish[M string | []byte](ctx context.Context, s conn.Sender, cmd, channel string, msg M) (int64, error) {
	buf := cmdbuf.Get()
	b := resp.BuildCommand(buf.B, 3).Arg(cmd).Arg(channel)
	switch m := any(msg).(type) {
	case string:
		b = b.Arg(m)
	case []byte:
		b = b.ArgBytes(m)
	}
	c := b.Cmd()
	n, err := wire.DoInt(ctx, s, c)
	cmdbuf.Put(buf, c.Bytes())
	return n, err
}
