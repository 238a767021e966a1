package sentinel

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/replica"
)

// DefaultSentinelPort is the port of a sentinel address given without
// one.
const DefaultSentinelPort = "26379"

// ParseURL reads Options from a URL:
//
//	redis+sentinel://[user[:password]@]host[:port][,host[:port]…]/master[/db][?option=value…]
//	rediss+sentinel://…   (TLS to the data nodes and to the sentinels)
//	valkey+sentinel://…, valkeys+sentinel://…   (the same)
//
// The hosts are the sentinels (port 26379 when omitted; an IPv6 host in
// brackets, [::1]:26379); master is the master set's name
// (percent-encoded if need be) and db the data nodes' database. The user
// name and password are the data nodes' (as in a redis:// URL); the
// sentinels' own credentials are options, so that they can differ:
//
//	sentinel_username, sentinel_password   the sentinels' AUTH
//	sentinel_timeout                      Options.SentinelTimeout (a Go duration)
//	failover_pause                        Options.FailoverPause (a Go duration)
//	replica_reads                         Options.Reads.Route: primary (default), random, latency, zone
//	replica_zone                          Options.Reads.Zone, the client's availability zone
//	replica_strict                        Options.Reads.Strict (true or false)
//
// Every option of conn.ParseURL applies to the data nodes (protocol,
// client_name, dial_timeout, read_timeout, write_timeout, min_backoff,
// max_backoff, max_pending, max_arg, blocking_conns, db). Unknown options
// are an error. The rules of conn.ParseURL for a '#', '/', '?' or '@' in a
// password hold for both passwords (percent-encode them: %23, %2F, %3F,
// %40); errors never quote the URL.
func ParseURL(raw string) (Options, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Options{}, urlErr("want scheme://")
	}
	var dataScheme string
	switch strings.ToLower(scheme) {
	case "redis+sentinel", "valkey+sentinel":
		dataScheme = "redis"
	case "rediss+sentinel", "valkeys+sentinel":
		dataScheme = "rediss"
	default:
		return Options{}, fmt.Errorf("%w: unsupported URL scheme %q (want redis+sentinel, rediss+sentinel, valkey+sentinel or valkeys+sentinel)", ErrBadOptions, scheme)
	}
	if strings.Contains(rest, "#") {
		return Options{}, urlErr("the URL holds a '#': a '#', '/', '?' or '@' in a user name or password must be percent-encoded")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		return Options{}, urlErr("no master name: want …/master")
	}
	auth, tail := rest[:end], rest[end:]
	if strings.Contains(tail, "@") {
		return Options{}, urlErr("an '@' after the hosts: a '/', '?' or '@' in a password must be percent-encoded")
	}
	userinfo, hosts := "", auth
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		userinfo, hosts = auth[:i+1], auth[i+1:]
	}
	var o Options
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return Options{}, urlErr("an empty sentinel address")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), DefaultSentinelPort
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, "[]") {
			return Options{}, urlErr("invalid sentinel address " + strconv.Quote(h))
		}
		o.Sentinels = append(o.Sentinels, net.JoinHostPort(host, port))
	}
	path, query, _ := strings.Cut(tail, "?")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return Options{}, urlErr("want the path /master or /master/db")
	}
	master, err := url.PathUnescape(parts[0])
	if err != nil {
		return Options{}, urlErr("invalid master name")
	}
	o.MasterName = master
	q, err := url.ParseQuery(query)
	if err != nil {
		return Options{}, urlErr("invalid query")
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "sentinel_username":
			o.SentinelUsername = v
		case "sentinel_password":
			o.SentinelPassword = v
		case "sentinel_timeout":
			o.SentinelTimeout, err = time.ParseDuration(v)
		case "failover_pause":
			o.FailoverPause, err = time.ParseDuration(v)
		case "replica_reads":
			o.Reads.Route, err = replica.ParseRoute(v)
		case "replica_zone":
			o.Reads.Zone = v
		case "replica_strict":
			o.Reads.Strict, err = strconv.ParseBool(v)
		default:
			continue
		}
		if err != nil {
			return Options{}, urlErr(fmt.Sprintf("invalid URL option %s: %v", k, err))
		}
		delete(q, k)
	}
	// The rest is the data nodes', read as conn reads a redis:// URL.
	data := dataScheme + "://" + userinfo + "127.0.0.1"
	if len(parts) == 2 {
		data += "/" + parts[1]
	}
	if len(q) > 0 {
		data += "?" + q.Encode()
	}
	d, err := conn.ParseURL(data)
	if err != nil {
		return Options{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	d.Addr = ""
	if d.TLS != nil {
		d.TLS.ServerName = "" // each node's, from its address
		o.SentinelTLS = d.TLS.Clone()
	}
	o.Options = d
	return o, nil
}

func urlErr(what string) error { return fmt.Errorf("%w: URL: %s", ErrBadOptions, what) }
