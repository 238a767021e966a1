package web_test

import (
	"context"
	"log"
	"net/http"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/web"
)

// The dashboard mounted under /emq of the host's own server, behind the
// host's authentication.
func ExampleNew() {
	ctx := context.Background()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: "127.0.0.1:6379"})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	// Producers and consumers register their queues once, so that the
	// dashboard finds them without a scan.
	if err := web.RegisterQueues(ctx, cl, "mail"); err != nil {
		log.Fatal(err)
	}
	h, err := web.New(ctx, web.Options{
		Sender:   cl,
		Prefix:   "/emq",
		Registry: true,
		Middleware: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, pass, ok := r.BasicAuth(); !ok || pass != "secret" {
					w.Header().Set("WWW-Authenticate", `Basic realm="emq"`)
					http.Error(w, "unauthorized", http.StatusUnauthorized)
					return
				}
				next.ServeHTTP(w, r)
			})
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/emq/", h)
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
