package jobs

import (
	"sync"
	"time"
)

// Health is a server's liveness, as [Server.Health] reports it.
type Health struct {
	Running   bool      // started and not shut down
	Started   time.Time // when Start ran
	LastRound time.Time // the last round of exchanges that returned
	LastBeat  time.Time // the last heartbeat sent
	Listening bool      // subscribed to the cancel channels
	LastError error     // the last error met, nil if none
	ErrorAt   time.Time // when
	// Stopped is why the server stopped by itself: an error matching
	// ErrSenderGone once its sender ended for good (Running is false
	// then, and Done closes once the handlers returned). Nil while it
	// runs and after a Shutdown.
	Stopped error
	Served  map[string]uint64
}

type healthState struct {
	mu sync.Mutex
	h  Health
}

func (hs *healthState) start(now time.Time) {
	hs.mu.Lock()
	hs.h.Running, hs.h.Started = true, now
	hs.mu.Unlock()
}

func (hs *healthState) startedAt() time.Time {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.h.Started
}

func (hs *healthState) stopped() {
	hs.mu.Lock()
	hs.h.Running = false
	hs.mu.Unlock()
}

func (hs *healthState) round(now time.Time) {
	hs.mu.Lock()
	hs.h.LastRound = now
	hs.mu.Unlock()
}

func (hs *healthState) gone(cause error) {
	hs.mu.Lock()
	hs.h.Stopped = cause
	hs.mu.Unlock()
}

func (hs *healthState) beat(now time.Time) {
	hs.mu.Lock()
	hs.h.LastBeat = now
	hs.mu.Unlock()
}

func (hs *healthState) listening() {
	hs.mu.Lock()
	hs.h.Listening = true
	hs.mu.Unlock()
}

func (hs *healthState) fail(err error) {
	hs.mu.Lock()
	hs.h.LastError, hs.h.ErrorAt = err, time.Now()
	hs.mu.Unlock()
}

// Health reports the server's liveness: whether it runs, when its last
// round returned and its last heartbeat went, whether it hears cancels,
// its last error, and the jobs each queue served.
func (srv *Server) Health() Health {
	srv.health.mu.Lock()
	h := srv.health.h
	srv.health.mu.Unlock()
	h.Served = make(map[string]uint64, len(srv.lanes))
	for _, l := range srv.lanes {
		h.Served[l.name] = l.served.Load()
	}
	return h
}
