package grpcplugin_test

import (
	"context"
	"testing"

	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// BenchmarkHealthRPC measures the bare gRPC round trip (AutoMTLS, unix
// socket) to a plugin process: the floor under any per-call overhead.
func BenchmarkHealthRPC(b *testing.B) {
	be := openPlugin(b, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{"Relu"}})}})
	ctx := context.Background()
	for b.Loop() {
		if err := be.Health(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
