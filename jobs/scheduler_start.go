package jobs

import "context"

// StartScheduler is NewScheduler, Register of each schedule, then Start,
// as [StartServer] is for a Server: a scheduler firing the schedules, its
// queues opened (those named on opts.Sender); or the first error, and
// nothing runs. Stop it with Shutdown.
func StartScheduler(ctx context.Context, opts SchedulerOptions, schedules ...Schedule) (*Scheduler, error) {
	sc := NewScheduler(opts)
	for _, s := range schedules {
		if err := sc.Register(s); err != nil {
			return nil, err
		}
	}
	if err := sc.Start(ctx); err != nil {
		return nil, err
	}
	return sc, nil
}
