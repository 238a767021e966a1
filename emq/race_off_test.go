//go:build !race

package emq

const raceEnabled = false
