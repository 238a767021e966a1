package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/cliconn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/sentinel"
)

// node is the server a run targets: one emqbench started, or one named by
// -url, with the connections the run uses.
type node struct {
	opts    conn.Options
	local   *localServer  // nil with -url
	conns   []conn.Sender // cfg.conns pipelining connections (cluster clients on a cluster)
	probe   *conn.Conn    // a connection to the node itself: HELLO, protocol
	cluster bool          // the node is a cluster node: commands are routed by slot
	server  string        // "redis 7.0.15", from HELLO or INFO
	version string        // "7.0.15"
	desc    string        // server plus where it is, for the report
	runID   string        // unique to this run: names its keys and queue

	sentinel *sentinel.Client // with a sentinel URL: conns[0], whose MasterSet the others dial through
}

// openNode starts or finds the node and opens cfg.conns connections. Its
// errors are one line and mean exit status 2.
func openNode(ctx context.Context, cfg config) (*node, error) {
	nd := &node{runID: newRunID()}
	if isSentinelURL(cfg.url) {
		return openSentinelNode(ctx, cfg, nd)
	}
	if cfg.url != "" {
		o, err := cliconn.ParseURL(cfg.url)
		if err != nil {
			return nil, fmt.Errorf("-url: %v", err)
		}
		nd.opts = o
	} else {
		s, err := startServer(ctx, cfg.module)
		if err != nil {
			return nil, fmt.Errorf("cannot start a local node: %v", err)
		}
		nd.local = s
		nd.opts = conn.Options{Addr: s.addr}
	}
	nd.opts.ClientName = "emqbench"
	probe, err := conn.Dial(ctx, nd.opts)
	if err != nil {
		nd.close()
		return nil, cliconn.Explain(where(nd.opts), nd.opts, err)
	}
	nd.probe = probe
	if info, err := infoSection(ctx, probe, "cluster"); err == nil && infoField(info, "cluster_enabled") == "1" {
		nd.cluster = true
	}
	for i := range cfg.conns {
		if !nd.cluster && i == 0 {
			nd.conns = append(nd.conns, probe)
			continue
		}
		c, err := nd.dial(ctx)
		if err != nil {
			nd.close()
			return nil, cliconn.Explain(where(nd.opts), nd.opts, err)
		}
		nd.conns = append(nd.conns, c)
	}
	nd.identify(ctx)
	return nd, nil
}

// sender is a connection, or a cluster client, that the run closes.
type sender interface {
	conn.Sender
	Close() error
}

// dial opens one more connection to the node with the run's options: on
// a cluster, a cluster client that routes by slot.
func (nd *node) dial(ctx context.Context) (sender, error) {
	if nd.cluster {
		o := cluster.Options{Seeds: []string{nd.opts.Addr}}
		o.Node = nd.opts
		o.Node.DB = 0
		return cluster.NewClient(ctx, o)
	}
	if nd.sentinel != nil {
		return conn.NewClient(ctx, nd.opts) // redials the current primary
	}
	return conn.Dial(ctx, nd.opts)
}

