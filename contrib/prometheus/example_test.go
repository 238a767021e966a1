package emqprom_test

import (
	"context"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/echomq/echomq-go/conn"
	emqprom "github.com/echomq/echomq-go/contrib/prometheus"
	"github.com/echomq/echomq-go/emq"
)

// A worker process exporting its queue, worker and command metrics on
// :9100/metrics. (It needs a server, so it is compiled but not run.)
func Example() {
	ctx := context.Background()
	col := emqprom.New(emqprom.Options{})
	prometheus.MustRegister(col)

	cl, err := conn.NewClient(ctx, conn.Options{Addr: "127.0.0.1:6379", Hooks: []conn.Hook{col.Hook()}})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	q, err := emq.Open(ctx, cl, "emails")
	if err != nil {
		log.Fatal(err)
	}
	col.WatchQueue(q)

	cfg := emq.WorkerConfig{Concurrency: 16}
	col.Instrument(&cfg, "emails")
	w, err := emq.NewWorker(q, emq.HandlerFunc(func(ctx context.Context, job *emq.Job) error {
		return nil // send the email
	}), cfg)
	if err != nil {
		log.Fatal(err)
	}
	metrics := &http.Server{Addr: ":9100", Handler: promhttp.Handler()}
	go metrics.ListenAndServe()
	defer metrics.Shutdown(context.Background()) // stops the goroutine above
	log.Print(w.Run(ctx))
}
