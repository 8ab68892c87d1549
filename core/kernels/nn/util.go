package nn

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/kernels"
)

// errInvalid makes an error wrapping kernels.ErrInvalid; kernels wrap it
// again with the node's label.
func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", kernels.ErrInvalid, fmt.Sprintf(format, args...))
}

func errUnsupportedRank(nd int) error {
	return fmt.Errorf("%w: %d spatial dimensions (1 to 3 are supported)", kernels.ErrUnsupported, nd)
}
