package attention

import "github.com/switchyard-hal/switchyard/core/graph"

// unknownDim is a dim whose size is not known at load time.
var unknownDim = graph.Dim{Value: -1}
