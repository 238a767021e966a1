package jobs

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/pubsub"
)

// background runs the server's parts beside the round loop, each until
// bgStop closes: the extender, the maintainer, the heartbeat and the
// cancel listener.
func (srv *Server) background() {
	defer close(srv.bgDone)
	var wg sync.WaitGroup
	parts := []func(){srv.extendLoop, srv.maintainLoop, srv.beatLoop, srv.listen}
	wg.Add(len(parts))
	for _, p := range parts {
		go func() { defer wg.Done(); p() }()
	}
	wg.Wait()
}

// every calls f every d ±20% until bgStop closes; a negative d never.
func (srv *Server) every(d time.Duration, f func()) {
	if d < 0 {
		<-srv.bgStop
		return
	}
	t := time.NewTimer(jitter(d))
	defer t.Stop()
	for {
		select {
		case <-srv.bgStop:
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
func (srv *Server) extendLoop() {
	if srv.cfg.ExtendInterval < 0 {
		<-srv.bgStop
		return
	}
	srv.every(max(srv.cfg.ExtendInterval/2, time.Millisecond), func() {
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

// maintainLoop promotes due jobs, reaps expired leases, trims the dead
// sets and reads again the limits of every queue, each on its own
// interval.
func (srv *Server) maintainLoop() {
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		srv.every(srv.cfg.LimitsInterval, func() {
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
	}()
	go func() {
		defer wg.Done()
		srv.every(srv.cfg.TrimInterval, func() {
			for _, l := range srv.lanes {
				if _, err := l.q.TrimDead(srv.life, srv.cfg.DeadMaxAge, srv.cfg.DeadMaxCount); err != nil {
					srv.fail(err)
				}
			}
		})
	}()
	go func() {
		defer wg.Done()
		srv.every(srv.cfg.PromoteInterval, func() {
			for _, l := range srv.lanes {
				srv.drain(func() (int, error) { return l.q.Promote(srv.life, 1000) })
			}
		})
	}()
	go func() {
		defer wg.Done()
		srv.every(srv.cfg.ReapInterval, func() {
			for _, l := range srv.lanes {
				srv.drain(func() (int, error) { return l.q.ReapAnnounce(srv.life, 1000, srv.cfg.MaxRetries+1) })
			}
		})
	}()
	wg.Wait()
}

// drain calls f while it moves a full 1,000, at most 100 times.
func (srv *Server) drain(f func() (int, error)) {
	for range 100 {
		n, err := f()
		if err != nil {
			srv.fail(err)
			return
		}
		if n < 1000 || isClosed(srv.bgStop) {
			return
		}
	}
}

// beatLoop keeps the server in each queue's registry of workers, and
// takes it out at the end.
func (srv *Server) beatLoop() {
	if srv.cfg.Heartbeat < 0 {
		<-srv.bgStop
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
		case <-srv.bgStop:
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
func (srv *Server) listen() {
	if srv.cfg.PubSub.Addr == "" {
		<-srv.bgStop
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-srv.bgStop:
		case <-srv.quit:
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
