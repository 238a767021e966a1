package jobs

import (
	"context"

	"github.com/echomq/echomq-go/emq"
)

// FlowTask is one task of a flow: the task and the indices (in the slice
// given to [Client.SubmitFlow]) of the tasks it depends on, with emq's
// policies; a dependency with Queue set names a job of another queue.
type FlowTask struct {
	Task *Task
	Deps []emq.FlowDep
	// Lane, when set, runs the task in that lane of its queue (emq's
	// FlowNode.Lane): released to the lane when its dependencies allow,
	// in the lane's order.
	Lane string
}

// SubmitFlow admits a DAG of tasks into one queue (of the options: only
// Queue, MaxRetries, Timeout and Retention apply) as emq's SubmitFlow
// does, and returns the flow's id and the jobs' ids, ids[i] for
// tasks[i]. A task runs once its dependencies allow; settle flow jobs
// with emq's FlowComplete/FlowRetry so that their ends release the
// dependents (a job settled otherwise is resolved by the next
// emq Queue.Flow). Every task is encoded and the graph checked before
// anything is sent: an *EnvelopeError, or an *emq.FlowError for a cycle,
// a self-dependency, an unknown, finished or too large graph.
func (c *Client) SubmitFlow(ctx context.Context, tasks []FlowTask, opts ...Option) (flow string, ids []string, err error) {
	o, err := c.options(opts)
	if err != nil {
		return "", nil, err
	}
	if o.delay > 0 || o.unique != nil {
		return "", nil, ErrLaneOption
	}
	nodes := make([]emq.FlowNode, len(tasks))
	for i, ft := range tasks {
		p, err := payload(nil, ft.Task, &o)
		if err != nil {
			return "", nil, err
		}
		nodes[i] = emq.FlowNode{Payload: p, Deps: ft.Deps, Lane: ft.Lane}
	}
	q, err := c.qs.get(ctx, o.queue)
	if err != nil {
		return "", nil, err
	}
	return q.SubmitFlow(ctx, nodes)
}
