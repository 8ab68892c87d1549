package wire

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// Plugin is the go-plugin binding of switchyard.hal.v1: the plugin side
// sets Impl, the host side gets a halv1.BackendClient from GRPCClient.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl halv1.BackendServer
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the backend service.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("wire: plugin has no backend server")
	}
	halv1.RegisterBackendServer(s, p.Impl)
	return nil
}

// GRPCClient returns the backend client.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return halv1.NewBackendClient(c), nil
}

// PluginSets is what both sides offer to go-plugin's version negotiation:
// one plugin set per protocol version they speak.
func PluginSets(server halv1.BackendServer) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &Plugin{Impl: server}},
	}
}
