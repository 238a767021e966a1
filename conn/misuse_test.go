package conn_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/conn"
)

// A command of no arguments ("*0") gets no reply from the server at all:
// sent, it would take the next command's reply (or, alone, wedge the
// connection until the liveness timeout). Do refuses it without sending.
func TestEmptyCommandRefused(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := c.Do(ctx)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, conn.ErrBroken) {
		t.Fatalf("Do() with no arguments = %v, %v: want it refused", v, err)
	}
	for i := range 20 {
		want := "after-" + strconv.Itoa(i)
		if got, err := echo(testCtx(t), c, want); err != nil || got != want {
			t.Fatalf("ECHO %q after an empty command = %q, %v", want, got, err)
		}
	}
}
