package emq

import (
	"context"

	"github.com/echomq/echomq-go/conn"
)

// ReadFence reads the wire fence, [VersionKey], and judges it as
// [CheckFence] does, but writes nothing: an absent fence is no error
// (present is false). It is the check of a reader that must leave no
// trace, or that reads a read-only replica, where CheckFence's SET NX
// would be refused.
func ReadFence(ctx context.Context, s conn.Sender) (present bool, err error) {
	got, ok, err := getString(ctx, s, VersionKey)
	if err != nil || !ok {
		return false, err
	}
	return true, judgeFence(got)
}

// OpenReadOnly is [Open] for a caller that only reads the queue
// ([Queue.Stats], [Queue.Browse], [Queue.Count] and the like): it checks
// the fence with [ReadFence], so opening writes nothing and works on a
// read-only replica. The queue's verbs that write are not refused by the
// Queue; a replica refuses them (READONLY).
func OpenReadOnly(ctx context.Context, s conn.Sender, name string, opts ...Option) (*Queue, error) {
	return Open(ctx, s, name, append(opts, func(o *options) { o.readOnly = true })...)
}

// fence runs the check Open makes: CheckFence, or ReadFence for
// OpenReadOnly.
func (o *options) fence(ctx context.Context, s conn.Sender) error {
	if o.readOnly {
		_, err := ReadFence(ctx, s)
		return err
	}
	return CheckFence(ctx, s)
}
