module github.com/echomq/echomq-go/bench/peers

go 1.26.0

// The library under test (replaced by the work tree below);
// cmd/peerbench/adapter_echomq.go is the only file that imports it.
require github.com/echomq/echomq-go v0.0.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/echomq/echomq-go => ../..
