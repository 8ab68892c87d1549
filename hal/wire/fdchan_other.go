//go:build !linux

package wire

import (
	"context"
	"os"
)

// FDChannel is unavailable off Linux.
type FDChannel struct{}

// SocketPair is unavailable off Linux.
func SocketPair() (local, remote *os.File, err error) { return nil, nil, errNoMemfd }

// NewFDChannel is unavailable off Linux.
func NewFDChannel(f *os.File) (*FDChannel, error) { return nil, errNoMemfd }

func (c *FDChannel) Send(id uint64, f *os.File) error { return errNoMemfd }

func (c *FDChannel) Receive(ctx context.Context, id uint64) (*os.File, error) { return nil, errNoMemfd }

func (c *FDChannel) Done() <-chan struct{} { return nil }

func (c *FDChannel) Close() error { return nil }
