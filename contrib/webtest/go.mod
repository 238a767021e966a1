module github.com/echomq/echomq-go/contrib/webtest

go 1.26.0

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/echomq/echomq-go v0.0.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/netresearch/go-cron v0.9.1 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

replace github.com/echomq/echomq-go => ../..
