package emq

import (
	"context"

	"github.com/echomq/echomq-go/dispatch"
)

// scriptDeleteDead is the delete_dead operation: its own block, beside
// the other operations.
var scriptDeleteDead = dispatch.NewScript("delete_dead", source("delete_dead"))

// DeleteDead deletes the dead jobs that f selects (ids and rows), in the
// dead set's order (oldest death first), and returns how many it
// deleted. It runs the delete_dead script repeatedly, each call
// examining at most 1,000 dead ids from a cursor, so a huge dead set
// never blocks the server; each call is atomic and deletes a job only if
// it is still dead then (in dead, its row's state dead or the row gone):
// a job requeued or run meanwhile is left alone. The whole is not
// atomic: a job that dies while DeleteDead runs may or may not be
// deleted. When ctx ends, the jobs deleted so far stay deleted and their
// count is returned with the error. f.Limit bounds the count (0: none).
//
// A dead job of a flow that is deleted before the flow is next read
// counts as completed for its dependents (see LANES-FLOWS.md).
func (q *Queue) DeleteDead(ctx context.Context, f DeadFilter) (int, error) {
	return q.deadPages(ctx, scriptDeleteDead, f, q.keys.Dead, q.keys.Base)
}
