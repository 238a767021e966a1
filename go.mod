module github.com/echomq/echomq-go

go 1.26
