//go:build !linux

package wire

import (
	"context"
	"os"
)

// FDChannel is unavailable off Linux.
type FDChannel struct{}

// Side says which end of the channel this is.
type Side int

const (
	// HostSide is the host's end.
	HostSide Side = iota + 1
	// PluginSide is the plugin's end.
	PluginSide
)

// MaxPluginPending bounds the descriptors the plugin side holds unclaimed.
const MaxPluginPending = 256

// SocketPair is unavailable off Linux.
func SocketPair() (local, remote *os.File, err error) { return nil, nil, errNoMemfd }

// DoorbellPair is unavailable off Linux.
func DoorbellPair() (host *os.File, plugin *os.File, err error) { return nil, nil, errNoMemfd }

// NewFDChannel is unavailable off Linux.
func NewFDChannel(f *os.File, side Side) (*FDChannel, error) { return nil, errNoMemfd }

func (c *FDChannel) Send(id uint64, f *os.File) error { return errNoMemfd }

func (c *FDChannel) Receive(ctx context.Context, id uint64) (*os.File, error) { return nil, errNoMemfd }

func (c *FDChannel) Expect(n int) (done func()) { return func() {} }

func (c *FDChannel) Discard(id uint64) {}

func (c *FDChannel) Dropped() uint64 { return 0 }

func (c *FDChannel) Pending() int { return 0 }

func (c *FDChannel) Done() <-chan struct{} { return nil }

func (c *FDChannel) Close() error { return nil }
