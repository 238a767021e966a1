package jobs

import (
	"context"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// StartServer is NewServer then Start: a server over cfg's queues, running
// h, its goroutines started; or the error of either, and nothing runs.
// Stop it with Shutdown.
func StartServer(ctx context.Context, s conn.Sender, h Handler, cfg ServerConfig) (*Server, error) {
	srv, err := NewServer(ctx, s, h, cfg)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	return srv, nil
}

// RegisterQueue is Register for a schedule whose jobs go to the queue
// named queue, as a Client's options and a ServerConfig name their
// queues: it opens the queue on s (emq.Open with opts, which checks the
// fence), sets sch.Queue to it and registers sch. A queue that cannot be
// opened is the error, and nothing is registered. It opens the queue at
// once, on a Sender of the call's own; a scheduler given
// [SchedulerOptions.Sender] needs neither: a Schedule's QueueName (or a
// [Queue] option) names the queue, opened when Run or Start begins.
func (sc *Scheduler) RegisterQueue(ctx context.Context, s conn.Sender, queue string, sch Schedule, opts ...emq.Option) error {
	q, err := emq.Open(ctx, s, queue, opts...)
	if err != nil {
		return err
	}
	sch.Queue = q
	return sc.Register(sch)
}
