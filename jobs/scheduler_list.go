package jobs

import "time"

// ScheduleInfo is a registered schedule as [Scheduler.Schedules]
// describes it: what the server does not keep (emq:{q}:cron holds only
// each name's last slot).
type ScheduleInfo struct {
	Queue string // the queue's name
	Name  string
	Spec  string
	TZ    string // "" is UTC
	// Next is the first slot after the time Schedules was given.
	Next time.Time
}

// Schedules describes the registered schedules, in registration order,
// each with its next slot after now.
func (sc *Scheduler) Schedules(now time.Time) []ScheduleInfo {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	out := make([]ScheduleInfo, len(sc.entries))
	for i, e := range sc.entries {
		out[i] = ScheduleInfo{Queue: e.queue, Name: e.s.Name, Spec: e.s.Spec, TZ: e.s.TZ, Next: e.slots.next(now)}
	}
	return out
}
