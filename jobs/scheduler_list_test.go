package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSchedulesList: Schedules describes each registered schedule with
// its next slot after the time given, in its time zone.
func TestSchedulesList(t *testing.T) {
	q := openQueue(t, fresh(t), "sched-list")
	sc := NewScheduler(SchedulerOptions{})
	require.NoError(t, sc.Register(Schedule{Name: "daily", Spec: "30 6 * * *", TZ: "Europe/Paris", Queue: q, Payload: []byte("x")}))
	require.NoError(t, sc.Register(Schedule{Name: "tick", Spec: "@every 1m", Queue: q, Payload: []byte("y")}))
	now := time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)
	got := sc.Schedules(now)
	require.Len(t, got, 2)
	require.Equal(t, ScheduleInfo{Queue: q.Name(), Name: "daily", Spec: "30 6 * * *", TZ: "Europe/Paris",
		Next: time.Date(2026, 12, 2, 5, 30, 0, 0, time.UTC)}, ScheduleInfo{Queue: got[0].Queue, Name: got[0].Name, Spec: got[0].Spec, TZ: got[0].TZ, Next: got[0].Next.UTC()})
	require.Equal(t, "tick", got[1].Name)
	require.True(t, got[1].Next.Equal(time.Date(2026, 12, 1, 10, 1, 0, 0, time.UTC)), "got %v", got[1].Next)
}
