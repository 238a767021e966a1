package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/cliredact"
)

// command is one verb of the CLI: its name, what it does, and the flags
// it takes besides the common ones (-url, -queue, -json).
type command struct {
	name  string
	help  string
	flags []string
	ids   bool // takes job ids as arguments
}

// commands lists the verbs in the order the usage shows them.
var commands = []command{
	{"stats", "counts of every set, due delayed jobs, expired leases, paused, lag", []string{"watch", "interval"}, false},
	{"browse", "a page of one set, with each job's row", []string{"state", "offset", "count"}, false},
	{"requeue", "dead jobs back to pending: the ids given, or -all, or those a filter selects", []string{"all", "error-prefix", "since", "before", "limit"}, true},
	{"delete", "the jobs given by id, in whatever state, with their rows", nil, true},
	{"trim", "the oldest dead jobs, beyond -max-age or -max-count, or -all", []string{"max-age", "max-count", "all"}, false},
	{"pause", "stop claims on the queue (jobs already claimed run on)", nil, false},
	{"resume", "let claims run again", nil, false},
	// job system (J1)
	{"cancel", "the jobs given by id, pending, delayed or running: dead with \"cancelled\"", nil, true},
	{"workers", "the consumers registered on the queue (jobs.Server), with their heartbeats", nil, false},
	{"schedules", "the queue's cron schedules, each with the last slot fired", nil, false},
	{"unique", "the job that holds the unique key -key, and its state", []string{"key"}, false},
	{"limits", "the queue's limits; with -active, -rate or -per, set them (the others kept)", []string{"active", "rate", "per"}, false},
}

// common are the flags every command takes.
var common = []string{"url", "queue", "json"}

// config is one run's settings, from the command line.
type config struct {
	cmd   command
	ids   []string
	url   string
	queue string
	json  bool

	watch    bool          // stats
	interval time.Duration // stats -watch

	state         string // browse
	offset, count int

	all           bool // requeue, trim
	errPrefix     string
	since, before time.Time
	limit         int

	maxAge   time.Duration // trim; -1: not given (no bound)
	maxCount int           // -1: not given (no bound)

	key string // unique

	active, rate int           // limits; -1: not given
	per          time.Duration // limits; -1: not given
}

// errHelp is returned by parseArgs for -h: usage was printed, exit 0.
var errHelp = errors.New("help requested")

// defaultURL is the server when neither -url nor $EMQ_URL names one.
const defaultURL = "redis://127.0.0.1:6379"

// parseArgs reads the command line: flags before or after the command,
// job ids among them. Errors are one line, for exit status 2; none
// quotes an argument that may hold a password.
func parseArgs(args []string, stdout io.Writer) (config, error) {
	var c config
	var since, before string
	fs := flag.NewFlagSet("emq", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.url, "url", "", "server URL: redis://, rediss://, valkey://, valkeys:// or unix://\n(default $EMQ_URL, else "+defaultURL+")")
	fs.StringVar(&c.queue, "queue", "", "the queue (required)")
	fs.BoolVar(&c.json, "json", false, "print JSON, one object per line")
	fs.BoolVar(&c.watch, "watch", false, "stats: print a line every -interval until interrupted")
	fs.DurationVar(&c.interval, "interval", time.Second, "stats -watch: time between lines")
	fs.StringVar(&c.state, "state", "pending", "browse: the set, pending, active, delayed or dead")
	fs.IntVar(&c.offset, "offset", 0, "browse: the first job's position in the set")
	fs.IntVar(&c.count, "count", 20, "browse: how many jobs")
	fs.BoolVar(&c.all, "all", false, "requeue: every dead job; trim: every dead job")
	fs.StringVar(&c.errPrefix, "error-prefix", "", "requeue: the dead jobs whose last error starts with this")
	fs.StringVar(&since, "since", "", "requeue: the dead jobs that died at or after this: RFC 3339, or a duration ago (2h)")
	fs.StringVar(&before, "before", "", "requeue: the dead jobs that died before this: RFC 3339, or a duration ago")
	fs.IntVar(&c.limit, "limit", 0, "requeue: at most this many jobs (0: no limit)")
	fs.DurationVar(&c.maxAge, "max-age", 0, "trim: the dead jobs that died at least this long ago, e.g. 720h")
	fs.IntVar(&c.maxCount, "max-count", 0, "trim: all but the newest this many dead jobs")
	fs.StringVar(&c.key, "key", "", "unique: the unique key (jobs.UniqueBy's keys are jobs.UniqueKey(type, fields...))")
	fs.IntVar(&c.active, "active", 0, "limits: at most this many jobs active at once (0: no limit)")
	fs.IntVar(&c.rate, "rate", 0, "limits: at most this many claims per -per (0: no rate)")
	fs.DurationVar(&c.per, "per", 0, "limits: the rate's window, e.g. 1s (0: no rate)")

	all := args
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(stdout, fs)
				return c, errHelp
			}
			return c, errors.New(cliredact.Redact(err.Error(), all))
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["max-age"] {
		c.maxAge = -1 // no age bound
	}
	if !set["max-count"] {
		c.maxCount = -1 // no count bound
	}
	if !set["active"] {
		c.active = -1
	}
	if !set["rate"] {
		c.rate = -1
	}
	if !set["per"] {
		c.per = -1
	}
	if len(positional) == 0 {
		return c, fmt.Errorf("no command given (one of %s)", names())
	}
	i := slices.IndexFunc(commands, func(cmd command) bool { return cmd.name == positional[0] })
	if i < 0 {
		return c, fmt.Errorf("unknown command %s (one of %s)%s", cliredact.Quote(positional[0]), names(), cliredact.URLHint(positional[0]))
	}
	c.cmd, c.ids = commands[i], positional[1:]
	for name := range set {
		if !slices.Contains(common, name) && !slices.Contains(c.cmd.flags, name) {
			return c, fmt.Errorf("%s does not take -%s", c.cmd.name, name)
		}
	}
	if c.url == "" {
		c.url = os.Getenv("EMQ_URL")
	}
	if c.url == "" {
		c.url = defaultURL
	}
	var err error
	if c.since, err = parseTime("since", since); err != nil {
		return c, err
	}
	if c.before, err = parseTime("before", before); err != nil {
		return c, err
	}
	return c, c.validate(set)
}

