package web

import (
	"context"
	"sync"
	"time"
)

// sample is one queue's counts at one instant of the sampler.
type sample struct {
	At                             time.Time
	Pending, Active, Delayed, Dead int64
	// Completed and Failed are the host's running totals (Options.Counters),
	// valid when Counted.
	Completed, Failed uint64
	Counted           bool
}

// ring holds the last samples of one queue, oldest first once full.
type ring struct {
	buf  []sample
	next int
	full bool
}

func (r *ring) add(s sample) {
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// all returns the samples, oldest first.
func (r *ring) all() []sample {
	if !r.full {
		return append([]sample(nil), r.buf[:r.next]...)
	}
	return append(append([]sample(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// sampler reads every known queue's stats every interval into a ring
// per queue. One goroutine, started by start and stopped by stop (the
// Handler's Close), which waits for it.
type sampler struct {
	st       *store
	every    time.Duration
	size     int
	counters func(queue string) (completed, failed uint64, ok bool)

	mu    sync.Mutex
	rings map[string]*ring

	// ticked, when set (by tests, before start), is called after each
	// tick with the number of samples it added.
	ticked func(added int)

	cancel context.CancelFunc
	done   chan struct{}
}

func (s *sampler) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			s.tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the goroutine and waits for it.
func (s *sampler) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
}

// tick samples every queue once; a queue whose read fails is skipped.
func (s *sampler) tick(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.every)
	defer cancel()
	added := 0
	if s.ticked != nil {
		defer func() { s.ticked(added) }()
	}
	names, err := s.st.list(ctx)
	if err != nil {
		return
	}
	for _, name := range names {
		e, err := s.st.queue(ctx, name)
		if err != nil {
			continue
		}
		qs, err := e.stats(ctx, s.every/2)
		if err != nil {
			continue
		}
		smp := sample{At: time.Now(), Pending: qs.Pending, Active: qs.Active, Delayed: qs.Delayed, Dead: qs.Dead}
		if s.counters != nil {
			smp.Completed, smp.Failed, smp.Counted = s.counters(name)
		}
		s.mu.Lock()
		r := s.rings[name]
		if r == nil {
			r = &ring{buf: make([]sample, s.size)}
			s.rings[name] = r
		}
		r.add(smp)
		s.mu.Unlock()
		added++
	}
}

// samples returns a queue's samples, oldest first.
func (s *sampler) samples(queue string) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rings[queue]
	if r == nil {
		return nil
	}
	return r.all()
}

// rate is one interval's rates, per minute, between two samples.
type rate struct {
	At time.Time
	// Deaths is the dead set's growth (a trim or requeue that shrinks it
	// shows as 0); Drained the net fall of pending+delayed+active.
	Deaths, Drained float64
	// Completed and Failed come from Options.Counters (HasCounters).
	Completed, Failed float64
	HasCounters       bool
}

// rates turns samples into per-minute rates between neighbours.
func rates(ss []sample) []rate {
	var out []rate
	for i := 1; i < len(ss); i++ {
		a, b := ss[i-1], ss[i]
		min := b.At.Sub(a.At).Minutes()
		if min <= 0 {
			continue
		}
		r := rate{At: b.At}
		r.Deaths = float64(max(b.Dead-a.Dead, 0)) / min
		r.Drained = float64(max((a.Pending+a.Delayed+a.Active)-(b.Pending+b.Delayed+b.Active), 0)) / min
		if a.Counted && b.Counted && b.Completed >= a.Completed && b.Failed >= a.Failed {
			r.HasCounters = true
			r.Completed = float64(b.Completed-a.Completed) / min
			r.Failed = float64(b.Failed-a.Failed) / min
		}
		out = append(out, r)
	}
	return out
}
