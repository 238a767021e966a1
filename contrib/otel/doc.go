// Package emqotel traces the commands and pipelines of echomq-go
// connections with OpenTelemetry: a [conn.Hook] that starts a client span
// per command and one per pipeline, following the OpenTelemetry semantic
// conventions for database client spans (semconv v1.43.0):
//
//   - db.system.name: "redis" (Valkey speaks the same protocol and the
//     conventions name no "valkey"; Options.SystemName changes it);
//   - db.operation.name: the command's name ("GET", "EVALSHA",
//     "EMQ.CLAIM"); for a pipeline "BATCH GET" when every command has the
//     same name, else "BATCH", as the conventions have batches named;
//   - db.operation.batch.size: the pipeline's command count;
//   - db.namespace: the database index ("0"), from conn.Options.DB;
//   - server.address and server.port: from conn.Options.Addr (a unix
//     socket's path, without port);
//   - on an error: the span's status Error, error.type (the server's
//     error code, "WRONGTYPE", or the kind of failure: "broken",
//     "not_sent",
//     "closed", "refused", "canceled", "not_connected", "timeout",
//     "too_large", "other") and, for a server error,
//     db.response.status_code (the same code).
//
// The span name is db.operation.name. Spans are children of the span in
// the context given to the call (Do, DoFunc, a Batch's Exec). The
// commands of a pipeline get no span of their own: the pipeline's span
// stands for them (its batch size counts them), and an error reply among
// them is recorded on it as an event, with the span's status Error; set
// Options.PipelineCommands for a child span per command as well.
//
// It is a module of its own, so that the core's go.mod stays free of
// OpenTelemetry:
//
//	opts := conn.Options{Addr: addr}
//	opts.Hooks = append(opts.Hooks, emqotel.Hook(opts, emqotel.Options{}))
//	cl, err := conn.NewClient(ctx, opts)
package emqotel
