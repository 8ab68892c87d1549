// Package vulkan is the start of the Vulkan backend (issue #14): so far
// only the purego bindings of the Vulkan 1.0 loader (libvulkan.so.1) and
// the C structure mirrors. It registers no backend yet. vulkan-go is not
// used: it needs cgo, speaks 1.1.88 headers and loads the unversioned
// libvulkan.so.
package vulkan
