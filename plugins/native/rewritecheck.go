package native

import (
	"fmt"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// verifyRewrites makes Compile check every graph its fusion passes
// produce (checkRewrite) and fail on a violation; the package's tests
// turn it on, so every test that compiles on native checks its rewrites.
var verifyRewrites = false

// rewriteFailures are the violations checkRewrite found since the last
// takeRewriteFailures (tests: a compile error alone could be hidden by a
// runtime that places the partition elsewhere).
var rewriteFailures struct {
	sync.Mutex
	errs []error
}

// rewriteFailed records and returns err.
func rewriteFailed(err error) error {
	rewriteFailures.Lock()
	rewriteFailures.errs = append(rewriteFailures.errs, err)
	rewriteFailures.Unlock()
	return err
}

// takeRewriteFailures returns and clears the recorded violations.
func takeRewriteFailures() []error {
	rewriteFailures.Lock()
	defer rewriteFailures.Unlock()
	errs := rewriteFailures.errs
	rewriteFailures.errs = nil
	return errs
}

// checkRewrite verifies a rewritten graph (fuse, rewriteBody) against the
// graph it came from: in the rewritten node order, every value a node
// reads (its inputs and what its nested graphs capture) is defined before
// it — a graph input, a constant, a value the original graph itself takes
// from an enclosing scope, or an earlier node's output —; no value is
// defined twice; and every graph output is defined.
func checkRewrite(orig, g *graph.Graph) error {
	defined := map[string]bool{}
	for _, in := range g.Inputs {
		defined[in.Name] = true
	}
	for k := range g.Initializers {
		defined[k] = true
	}
	for _, v := range orig.FreeVariables() {
		defined[v] = true
	}
	for i, n := range g.Nodes {
		for _, in := range nodeReadsAll(n) {
			if in != "" && !defined[in] {
				return fmt.Errorf("native: rewrite of graph %q: node %d (%s) reads %q before anything defines it", g.Name, i, n.Label(), in)
			}
		}
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if defined[o] {
				return fmt.Errorf("native: rewrite of graph %q: node %d (%s) defines %q again", g.Name, i, n.Label(), o)
			}
			defined[o] = true
		}
	}
	for _, o := range g.Outputs {
		if !defined[o.Name] {
			return fmt.Errorf("native: rewrite of graph %q: output %q is not defined", g.Name, o.Name)
		}
	}
	return nil
}
