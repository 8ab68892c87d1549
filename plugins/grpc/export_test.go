package grpcplugin

import halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"

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

// RawRPC is the current plugin process's gRPC client, for tests that send
// what a well-behaved host never would (forged ids).
func RawRPC(b *Backend) halv1.BackendClient {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return nil
	}
	return b.cur.rpc
}
