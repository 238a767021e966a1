package sentinel

import (
	"testing"

	"github.com/echomq/echomq-go/internal/readers"
)

// SetZoneOf makes zone give each replica's availability zone for the
// test's length, in place of its INFO (Valkey 8.0 and Redis report none).
func SetZoneOf(t *testing.T, zone func(addr string) string) {
	readers.ZoneOf = zone
	t.Cleanup(func() { readers.ZoneOf = nil })
}

// CheckNow runs one look of m's checker (ask the sentinels, confirm, end
// the connections to a node that is no longer a primary) and returns
// when it is done.
func CheckNow(m *MasterSet) { m.check() }
