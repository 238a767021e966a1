package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/cliconn"
	"github.com/echomq/echomq-go/internal/cliredact"
	"github.com/echomq/echomq-go/web"
)

// webConfig is the web command's settings.
type webConfig struct {
	addr, url, prefix string
	queues            []string
	registry          bool
	readOnly          bool
}

// parseWebArgs reads `emq web [flags] [URL]`: the server's URL as -url
// or as the one argument, else $EMQ_URL, else the default.
func parseWebArgs(args []string, stdout io.Writer) (webConfig, error) {
	var c webConfig
	var queues string
	fs := flag.NewFlagSet("emq web", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "the address to serve the dashboard on")
	fs.StringVar(&c.url, "url", "", "server URL (or give it as the argument; default $EMQ_URL, else "+defaultURL+")")
	fs.StringVar(&queues, "queues", "", "the queues to show, comma-separated (besides the registry's)")
	fs.BoolVar(&c.registry, "registry", true, "also show the queues registered in "+web.RegistryKey)
	fs.BoolVar(&c.readOnly, "read-only", false, "serve no action (a replica is read-only by itself)")
	fs.StringVar(&c.prefix, "prefix", "", "the path prefix to serve under, e.g. /emq")
	all := args
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, "usage: emq web [-addr host:port] [-queues a,b] [-read-only] [-prefix /emq] [URL]\n\n")
				fs.SetOutput(stdout)
				fs.PrintDefaults()
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
	switch {
	case len(positional) > 1:
		return c, fmt.Errorf("web takes one URL, got %d arguments", len(positional))
	case len(positional) == 1 && c.url != "":
		return c, errors.New("web takes -url or a URL argument, not both")
	case len(positional) == 1:
		c.url = positional[0]
	}
	if c.url == "" {
		c.url = os.Getenv("EMQ_URL")
	}
	if c.url == "" {
		c.url = defaultURL
	}
	for _, q := range strings.Split(queues, ",") {
		if q = strings.TrimSpace(q); q == "" {
			continue
		}
		if err := emq.ValidQueue(q); err != nil {
			return c, fmt.Errorf("-queues: %v", err)
		}
		c.queues = append(c.queues, q)
	}
	if !c.registry && len(c.queues) == 0 {
		return c, errors.New("web needs -queues, or the registry (-registry=true)")
	}
	return c, nil
}

// runWeb is `emq web`: it serves the dashboard until SIGINT or SIGTERM.
func runWeb(args []string, stdout, stderr io.Writer) int {
	if len(cliredact.Secrets(args)) > 0 {
		stderr = cliredact.Writer{W: stderr, Args: args}
	}
	cfg, err := parseWebArgs(args, stdout)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fail(stderr, "%v (see emq web -h)", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveWeb(ctx, cfg, stdout, stderr, nil)
}

// serveWeb connects, builds the dashboard and serves it until ctx ends;
// ready, when not nil, gets the address it listens on.
func serveWeb(ctx context.Context, cfg webConfig, stdout, stderr io.Writer, ready chan<- string) int {
	opts, err := cliconn.ParseURL(cfg.url)
	if err != nil {
		fail(stderr, "-url: %v", err)
		return exitUsage
	}
	opts.ClientName = "emq-web"
	cl, err := dial(ctx, opts)
	if err != nil {
		fail(stderr, "%v", cliconn.Explain(where(opts), opts, err))
		return exitUsage
	}
	defer cl.Close()
	if _, err := emq.ReadFence(ctx, cl); err != nil {
		fail(stderr, "%s: %v", where(opts), err)
		return exitUsage
	}
	h, err := web.New(ctx, web.Options{
		Sender: cl, Prefix: cfg.prefix, Queues: cfg.queues, Registry: cfg.registry, ReadOnly: cfg.readOnly,
	})
	if err != nil {
		fail(stderr, "%v", err)
		return exitUsage
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle(cfg.prefix+"/", h)
	if cfg.prefix != "" {
		mux.Handle("/{$}", http.RedirectHandler(cfg.prefix+"/", http.StatusFound))
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		fail(stderr, "-addr: %v", err)
		return exitUsage
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	mode := ""
	if h.ReadOnly() {
		mode = " (read-only)"
	}
	fmt.Fprintf(stdout, "emq web: serving http://%s%s/ for %s%s\n", ln.Addr(), cfg.prefix, where(opts), mode)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fail(stderr, "serving: %v", err)
		return exitFailed
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	<-errc
	return exitOK
}
