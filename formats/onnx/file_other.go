//go:build !unix

package onnx

// nonBlock is 0 where there is no O_NONBLOCK; openRegular still refuses
// non-regular files after opening them.
const nonBlock = 0
