package jobs

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/pubsub"
)

// tick calls f every d ±20% until stop closes; a negative d never.
func tick(stop <-chan struct{}, d time.Duration, f func()) {
	if d < 0 {
		<-stop
		return
	}
	t := time.NewTimer(jitter(d))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f()
		t.Reset(jitter(d))
	}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// extendLoop renews the lease of every job running ExtendInterval since
// its claim or last extension; a stale answer (the lease lost, or the job
// cancelled by a peer) ends the handler with emq.ErrLeaseLost.
func (srv *Server) extendLoop(stop <-chan struct{}) {
	if srv.cfg.ExtendInterval < 0 {
		<-stop
		return
	}
	tick(stop, max(srv.cfg.ExtendInterval/2, time.Millisecond), func() {
		for _, s := range srv.slots {
			srv.extendSlot(s)
		}
	})
}

// extendSlot extends the lease of s's job when it is due.
func (srv *Server) extendSlot(s *slot) {
	now := time.Now()
	s.mu.Lock()
	if !s.busy || s.lost || s.cancelled || now.Sub(s.since) < srv.cfg.ExtendInterval {
		s.mu.Unlock()
		return
	}
	l, job, gen := s.lane, s.job, s.gen
	s.mu.Unlock()
	err := l.q.Extend(srv.life, job.ID, job.Token, srv.cfg.Lease)
	s.mu.Lock()
	current := s.busy && s.gen == gen
	switch {
	case !current:
	case err == nil:
		s.since = now
	case errors.Is(err, emq.ErrStale) && !s.cancelled:
		s.lost = true
		s.cancel(emq.ErrLeaseLost)
	}
	s.mu.Unlock()
	if err != nil && !errors.Is(err, emq.ErrStale) {
		srv.fail(err)
	}
}

// limitsLoop reads again, every LimitsInterval, the limits of every
// queue without its own in ServerConfig.Limits.
func (srv *Server) limitsLoop(stop <-chan struct{}) {
	tick(stop, srv.cfg.LimitsInterval, func() {
		for _, l := range srv.lanes {
			if _, own := srv.cfg.Limits[l.name]; own {
				continue
			}
			lim, err := l.q.Limits(srv.life)
			if err != nil {
				srv.fail(err)
				continue
			}
			l.limited.Store(lim != emq.Limits{})
		}
	})
}

// trimLoop trims every queue's dead set every TrimInterval.
func (srv *Server) trimLoop(stop <-chan struct{}) {
	tick(stop, srv.cfg.TrimInterval, func() {
		for _, l := range srv.lanes {
			if _, err := l.q.TrimDead(srv.life, srv.cfg.DeadMaxAge, srv.cfg.DeadMaxCount); err != nil {
				srv.fail(err)
			}
		}
	})
}

// promoteLoop moves every queue's due delayed jobs to pending every
// PromoteInterval.
func (srv *Server) promoteLoop(stop <-chan struct{}) {
	tick(stop, srv.cfg.PromoteInterval, func() {
		for _, l := range srv.lanes {
			srv.drain(stop, func() (int, error) { return l.q.Promote(srv.life, 1000) })
		}
	})
}

// reapLoop takes back every queue's expired leases every ReapInterval,
// announcing each death (reap_announce) for waiters.
func (srv *Server) reapLoop(stop <-chan struct{}) {
	tick(stop, srv.cfg.ReapInterval, func() {
		for _, l := range srv.lanes {
			srv.drain(stop, func() (int, error) { return l.q.ReapAnnounce(srv.life, 1000, srv.cfg.MaxRetries+1) })
		}
	})
}

// drain calls f while it moves a full 1,000, at most 100 times.
func (srv *Server) drain(stop <-chan struct{}, f func() (int, error)) {
	for range 100 {
		n, err := f()
		if err != nil {
			srv.fail(err)
			return
		}
		if n < 1000 || isClosed(stop) {
			return
		}
	}
}

// beatLoop keeps the server in each queue's registry of workers, and
// takes it out at the end.
func (srv *Server) beatLoop(stop <-chan struct{}) {
	if srv.cfg.Heartbeat < 0 {
		<-stop
		return
	}
	fields := srv.workerFields()
	ttl := srv.cfg.Heartbeat * 3 / 2
	beat := func() {
		for _, l := range srv.lanes {
			if _, err := l.q.Heartbeat(srv.life, srv.wid, ttl, fields...); err != nil {
				srv.fail(err)
			}
		}
		srv.health.beat(time.Now())
	}
	beat()
	t := time.NewTicker(srv.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			for _, l := range srv.lanes {
				l.q.Heartbeat(ctx, srv.wid, 0)
			}
			cancel()
			return
		case <-t.C:
			beat()
		}
	}
}

// workerFields are the fields of the server's registry entries.
func (srv *Server) workerFields() []string {
	host, pid := splitWID(srv.wid)
	names := make([]string, len(srv.lanes))
	for i, l := range srv.lanes {
		names[i] = l.name + "=" + strconv.Itoa(l.weight)
	}
	sort.Strings(names)
	return []string{
		"host", host, "pid", pid, "queues", strings.Join(names, ","),
		"concurrency", strconv.Itoa(srv.cfg.Concurrency),
		"started", strconv.FormatInt(srv.health.startedAt().UnixMilli(), 10),
		"go", runtime.Version(),
	}
}

func splitWID(wid string) (host, pid string) {
	parts := strings.Split(wid, ":")
	if len(parts) < 3 {
		return wid, ""
	}
	return strings.Join(parts[:len(parts)-2], ":"), parts[len(parts)-2]
}

// listen subscribes to every queue's cancel channel and ends the handler
// of each cancelled job this server runs. Without PubSub options it does
// nothing: cancelled jobs end at their next lease extension.
func (srv *Server) listen(stop <-chan struct{}) {
	if srv.cfg.PubSub.Addr == "" {
		<-stop
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	defer func() {
		cancel()
		<-watched
	}()
	go func() {
		defer close(watched)
		select {
		case <-stop:
		case <-srv.quit:
		case <-ctx.Done():
		}
		cancel()
	}()
	sub, err := pubsub.New(ctx, pubsub.Options{Options: srv.cfg.PubSub})
	if err != nil {
		srv.fail(err)
		<-ctx.Done()
		return
	}
	defer sub.Close()
	chans := make([]string, 0, len(srv.lanes))
	for _, l := range srv.lanes {
		chans = append(chans, l.cancel)
	}
	if err := sub.Subscribe(ctx, chans...); err != nil {
		srv.fail(err)
		<-ctx.Done()
		return
	}
	srv.health.listening()
	for {
		m, err := sub.Receive(ctx)
		if errors.Is(err, pubsub.ErrGap) {
			continue // lost cancels: those jobs end at their next extension
		}
		if err != nil {
			return
		}
		if l := srv.byCh[m.Channel]; l != nil {
			srv.cancelID(l, string(m.Payload))
		}
	}
}
