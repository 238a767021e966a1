package emq

import (
	"context"
	"errors"
	"testing"
)

// TestJobCtx: a job's context behaves as a context.WithCancelCause would,
// whether its Done channel or a child was asked for before the cancel,
// after it, or never: Err, context.Cause, AfterFunc and children all see
// the one cancel and its cause; a second cancel changes nothing.
func TestJobCtx(t *testing.T) {
	cause := errors.New("the cause")
	for _, tc := range []struct {
		name   string
		before bool // Done asked for before the cancel
	}{{"done before the cancel", true}, {"done after the cancel", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := new(jobCtx)
			var ctx context.Context = c
			if ctx.Err() != nil {
				t.Fatalf("Err before the cancel: %v", ctx.Err())
			}
			if _, ok := ctx.Deadline(); ok {
				t.Fatal("a deadline")
			}
			var child context.Context
			fired := make(chan struct{})
			if tc.before {
				var stop context.CancelFunc
				child, stop = context.WithCancel(ctx)
				defer stop()
				context.AfterFunc(ctx, func() { close(fired) })
				select {
				case <-ctx.Done():
					t.Fatal("done before the cancel")
				default:
				}
			}
			c.cancel(cause)
			c.cancel(errors.New("a later cause"))
			if !tc.before {
				var stop context.CancelFunc
				child, stop = context.WithCancel(ctx)
				defer stop()
				context.AfterFunc(ctx, func() { close(fired) })
			}
			<-ctx.Done()
			<-child.Done()
			<-fired
			if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
				t.Errorf("Err %v, child's %v", ctx.Err(), child.Err())
			}
			if got := context.Cause(ctx); got != cause {
				t.Errorf("Cause %v, want %v", got, cause)
			}
			if got := context.Cause(child); got != cause {
				t.Errorf("child's Cause %v, want %v", got, cause)
			}
		})
	}
	// Cancelled with no cause, never asked for Done: Cause is Canceled.
	c := new(jobCtx)
	c.cancel(nil)
	if got := context.Cause(c); !errors.Is(got, context.Canceled) || !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Cause %v, Err %v; want context.Canceled", got, c.Err())
	}
	// A value set on a child is found; the job context holds none.
	type key struct{}
	v := context.WithValue(c, key{}, 1)
	if v.Value(key{}) != 1 || c.Value(key{}) != nil {
		t.Error("values")
	}
}
