package wire

// Internal entry points for the package's tests and fuzz targets.
var (
	ServeDoorbellConn = serveDoorbell
	NewDoorbellConn   = newDoorbell
	ReadFrame         = readFrame
	WriteFrame        = writeFrame
)

const (
	FrameExecute = frameExecute
	FramePing    = framePing
	FrameError   = frameError
	FrameCall    = frameCall
	MaxFrame     = maxFrame
)
