// Package fuzz holds the native Go fuzz targets of the module's codec.
// It has no API; its tests are the point:
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 60s ./fuzz/
//	go test -run '^$' -fuzz '^FuzzRoundTrip$' -fuzztime 60s ./fuzz/
//
// FuzzDecode feeds arbitrary bytes to resp.Parse and to a resp.Reader fed
// in arbitrary chunks and checks that both agree, never panic and stay
// within their limits. FuzzRoundTrip builds a Value from the fuzz bytes,
// encodes it with resp.AppendValue and checks it decodes to the same value.
// The seed corpus in testdata/fuzz runs with every plain go test.
package fuzz
