// Package wire is the out-of-process form of the HAL contract: the gRPC
// protocol (package switchyard.hal.v1 in switchyard/hal/v1, generated code
// committed), the go-plugin handshake, shared-memory regions and the
// conversions between hal types and their wire form. Both the host
// (plugins/grpc) and the plugin side (sdk) use it; vendors never do.
//
// Contracts:
//   - Tensors never travel inside gRPC messages: they live in memfd regions
//     mapped by both processes, and messages carry descriptors. A region's
//     file descriptor crosses over a Unix socket pair (FDChannel) tagged
//     with the region id, before the message that names it.
//   - Every descriptor coming from the other process is checked (bounds,
//     dtype, element count) before it is used; a hostile peer gets
//     InvalidArgument, never a panic or an out-of-bounds access. On the
//     host, an output descriptor is checked against the type the runtime
//     inferred (CheckOutput: dtype, rank, static dims, exact byte size)
//     before anything is mapped, allocated or copied; a mismatch is
//     Internal (the plugin broke the contract), naming both types.
//   - Regions are memfds sealed against shrinking and growing (and
//     further sealing) at creation (RegionSeals); a region received from
//     the other process that is not sealed so, not a memfd, or smaller
//     than claimed is refused before it is mapped (CheckSealed), so
//     neither process can make the other fault with SIGBUS.
//   - A descriptor is accepted only where the protocol expects one
//     (FDChannel, Side): on the host, while a call that may return a
//     plugin region is in flight, at most one per output of such calls;
//     every other descriptor is closed on arrival.
//   - Error messages from the other process (status messages, doorbell
//     error frames, transport errors) are bounded by MaxErrorMessage with
//     a note saying how long they were.
//   - The doorbell carries the caller's deadline, and cancellation, as
//     gRPC does (DoorbellVersion).
//   - Errors travel as Status{code, message} with hal.Code numbers
//     unchanged; gRPC errors mean the transport failed and map to
//     Unavailable or DeadlineExceeded.
package wire

import (
	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the go-plugin application protocol version of
// switchyard.hal.v1. A host offers every version it speaks
// (VersionedPlugins) and go-plugin picks the highest both sides share.
const ProtocolVersion = 1

// PluginName is the name the backend is dispensed under.
const PluginName = "backend"

// Handshake is shared by host and plugin. The cookie only tells a user who
// runs a plugin binary by hand that it is not meant to be run directly.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SWITCHYARD_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "4f1c0a5e-switchyard-hal-backend",
}

// FDChannelFD is the file descriptor number the plugin process finds the
// socket pair's end on (exec.Cmd.ExtraFiles[0]).
const FDChannelFD = 3

// EnvFDChannel tells the plugin which descriptor carries region fds.
const EnvFDChannel = "SWITCHYARD_PLUGIN_FD_CHANNEL"

// MaxMessageBytes bounds gRPC messages both ways. Bulk data goes through
// shared memory, so messages stay small; the bound is generous so that a
// large graph structure (without its constants) never hits gRPC's 4 MiB
// default.
const MaxMessageBytes = 256 << 20

// InlineLimit is the largest serialised subgraph carried inline; larger
// ones go through shared memory.
const InlineLimit = 64 << 10

// PluginRegionBit marks region ids created by the plugin.
const PluginRegionBit = uint64(1) << 63
