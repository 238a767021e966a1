package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// referenceArgs returns the redis-benchmark arguments for w and a note on
// how the reference's workload differs from the Go clients'.
func referenceArgs(w *workload, host, port string, n int) ([]string, string) {
	conns := 1
	if w.goroutines > 1 {
		conns = w.goroutines
	}
	args := []string{"-h", host, "-p", port, "-n", strconv.Itoa(n),
		"-c", strconv.Itoa(conns), "-P", strconv.Itoa(w.depth), "--csv"}
	switch w.name {
	case wPing:
		return append(args, "-t", "ping_mbulk"), ""
	case wSet:
		return append(args, "-t", "set", "-d", strconv.Itoa(len(w.payload))), "no reply check"
	case wGet:
		return append(args, "-t", "get", "-d", strconv.Itoa(len(w.payload))), "no reply check"
	}
	// __rand_int__ becomes a 12-digit random number, drawn separately for
	// each occurrence; -r 10^11 keeps collisions (reply 0) rare.
	args = append(args, "-r", "100000000000",
		"EVALSHA", w.sha, "2", jobPrefix+"JOB__rand_int__", pendingKey, "JOB__rand_int__", w.payload)
	return args, "ids JOB+12 random digits (15 B, not 14), row key and id drawn independently; no reply check, rows counts jobs created"
}

// runReference runs the C benchmark tool as a child on a freshly prepared
// server: ops/s is the tool's own figure, CPU the child's rusage.
func runReference(rec *record, w *workload, addr, bin string) error {
	if w.name == wPubsub {
		return fmt.Errorf("%s has no subscriber: run-peers.sh does not run it for pubsub", rec.Client)
	}
	if bin == "" {
		p, err := exec.LookPath(rec.Client)
		if err != nil {
			return err
		}
		bin = p
	}
	rec.Client = filepath.Base(bin)
	server, err := prepare(addr, w)
	if err != nil {
		return err
	}
	rec.Server = server
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	args, note := referenceArgs(w, host, port, rec.N)
	rec.Note = note
	if v, err := exec.Command(bin, "--version").Output(); err == nil {
		rec.Version = strings.TrimSpace(string(v))
	}

	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err = cmd.Run()
	rec.WallS = time.Since(t0).Seconds()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, errb.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rec.CPUUserS, rec.CPUSysS = tvSeconds(ru.Utime), tvSeconds(ru.Stime)
	rec.CPUPer1M = (rec.CPUUserS + rec.CPUSysS) / float64(rec.N) * 1e6
	rps, err := parseCSVRPS(out.Bytes())
	if err != nil {
		return fmt.Errorf("%w in output %q", err, out.String())
	}
	rec.OpsPerSec = rps
	if w.name == wEnqueue {
		rows, err := countRows(addr)
		if err != nil {
			return err
		}
		rec.Rows = &rows
	}
	return nil
}

// parseCSVRPS reads the rps column of redis-benchmark --csv output (the
// first data row; the header names the columns).
func parseCSVRPS(out []byte) (float64, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return 0, err
	}
	for i, row := range rows {
		if i == 0 || len(row) < 2 {
			continue
		}
		return strconv.ParseFloat(row[1], 64)
	}
	return 0, fmt.Errorf("no rps row")
}
