package emqotel

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/echomq/echomq-go/contrib/otel"

// Options configure the tracing hook. The zero value is ready.
type Options struct {
	// TracerProvider makes the tracer; default otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// SystemName is db.system.name; default "redis".
	SystemName string
	// PipelineCommands gives each command of a pipeline a child span of
	// the pipeline's span too.
	PipelineCommands bool
}

// Hook returns the hook that traces what a connection or Client made with
// co sends; add it to co.Hooks. co gives the spans their server.address,
// server.port and db.namespace.
func Hook(co conn.Options, o Options) conn.Hook {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	sys := o.SystemName
	if sys == "" {
		sys = semconv.DBSystemNameRedis.Value.AsString()
	}
	t := &tracer{
		tr:       tp.Tracer(ScopeName),
		perCmd:   o.PipelineCommands,
		attrs:    []attribute.KeyValue{semconv.DBSystemNameKey.String(sys), semconv.DBNamespace(strconv.Itoa(co.DB))},
		spanKind: trace.WithSpanKind(trace.SpanKindClient),
	}
	if co.Network == "unix" {
		t.attrs = append(t.attrs, semconv.ServerAddress(co.Addr))
	} else if co.Addr != "" {
		host, port, err := net.SplitHostPort(co.Addr)
		if err != nil {
			host = co.Addr
		}
		t.attrs = append(t.attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			t.attrs = append(t.attrs, semconv.ServerPort(p))
		}
	}
	return conn.Hook{
		BeforeCommand:  t.beforeCommand,
		AfterCommand:   t.afterCommand,
		BeforePipeline: t.beforePipeline,
		AfterPipeline:  t.afterPipeline,
	}
}

type tracer struct {
	tr       trace.Tracer
	perCmd   bool
	attrs    []attribute.KeyValue
	spanKind trace.SpanStartOption
}

// inPipeline marks the context of a pipeline's commands.
type inPipeline struct{}

// pipelineState is what a pipeline's commands tell its span.
type pipelineState struct {
	span   trace.Span
	errors atomic.Int64 // error replies
}

func (t *tracer) start(ctx context.Context, name string, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, len(t.attrs)+len(extra))
	attrs = append(append(attrs, t.attrs...), extra...)
	return t.tr.Start(ctx, name, t.spanKind, trace.WithAttributes(attrs...))
}

func (t *tracer) beforeCommand(ctx context.Context, cmd conn.CommandInfo, _ conn.RawCommand) context.Context {
	if ctx.Value(inPipeline{}) != nil && !t.perCmd {
		return ctx
	}
	ctx, _ = t.start(ctx, cmd.Name, semconv.DBOperationName(cmd.Name))
	return ctx
}

func (t *tracer) afterCommand(ctx context.Context, cmd conn.CommandInfo, _ resp.Value, _ time.Duration, err error) {
	p, _ := ctx.Value(inPipeline{}).(*pipelineState)
	if p != nil && err != nil {
		p.errors.Add(1)
		p.span.AddEvent("command error", trace.WithAttributes(semconv.DBOperationName(cmd.Name), semconv.ErrorTypeKey.String(conn.ErrorKind(err))))
	}
	if p != nil && !t.perCmd {
		return
	}
	span := trace.SpanFromContext(ctx)
	if p != nil && span == p.span {
		return // no span of its own
	}
	end(span, err)
}

func (t *tracer) beforePipeline(ctx context.Context, p conn.PipelineInfo) context.Context {
	name := "BATCH"
	if len(p.Commands) > 0 {
		same := true
		for _, c := range p.Commands[1:] {
			if c.Name != p.Commands[0].Name {
				same = false
				break
			}
		}
		if same {
			name = "BATCH " + p.Commands[0].Name
		}
	}
	ctx, span := t.start(ctx, name, semconv.DBOperationName(name), semconv.DBOperationBatchSize(len(p.Commands)))
	return context.WithValue(ctx, inPipeline{}, &pipelineState{span: span})
}

func (t *tracer) afterPipeline(ctx context.Context, _ conn.PipelineInfo, _ time.Duration, err error) {
	p, _ := ctx.Value(inPipeline{}).(*pipelineState)
	if p == nil {
		return
	}
	if err == nil && p.errors.Load() > 0 {
		p.span.SetStatus(codes.Error, strconv.FormatInt(p.errors.Load(), 10)+" commands failed")
		p.span.SetAttributes(semconv.ErrorTypeKey.String("command_errors"))
		p.span.End()
		return
	}
	end(p.span, err)
}

// end ends span with err's status and attributes.
func end(span trace.Span, err error) {
	if err != nil {
		code := conn.ErrorKind(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(code))
		var se *resp.ServerError
		if errors.As(err, &se) {
			span.SetAttributes(semconv.DBResponseStatusCode(code))
		}
	}
	span.End()
}
