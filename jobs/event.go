package jobs

import "github.com/echomq/echomq-go/emq"

// EventKind says what became of a job a [Server] settled.
type EventKind uint8

// The kinds of [Event].
const (
	EventCompleted EventKind = iota + 1 // completed (with its result kept, if any)
	EventRetried                        // failed, back to pending or delayed
	EventDead                           // failed for the last time, or refused (an unknown type, a malformed envelope)
	EventReleased                       // claimed ahead and given back at shutdown
	EventStale                          // its lease no longer held (reaped, cancelled, deleted): nothing written
	EventUnsent                         // the exchange that carried it failed (Err); its lease decides
)

var eventNames = [...]string{"?", "completed", "retried", "dead", "released", "stale", "unsent"}

// String names the kind.
func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "EventKind(?)"
}

// Event is one job's settlement, told to [ServerConfig].OnEvent.
type Event struct {
	Kind  EventKind
	Queue string
	Job   emq.Job // as claimed: id, payload, token
	Err   string  // the failure text of a retry or a death; the exchange's error when unsent
}

// tell reports outs' settlements (kinds from the server's replies).
func (srv *Server) tell(l *lane, outs []outcome, idx []int, settled []emq.Settled, fin []bool, finIdx []int, err error) {
	if srv.cfg.OnEvent == nil {
		return
	}
	emit := func(o *outcome, k EventKind, text string) {
		srv.cfg.OnEvent(Event{Kind: k, Queue: l.name, Job: o.job, Err: text})
	}
	for j, i := range idx {
		o := &outs[i]
		switch {
		case err != nil:
			emit(o, EventUnsent, err.Error())
		case settled[j] == emq.SettledCompleted:
			emit(o, EventCompleted, "")
		case settled[j] == emq.SettledRequeued, settled[j] == emq.SettledDelayed:
			emit(o, EventRetried, o.text)
		case settled[j] == emq.SettledDead:
			emit(o, EventDead, o.text)
		case settled[j] == emq.SettledReleased:
			emit(o, EventReleased, "")
		default:
			emit(o, EventStale, o.text)
		}
	}
	for j, i := range finIdx {
		o := &outs[i]
		switch {
		case fin == nil:
			// the finish failed: told with its own error by exchange
		case !fin[j]:
			emit(o, EventStale, o.text)
		case o.kind == outResult:
			emit(o, EventCompleted, "")
		default:
			emit(o, EventDead, o.text)
		}
	}
}
