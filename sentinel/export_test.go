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
