//go:build !unix

package regular

// nonBlock is 0 where there is no O_NONBLOCK; Open still refuses
// non-regular files after opening them.
const nonBlock = 0
