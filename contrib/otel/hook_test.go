package emqotel_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/echomq/echomq-go/conn"
	emqotel "github.com/echomq/echomq-go/contrib/otel"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// traced dials a Client through addr with the tracing hook, exporting to
// an in-memory exporter.
func traced(t *testing.T, addr string, o emqotel.Options) (*conn.Client, *tracetest.InMemoryExporter, trace.Tracer) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	o.TracerProvider = tp
	opts := conn.Options{Addr: addr, DB: 3}
	opts.Hooks = append(opts.Hooks, emqotel.Hook(opts, o))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := conn.NewClient(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl, exp, tp.Tracer("test")
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// checkServer asserts the attributes every span has.
func checkServer(t *testing.T, s tracetest.SpanStub, addr string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	a := attrs(s)
	require.Equal(t, "redis", a["db.system.name"].AsString(), s.Name)
	require.Equal(t, "3", a["db.namespace"].AsString(), s.Name)
	require.Equal(t, host, a["server.address"].AsString(), s.Name)
	require.EqualValues(t, p, a["server.port"].AsInt64(), s.Name)
	require.Equal(t, trace.SpanKindClient, s.SpanKind)
}

// TestSpans: a span per command (a child of the caller's span), with the
// database conventions' attributes; a server error and a refusal with
// status Error and error.type; one span per pipeline, with its batch
// size, its command errors recorded on it.
func TestSpans(t *testing.T) {
	servertest.Need(t, srv)
	cl, exp, tr := traced(t, srv.Addr, emqotel.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pctx, parent := tr.Start(ctx, "parent")
	_, err := cl.Do(pctx, "SET", "k", "v")
	require.NoError(t, err)
	parent.End()
	_, err = cl.Do(ctx, "HGET", "k", "f")
	require.ErrorContains(t, err, "WRONGTYPE")
	_, err = cl.Do(ctx, "SUBSCRIBE", "news")
	require.ErrorIs(t, err, conn.ErrCommandRefused)

	var b pipeline.Batch
	for i := range 100 {
		b.Add("INCR", "n"+strconv.Itoa(i%3))
	}
	require.NoError(t, b.Exec(ctx, cl))
	b.Reset()
	b.Add("GET", "k")
	b.Add("LPUSH", "k", "x") // WRONGTYPE
	b.Add("PING")
	require.NoError(t, b.Exec(ctx, cl))

	spans := exp.GetSpans()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"SET", "parent", "HGET", "SUBSCRIBE", "BATCH INCR", "BATCH"}, names)
	for _, s := range spans {
		if s.Name != "parent" {
			checkServer(t, s, srv.Addr)
		}
	}
	set, par := spans[0], spans[1]
	require.Equal(t, par.SpanContext.SpanID(), set.Parent.SpanID(), "the command's span is a child of the caller's")
	require.Equal(t, "SET", attrs(set)["db.operation.name"].AsString())
	require.Equal(t, codes.Unset, set.Status.Code)

	hget := spans[2]
	require.Equal(t, codes.Error, hget.Status.Code)
	require.Equal(t, "WRONGTYPE", attrs(hget)["error.type"].AsString())
	require.Equal(t, "WRONGTYPE", attrs(hget)["db.response.status_code"].AsString())
	sub := spans[3]
	require.Equal(t, codes.Error, sub.Status.Code)
	require.Equal(t, "refused", attrs(sub)["error.type"].AsString())

	incr := spans[4]
	require.Equal(t, "BATCH INCR", attrs(incr)["db.operation.name"].AsString())
	require.EqualValues(t, 100, attrs(incr)["db.operation.batch.size"].AsInt64())
	require.Equal(t, codes.Unset, incr.Status.Code)
	mixed := spans[5]
	require.EqualValues(t, 3, attrs(mixed)["db.operation.batch.size"].AsInt64())
	require.Equal(t, codes.Error, mixed.Status.Code, "a command error in the pipeline")
	require.Len(t, mixed.Events, 1)
	ev := map[attribute.Key]attribute.Value{}
	for _, kv := range mixed.Events[0].Attributes {
		ev[kv.Key] = kv.Value
	}
	require.Equal(t, "LPUSH", ev["db.operation.name"].AsString())
	require.Equal(t, "WRONGTYPE", ev["error.type"].AsString())
}

// TestPipelineCommandSpans: with PipelineCommands each command of a
// pipeline has a child span of the pipeline's, in order.
func TestPipelineCommandSpans(t *testing.T) {
	servertest.Need(t, srv)
	cl, exp, _ := traced(t, srv.Addr, emqotel.Options{PipelineCommands: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b pipeline.Batch
	b.Add("SET", "a", "1")
	b.Add("GET", "a")
	require.NoError(t, b.Exec(ctx, cl))
	spans := exp.GetSpans()
	require.Len(t, spans, 3)
	require.Equal(t, "SET", spans[0].Name)
	require.Equal(t, "GET", spans[1].Name)
	require.Equal(t, "BATCH", spans[2].Name)
	for _, s := range spans[:2] {
		require.Equal(t, spans[2].SpanContext.SpanID(), s.Parent.SpanID())
	}
}

// TestSpanBroken: a command ended by a broken connection ends its span
// with error.type "broken".
func TestSpanBroken(t *testing.T) {
	servertest.Need(t, srv)
	p, err := faultproxy.New(srv.Addr)
	require.NoError(t, err)
	defer p.Close()
	cl, exp, _ := traced(t, p.Addr(), emqotel.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = cl.Do(ctx, "PING")
	require.NoError(t, err)
	p.Set(faultproxy.Mode{Stall: 30 * time.Second})
	errc := make(chan error, 1)
	up := p.BytesUp()
	go func() {
		_, err := cl.Do(ctx, "ECHO", "lost")
		errc <- err
	}()
	servertest.Eventually(t, "ECHO to reach the proxy", func() bool { return p.BytesUp() != up })
	p.CutAll()
	require.ErrorIs(t, <-errc, conn.ErrBroken)
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	require.Equal(t, "ECHO", spans[1].Name)
	require.Equal(t, codes.Error, spans[1].Status.Code)
	require.Equal(t, "broken", attrs(spans[1])["error.type"].AsString())
}
