package cluster

// MinRefresh is the least time between topology reads asked for by calls.
const MinRefresh = minRefresh
