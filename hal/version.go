package hal

import "fmt"

// Version is a HAL contract version. Minor versions add optional surface
// and stay compatible; a new major version breaks the contract.
type Version struct {
	Major, Minor uint32
}

// Current is the HAL version this build of Switchyard speaks.
var Current = Version{Major: 1, Minor: 1}

// V1_0 and V1_1 name the versions; 1.1 added device memory, fences,
// per-call profiling, compile options for devices and run-time declines.
var (
	V1_0 = Version{Major: 1, Minor: 0}
	V1_1 = Version{Major: 1, Minor: 1}
)

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less orders versions.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

// VersionRange is the inclusive range of HAL versions a backend speaks.
type VersionRange struct {
	Min, Max Version
}

func (r VersionRange) String() string {
	if r == (VersionRange{}) {
		return "?" // not known before the backend is loaded
	}
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.Min.String() + "–" + r.Max.String()
}

// Negotiate picks the version host and backend will speak: the newest
// version in the backend's range that the host supports. The host speaks
// every minor version of its own major version up to its own. Every loading
// path (linked in, C library, plugin process) calls this one function.
func Negotiate(host Version, backend VersionRange) (Version, error) {
	if backend.Max.Less(backend.Min) {
		return Version{}, &Error{Code: CodeInvalidArgument, Msg: fmt.Sprintf("backend declares an empty HAL version range %s..%s", backend.Min, backend.Max)}
	}
	// candidate: the highest version both accept
	best := backend.Max
	if host.Less(best) {
		best = host
	}
	if best.Major != host.Major || best.Less(backend.Min) {
		return Version{}, &Error{Code: CodeFailedPrecondition, Msg: fmt.Sprintf("incompatible HAL version: host speaks %s (major %d), backend speaks %s", host, host.Major, backend)}
	}
	return best, nil
}
