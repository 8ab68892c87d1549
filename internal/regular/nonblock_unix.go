//go:build unix

package regular

import "syscall"

// nonBlock opens FIFOs and devices without waiting for a peer.
const nonBlock = syscall.O_NONBLOCK
