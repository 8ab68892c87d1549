package nn

import (
	"fmt"

	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// ErrInvalid makes an error wrapping kernels.ErrInvalid; kernels wrap it
// again with the node's label.
func ErrInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ops.ErrInvalid, fmt.Sprintf(format, args...))
}

func errUnsupportedRank(nd int) error {
	return fmt.Errorf("%w: %d spatial dimensions (1 to 3 are supported)", ops.ErrUnsupported, nd)
}
