// Command peerreport turns peerbench's raw.jsonl into markdown tables and
// an SVG chart.
//
//	peerreport -in raw.jsonl -meta server.txt -md tables.md -svg chart.svg
//
// Per workload (name, depth, goroutines) and client it reports the median
// of the runs: ops/s with its min–max spread, client CPU seconds per
// million ops, allocs/op and bytes/op, and ratios against the best Go peer
// (rueidis, goredis, redigo): ops/s ÷ the peers' best median ops/s, and
// CPU ÷ the peers' lowest median CPU; and every client's CPU as a multiple
// of the floor's (the reference loop with no library, client "floor").
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// record is the subset of peerbench's JSON line the report reads.
type record struct {
	Client      string   `json:"client"`
	Version     string   `json:"version"`
	Workload    string   `json:"workload"`
	Depth       int      `json:"depth"`
	Goroutines  int      `json:"goroutines"`
	N           int      `json:"n"`
	Size        int      `json:"size"`
	OpsPerSec   float64  `json:"ops_per_sec"`
	CPUPer1M    float64  `json:"cpu_s_per_1m"`
	AllocsPerOp *float64 `json:"allocs_per_op"`
	BytesPerOp  *float64 `json:"bytes_per_op"`
	Errors      int64    `json:"errors"`
	Server      string   `json:"server"`
	Note        string   `json:"note"`
	Skipped     string   `json:"skipped"`
}

// peers are the Go clients echomq is compared with.
var peers = map[string]bool{"rueidis": true, "goredis": true, "redigo": true}

// shape identifies one workload: one table.
type shape struct {
	workload          string
	depth, goroutines int
}

// title names the shape, with the value size where the workload has one.
func (s shape) title(size int) string {
	name := strings.ToUpper(s.workload)
	switch s.workload {
	case "enqueue":
		name = "enqueue (EVALSHA)"
	case "pubsub":
		name = "pub/sub (PUBLISH to a subscriber of the same client, publish to receive)"
	}
	if s.workload != "ping" {
		name += fmt.Sprintf(" %d B", size)
	}
	if s.goroutines > 1 {
		return fmt.Sprintf("%s, %d goroutines x 1 command", name, s.goroutines)
	}
	if s.depth == 1 {
		return name + ", depth 1 (one command at a time)"
	}
	return fmt.Sprintf("%s, pipeline depth %d", name, s.depth)
}

// stat is one client's aggregate on one shape.
type stat struct {
	client, version, note string
	runs                  int
	errors                int64
	ops, cpu              []float64
	allocs, bytes         []float64
	skipped               string
}

// table is one shape's stats, clients in order of first appearance.
type table struct {
	shape shape
	size  int
	stats []*stat
}

func (t *table) stat(client string) *stat {
	for _, s := range t.stats {
		if s.client == client {
			return s
		}
	}
	s := &stat{client: client}
	t.stats = append(t.stats, s)
	return s
}

func main() {
	in := flag.String("in", "raw.jsonl", "peerbench JSON lines")
	meta := flag.String("meta", "", "optional text file quoted at the top (server version, machine)")
	md := flag.String("md", "tables.md", "markdown output")
	svg := flag.String("svg", "chart.svg", "SVG output (empty: none)")
	flag.Parse()
	tables, err := load(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerreport:", err)
		os.Exit(1)
	}
	var header string
	if *meta != "" {
		b, err := os.ReadFile(*meta)
		if err != nil {
			fmt.Fprintln(os.Stderr, "peerreport:", err)
			os.Exit(1)
		}
		header = string(b)
	}
	if err := os.WriteFile(*md, []byte(markdown(tables, header)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "peerreport:", err)
		os.Exit(1)
	}
	if *svg != "" {
		if err := os.WriteFile(*svg, []byte(chart(tables)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "peerreport:", err)
			os.Exit(1)
		}
	}
}

// load groups the records of path by shape, in order of first appearance.
func load(path string) ([]*table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tables []*table
	byShape := map[shape]*table{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		sh := shape{r.Workload, r.Depth, r.Goroutines}
		t := byShape[sh]
		if t == nil {
			t = &table{shape: sh, size: r.Size}
			byShape[sh] = t
			tables = append(tables, t)
		}
		s := t.stat(r.Client)
		if r.Skipped != "" {
			s.skipped = r.Skipped
			continue
		}
		s.version, s.note = r.Version, r.Note
		s.runs++
		s.errors += r.Errors
		s.ops = append(s.ops, r.OpsPerSec)
		s.cpu = append(s.cpu, r.CPUPer1M)
		if r.AllocsPerOp != nil {
			s.allocs = append(s.allocs, *r.AllocsPerOp)
			s.bytes = append(s.bytes, *r.BytesPerOp)
		}
	}
	return tables, sc.Err()
}

// median of xs (NaN-free), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// floorCPU returns the floor client's median CPU, or 0 without one.
func (t *table) floorCPU() float64 {
	for _, s := range t.stats {
		if s.client == "floor" && s.runs > 0 {
			return median(s.cpu)
		}
	}
	return 0
}

// bestPeer returns the peers' best median ops/s and lowest median CPU.
func (t *table) bestPeer() (ops, cpu float64) {
	for _, s := range t.stats {
		if !peers[s.client] || s.runs == 0 {
			continue
		}
		if m := median(s.ops); m > ops {
			ops = m
		}
		if m := median(s.cpu); cpu == 0 || m < cpu {
			cpu = m
		}
	}
	return ops, cpu
}
