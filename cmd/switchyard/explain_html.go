package main

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/partitioner/htmlreport"
)

func renderHTML(g *graph.Graph, plan *partitioner.Plan, title string) ([]byte, error) {
	return htmlreport.Render(g, plan, title)
}
