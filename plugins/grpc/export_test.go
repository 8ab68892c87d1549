package grpcplugin

// DoorbellUsable reports whether the current plugin process is called
// over the doorbell (for tests that must exercise that path).
func DoorbellUsable(b *Backend) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur != nil && b.cur.door.Usable()
}

// PendingFDs is how many region descriptors from the current plugin
// process wait to be claimed, and how many were closed on arrival.
func PendingFDs(b *Backend) (pending int, dropped uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return 0, 0
	}
	return b.cur.fds.Pending(), b.cur.fds.Dropped()
}