// names lists the commands for a message.
func names() string {
	var n []string
	for _, c := range commands {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

// parseTime reads -since or -before: RFC 3339, or a Go duration meaning
// that long before now on this host's clock. "" is the zero time.
func parseTime(flagName, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("-%s %s: want an RFC 3339 time (2025-01-02T15:04:05Z) or a duration ago (2h)", flagName, cliredact.Quote(v))
	}
	return t, nil
}

// validate checks what the flag package cannot.
func (c *config) validate(set map[string]bool) error {
	switch {
	case c.queue == "":
		return errors.New("no -queue given")
	case cliredact.LooksSecret(c.queue):
		return fmt.Errorf("-queue %s: a URL is not a queue name%s", cliredact.NotShown, cliredact.URLHint(c.queue))
	}
	if err := emq.ValidQueue(c.queue); err != nil {
		return fmt.Errorf("-queue: %v", err)
	}
	if !c.cmd.ids && len(c.ids) > 0 {
		return fmt.Errorf("%s takes no arguments, got %s%s", c.cmd.name, cliredact.Quote(c.ids[0]), cliredact.URLHint(c.ids...))
	}
	for _, id := range c.ids {
		if !emq.ValidID(id) {
			return fmt.Errorf("%s is not a job id (14 bytes: JOB and 11 base62 digits)%s", cliredact.Quote(id), cliredact.URLHint(id))
		}
	}
	switch c.cmd.name {
	case "stats":
		if c.interval <= 0 {
			return fmt.Errorf("-interval %v: want a positive duration", c.interval)
		}
	case "browse":
		if _, ok := states[c.state]; !ok {
			return fmt.Errorf("-state %s: want pending, active, delayed or dead", cliredact.Quote(c.state))
		}
		if c.offset < 0 || c.count < 1 || c.count > 10_000 {
			return fmt.Errorf("-offset %d -count %d: want an offset >= 0 and a count of 1 to 10000", c.offset, c.count)
		}
	case "requeue":
		filter := set["all"] || set["error-prefix"] || set["since"] || set["before"]
		switch {
		case len(c.ids) > 0 && (filter || set["limit"]):
			return errors.New("requeue takes job ids, or -all or a filter (-error-prefix, -since, -before), not both")
		case len(c.ids) == 0 && !filter:
			return errors.New("requeue needs job ids, or -all, or a filter (-error-prefix, -since, -before)")
		case c.limit < 0:
			return fmt.Errorf("-limit %d: want 0 (no limit) or more", c.limit)
		case !c.since.IsZero() && !c.before.IsZero() && !c.since.Before(c.before):
			return errors.New("-since is not before -before")
		}
	case "delete":
		if len(c.ids) == 0 {
			return errors.New("delete needs job ids")
		}
	case "cancel":
		if len(c.ids) == 0 {
			return errors.New("cancel needs job ids")
		}
	case "unique":
		if c.key == "" {
			return errors.New("unique needs -key")
		}
	case "limits":
		if (set["active"] && c.active < 0) || (set["rate"] && c.rate < 0) || (set["per"] && c.per < 0) {
			return errors.New("-active, -rate and -per cannot be negative")
		}
	case "trim":
		switch {
		case c.all && (set["max-age"] || set["max-count"]):
			return errors.New("trim takes -all, or -max-age and -max-count, not both")
		case !c.all && !set["max-age"] && !set["max-count"]:
			return errors.New("trim needs -max-age, -max-count or -all")
		case set["max-age"] && c.maxAge < 0, set["max-count"] && c.maxCount < 0:
			return errors.New("-max-age and -max-count cannot be negative")
		}
	}
	return nil
}

// states maps -state's values to the sets.
var states = map[string]emq.State{
	"pending": emq.StatePending, "active": emq.StateActive,
	"delayed": emq.StateDelayed, "dead": emq.StateDead,
}

// printUsage writes the usage text and every flag with its default.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "usage: emq [flags] <command> [job ids]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s  %s\n", c.name, c.help)
	}
	fmt.Fprintf(w, "  %-9s  %s\n", "web", "serve the web dashboard: emq web [-addr host:port] [URL] (see emq web -h)")
	fmt.Fprint(w, "\nFlags (-url, -queue and -json for every command):\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, `
Exit status: 0 on success (stats -watch: when interrupted), 1 when the
operation failed or a job was not found or not dead, 2 for bad flags or
a server that cannot be reached, 130 when interrupted.
`)
}
