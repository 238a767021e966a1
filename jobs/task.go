package jobs

import (
	"time"
)

// Task is a unit of work: a type, which routes it to a handler (see
// [Mux]), and a body, any bytes. A producer enqueues a Task with
// [Client.Enqueue]; a handler receives one, with the fields below Body
// filled in by the [Server].
type Task struct {
	Type string
	Body []byte

	// Set by the Server for the handler; ignored by Enqueue.
	ID      string // the job's branded id
	Queue   string // the queue it was claimed from
	Attempt int64  // 1 on the first attempt (the claim's fencing token)
	// Raw is true for a job whose payload carries no envelope (a peer's
	// job): Type is "" and Body is the payload untouched.
	Raw bool
	// Retries, Timeout and Retention are the envelope's (see [Envelope]);
	// -1, 0 and 0 when it set none.
	Retries   int
	Timeout   time.Duration
	Retention time.Duration
}

// NewTask returns a task of type typ with body.
func NewTask(typ string, body []byte) *Task { return &Task{Type: typ, Body: body} }
