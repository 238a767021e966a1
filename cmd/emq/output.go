package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/echomq/echomq-go/emq"
)

// printer writes a command's output: text for people, or with -json one
// JSON object per line.
type printer struct {
	w     io.Writer
	json  bool
	queue string
	rows  int // stats -watch lines printed, for the text header
}

// emit writes v as one line of JSON.
func (p *printer) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain values are marshalled here
	}
	p.w.Write(append(b, '\n'))
}

// table returns a tab-aligned writer; flush it when done.
func (p *printer) table() *tabwriter.Writer {
	return tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
}

// statsJSON is a stats object.
type statsJSON struct {
	Queue      string    `json:"queue"`
	Time       time.Time `json:"time"`
	Pending    int64     `json:"pending"`
	Active     int64     `json:"active"`
	Delayed    int64     `json:"delayed"`
	Dead       int64     `json:"dead"`
	Due        int64     `json:"due"`
	Expired    int64     `json:"expired"`
	Paused     bool      `json:"paused"`
	Oldest     string    `json:"oldest,omitempty"`
	LagSeconds float64   `json:"lag_seconds"`
	// Exists is false when none of the queue's sets or flags is on the
	// server (stats without -watch; -watch leaves it out).
	Exists *bool `json:"exists,omitempty"`
}

func (p *printer) statsJSON(st emq.QueueStats) statsJSON {
	return statsJSON{
		Queue: p.queue, Time: st.Time.UTC(), Pending: st.Pending, Active: st.Active, Delayed: st.Delayed,
		Dead: st.Dead, Due: st.Due, Expired: st.Expired, Paused: st.Paused, Oldest: st.Oldest,
		LagSeconds: st.Lag.Seconds(),
	}
}

// stats prints one reading; a queue that does not exist is said so.
func (p *printer) stats(st emq.QueueStats, exists bool) {
	if p.json {
		j := p.statsJSON(st)
		j.Exists = &exists
		p.emit(j)
		return
	}
	if !exists {
		fmt.Fprintf(p.w, "queue %s does not exist: none of its sets or flags is on the server\n", p.queue)
		return
	}
	tw := p.table()
	fmt.Fprintf(tw, "queue\t%s\n", p.queue)
	fmt.Fprintf(tw, "time\t%s (server clock)\n", st.Time.UTC().Format(time.RFC3339Nano))
	lag := ""
	if st.Oldest != "" {
		lag = fmt.Sprintf("lag %v, oldest %s", st.Lag, st.Oldest)
	}
	fmt.Fprintf(tw, "pending\t%d\t%s\n", st.Pending, lag)
	fmt.Fprintf(tw, "active\t%d\t%d leases expired\n", st.Active, st.Expired)
	fmt.Fprintf(tw, "delayed\t%d\t%d due\n", st.Delayed, st.Due)
	fmt.Fprintf(tw, "dead\t%d\t\n", st.Dead)
	fmt.Fprintf(tw, "paused\t%s\t\n", yesNo(st.Paused))
	tw.Flush()
}

// statsRowFormat lays out a stats -watch line.
const statsRowFormat = "%-12s %9v %9v %9v %9v %9v %9v %10v  %s\n"

// statsRow prints one stats -watch line, under a header the first time.
func (p *printer) statsRow(st emq.QueueStats) {
	defer func() { p.rows++ }()
	if p.json {
		p.emit(p.statsJSON(st))
		return
	}
	if p.rows == 0 {
		fmt.Fprintf(p.w, statsRowFormat, "time", "pending", "active", "delayed", "due", "dead", "expired", "lag", "paused")
	}
	lag := st.Lag.Round(time.Millisecond)
	fmt.Fprintf(p.w, statsRowFormat, st.Time.Format("15:04:05.000"), st.Pending, st.Active, st.Delayed,
		st.Due, st.Dead, st.Expired, lag, yesNo(st.Paused))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// jobJSON is one job of a browse page.
type jobJSON struct {
	ID            string `json:"id"`
	Score         int64  `json:"score"`
	Exists        bool   `json:"exists"`
	State         string `json:"state,omitempty"`
	Attempts      int64  `json:"attempts"`
	Payload       string `json:"payload,omitempty"`
	PayloadBase64 []byte `json:"payload_base64,omitempty"` // a payload that is not UTF-8
	Error         string `json:"error,omitempty"`
}

// browse prints a page of set, from offset.
func (p *printer) browse(set string, offset int, page []emq.JobInfo) {
	if p.json {
		jobs := make([]jobJSON, len(page))
		for i, j := range page {
			jobs[i] = jobJSON{ID: j.ID, Score: j.Score, Exists: j.Exists, State: string(j.State),
				Attempts: j.Attempts, Error: j.Error}
			if utf8.Valid(j.Payload) {
				jobs[i].Payload = string(j.Payload)
			} else {
				jobs[i].PayloadBase64 = j.Payload
			}
		}
		p.emit(struct {
			Queue  string    `json:"queue"`
			Set    string    `json:"set"`
			Offset int       `json:"offset"`
			Jobs   []jobJSON `json:"jobs"`
		}{p.queue, set, offset, jobs})
		return
	}
	if len(page) == 0 {
		fmt.Fprintf(p.w, "no %s jobs from %d on\n", set, offset)
		return
	}
	tw := p.table()
	fmt.Fprintln(tw, "ID\tTIME\tSTATE\tATTEMPTS\tERROR\tPAYLOAD")
	for _, j := range page {
		when := "-"
		if j.Score != 0 {
			when = j.Time().UTC().Format("2006-01-02T15:04:05.000Z")
		}
		state := string(j.State)
		if !j.Exists {
			state = "(no row)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.ID, when, state, j.Attempts, clip(j.Error), clip(string(j.Payload)))
	}
	tw.Flush()
}

// clip quotes s, clipped to 40 bytes, or gives "-" for "".
func clip(s string) string {
	if s == "" {
		return "-"
	}
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}

// count prints what a bulk operation did: "requeued 12".
func (p *printer) count(verb string, n int) {
	if p.json {
		p.emit(map[string]any{"queue": p.queue, verb: n})
		return
	}
	fmt.Fprintf(p.w, "%s %d\n", verb, n)
}

// perID prints the outcome of an operation on each of ids: text's
// words after the id ("requeued", "not dead", "was dead"), or with -json
// result's.
func (p *printer) perID(ids []string, text, result func(i int) string) {
	if p.json {
		type outcome struct {
			ID     string `json:"id"`
			Result string `json:"result"`
		}
		res := make([]outcome, len(ids))
		for i, id := range ids {
			res[i] = outcome{id, result(i)}
		}
		p.emit(struct {
			Queue   string    `json:"queue"`
			Results []outcome `json:"results"`
		}{p.queue, res})
		return
	}
	for i, id := range ids {
		fmt.Fprintf(p.w, "%s %s\n", id, text(i))
	}
}

// paused prints the queue's new paused flag.
func (p *printer) paused(paused bool) {
	if p.json {
		p.emit(map[string]any{"queue": p.queue, "paused": paused})
		return
	}
	if paused {
		fmt.Fprintf(p.w, "%s paused\n", p.queue)
	} else {
		fmt.Fprintf(p.w, "%s resumed\n", p.queue)
	}
}
