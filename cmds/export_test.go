package cmds

import (
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
)

// For the tests of package cmds_test, which use conn (conn imports cmds,
// so they cannot be in package cmds).

// Srv returns the server TestMain started.
func Srv() *servertest.Server { return srv }

// WaitLong is the tests' backstop against hangs.
const WaitLong = waitLong

// CPUNow is the process's CPU time.
func CPUNow() time.Duration { return cpuNow() }

// RaceEnabled is whether the race detector is on (allocation budgets are
// skipped then).
const RaceEnabled = raceEnabled

// advanceBuilds moves b on as if it had started and built n commands
// (each moves the generation on by 2: open, then built).
func advanceBuilds(b *Builder, n uint64) { b.gen += 2 * n }
