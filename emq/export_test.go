package emq

// ServerAddrForExamples returns the address of the package's test server,
// for the runnable examples of package emq_test.
func ServerAddrForExamples() string { return srv.Addr }
