package main

import (
	"errors"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/partitioner"
)

func renderHTML(g *graph.Graph, plan *partitioner.Plan, title string) ([]byte, error) {
	return nil, errors.New("HTML rendering is not available yet")
}
