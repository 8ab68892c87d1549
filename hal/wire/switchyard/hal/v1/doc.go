// Package halv1 is the generated protobuf and gRPC code of the HAL wire
// protocol (hal.proto: HAL 1.0 calls and the 1.1 device-memory, fence and
// profiling additions). Use hal/wire, which wraps it, rather than this
// package directly; do not edit the .pb.go files, regenerate them.
package halv1