// primaries returns a connection to every primary: the node itself, or
// each primary of the cluster, for commands about a node (INFO, SCAN).
func (nd *node) primaries(ctx context.Context) ([]conn.Sender, error) {
	cl, ok := nd.conns[0].(*cluster.Client)
	if !ok {
		return []conn.Sender{nd.conns[0]}, nil
	}
	var out []conn.Sender
	for _, addr := range cl.Primaries() {
		c, err := cl.Node(ctx, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// commandCallsAll sums commandCalls over the primaries.
func (nd *node) commandCallsAll(ctx context.Context, name string) (int64, error) {
	ps, err := nd.primaries(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, p := range ps {
		n, err := commandCalls(ctx, p, name)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// where names the node's address for messages, without any password.
func where(o conn.Options) string {
	if o.Network == "unix" {
		return "unix:" + o.Addr
	}
	if o.Addr == "" {
		return "127.0.0.1:6379"
	}
	return o.Addr
}

// identify fills in the server's name and version: from HELLO under
// RESP3, else from INFO server.
func (nd *node) identify(ctx context.Context) {
	c := nd.probe
	name, ver := "", ""
	if h := c.Hello(); h.Type == resp.Map {
		if v, ok := h.Lookup("server"); ok {
			name = v.Text()
		}
		if v, ok := h.Lookup("version"); ok {
			ver = v.Text()
		}
	}
	if ver == "" || name == "redis" {
		// Valkey answers HELLO with server "redis" for compatibility;
		// INFO tells the two apart.
		if info, err := infoSection(ctx, c, "server"); err == nil {
			if v := infoField(info, "valkey_version"); v != "" {
				name, ver = "valkey", v
			} else if v := infoField(info, "redis_version"); v != "" && ver == "" {
				name, ver = "redis", v
			}
		}
	}
	if name == "" {
		name = "server"
	}
	nd.server, nd.version = strings.TrimSpace(name+" "+ver), ver
	if nd.local != nil {
		nd.desc = fmt.Sprintf("%s (started by emqbench on %s, pid %d)", nd.server, nd.local.addr, nd.local.cmd.Process.Pid)
	} else {
		nd.desc = fmt.Sprintf("%s at %s", nd.server, where(nd.opts))
	}
	if nd.cluster {
		nd.desc += " (cluster: commands routed by slot)"
	}
}

// close closes the connections and stops the node emqbench started.
func (nd *node) close() {
	for _, c := range nd.conns {
		if c, ok := c.(sender); ok && c != conn.Sender(nd.probe) && c != sender(nd.sentinel) {
			c.Close()
		}
	}
	if nd.probe != nil {
		nd.probe.Close()
	}
	if nd.sentinel != nil {
		nd.sentinel.Close() // last: the others dial through its MasterSet
	}
	nd.conns, nd.probe, nd.sentinel = nil, nil, nil
	nd.local.stop()
}

// conn returns the connection goroutine g uses.
func (nd *node) conn(g int) conn.Sender { return nd.conns[g%len(nd.conns)] }

// newRunID returns a short id unique to this run (time and pid), safe in a
// key and a queue name.
func newRunID() string {
	return strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + strconv.Itoa(os.Getpid())
}

// doArgs sends a command given as strings on the first connection.
func doArgs(ctx context.Context, nd *node, args ...string) (resp.Value, error) {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return nd.conns[0].Do(ctx, a...)
}

// infoSection returns the text of INFO section.
func infoSection(ctx context.Context, s conn.Sender, section string) (string, error) {
	v, err := s.Do(ctx, "INFO", section)
	if err != nil {
		return "", err
	}
	return string(v.VerbatimText()), nil
}

// infoField returns the value of "name:value" in INFO text, or "".
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// serverCPU returns the server's CPU seconds so far, used_cpu_sys +
// used_cpu_user from INFO cpu (every thread of the process), summed over
// the primaries of a cluster, or -1 when INFO cannot be read.
func serverCPU(ctx context.Context, nd *node) float64 {
	ps, err := nd.primaries(ctx)
	if err != nil {
		return -1
	}
	total := 0.0
	for _, p := range ps {
		info, err := infoSection(ctx, p, "cpu")
		if err != nil {
			return -1
		}
		sys, err1 := strconv.ParseFloat(infoField(info, "used_cpu_sys"), 64)
		user, err2 := strconv.ParseFloat(infoField(info, "used_cpu_user"), 64)
		if err1 != nil || err2 != nil {
			return -1
		}
		total += sys + user
	}
	return total
}

// commandCalls returns the calls of a command from INFO commandstats, as
// "cmdstat_<name>:calls=N,...": name is e.g. "script|load". A command never
// called since the last CONFIG RESETSTAT counts 0.
func commandCalls(ctx context.Context, s conn.Sender, name string) (int64, error) {
	info, err := infoSection(ctx, s, "commandstats")
	if err != nil {
		return 0, err
	}
	stat := infoField(info, "cmdstat_"+name)
	for field := range strings.SplitSeq(stat, ",") {
		if v, ok := strings.CutPrefix(field, "calls="); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, nil
}

// deleteMatching removes every key matching the glob pattern (SCAN MATCH
// on every primary, then UNLINK, a page at a time, routed key by key on a
// cluster) and returns how many it removed.
func deleteMatching(ctx context.Context, nd *node, pattern string) (int, error) {
	ps, err := nd.primaries(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, p := range ps {
		n, err := deleteOn(ctx, p, nd.conns[0], pattern)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// deleteOn scans one node and unlinks what matches through s.
func deleteOn(ctx context.Context, node, s conn.Sender, pattern string) (int, error) {
	cursor, removed := "0", 0
	var b pipeline.Batch
	for {
		v, err := node.Do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return removed, err
		}
		if v.Type != resp.Array || len(v.Elems) != 2 {
			return removed, fmt.Errorf("SCAN: unexpected reply %s", v)
		}
		cursor = v.Elems[0].Text()
		if keys := v.Elems[1].Elems; len(keys) > 0 {
			b.Reset()
			for _, k := range keys {
				b.Add("UNLINK", k.Text())
			}
			if err := b.Exec(ctx, s); err != nil {
				return removed, err
			}
			removed += len(keys)
		}
		if cursor == "0" {
			return removed, nil
		}
	}
}

// globEscape escapes the glob metacharacters of s for SCAN MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// routedLoads returns the SCRIPT LOADs a cluster client sent by itself
// (per node, on NOSCRIPT), 0 on a standalone node.
func (nd *node) routedLoads() uint64 {
	if cl, ok := nd.conns[0].(*cluster.Client); ok {
		return cl.Stats().ScriptLoads
	}
	return 0
}

// routedNoScripts returns the NOSCRIPT replies a cluster client acted on.
func (nd *node) routedNoScripts() uint64 {
	if cl, ok := nd.conns[0].(*cluster.Client); ok {
		return cl.Stats().NoScript
	}
	return 0
}

// loadsBy says who sent the loads of a check: the executor, and on a
// cluster the cluster client per node.
func (nd *node) loadsBy(executor, routed uint64) string {
	if nd.cluster {
		return fmt.Sprintf("executor %d, cluster client per node %d", executor, routed)
	}
	return fmt.Sprintf("executor %d", executor)
}
