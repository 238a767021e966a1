package conn

// IdleIDs returns the CLIENT ID of every idle lent connection of cl, for
// tests: one the Client does not know is 0.
func (cl *Client) IdleIDs() []int64 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	ids := make([]int64, 0, len(cl.idle))
	for _, c := range cl.idle {
		ids = append(ids, c.id)
	}
	return ids
}

// MaxArgOf is the MaxArg a Conn dialled with o would use.
func MaxArgOf(o Options) int { return o.withDefaults().MaxArg }
