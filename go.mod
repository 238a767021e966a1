module github.com/echomq/echomq-go

go 1.26.0

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/netresearch/go-cron v0.9.1
	golang.org/x/sync v0.25.0
)

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
