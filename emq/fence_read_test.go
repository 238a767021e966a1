package emq

import (
	"errors"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
)

// OpenReadOnly reads the fence and writes nothing: an absent fence stays
// absent (Open would SET it), a fence of this major is accepted, and one
// of another major is refused as Open refuses it.
func TestOpenReadOnly(t *testing.T) {
	servertest.Need(t, srv)
	for _, c := range []struct {
		stored string // "" absent
		ok     bool
	}{
		{"", true},
		{Version, true},
		{"echomq:6.1.0", true},
		{"echomq:7.0.0", false},
		{"bullmq:6.0.0", false},
	} {
		t.Run(c.stored, func(t *testing.T) {
			srv.Flush(t)
			if c.stored != "" {
				do(t, "SET", VersionKey, c.stored)
			}
			srv.ResetStats(t)
			ctx := tctx(t)
			s := dial(t)
			present, err := ReadFence(ctx, s)
			if present != (c.stored != "") || (err == nil) != c.ok {
				t.Fatalf("ReadFence over %q = %v, %v", c.stored, present, err)
			}
			q, err := OpenReadOnly(ctx, s, "ro")
			if !c.ok {
				var fe *FenceError
				if !errors.As(err, &fe) || !errors.Is(err, ErrFence) || fe.Server != c.stored {
					t.Fatalf("OpenReadOnly over %q: %v, want a FenceError", c.stored, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenReadOnly over %q: %v", c.stored, err)
			}
			st, err := q.Stats(ctx)
			if err != nil || st.Pending != 0 {
				t.Fatalf("Stats = %+v, %v", st, err)
			}
			if _, err := q.Browse(ctx, StatePending, 0, 10); err != nil {
				t.Fatal(err)
			}
			if got := do(t, "EXISTS", VersionKey); got != map[bool]string{true: "1", false: "0"}[c.stored != ""] {
				t.Fatalf("EXISTS %s = %s after OpenReadOnly over %q", VersionKey, got, c.stored)
			}
			if n := srv.CommandCalls(t, "set"); n != 0 {
				t.Fatalf("%d SETs on the server", n)
			}
		})
	}
}
