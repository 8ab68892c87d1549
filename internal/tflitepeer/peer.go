// Package tflitepeer runs TensorFlow Lite itself beside Switchyard, for
// tests and benchmarks that compare with it: the TFLite C library
// (libtensorflowlite_c.so, the build that npm's tfjs-tflite-node ships;
// .ci/install.d/tflite.sh puts it in the cache) is opened with purego at
// run time, so nothing here needs cgo, and nothing outside tests imports
// this package.
//
// The library is found at $SWITCHYARD_TFLITE_PEER, else at
// ~/.cache/switchyard/tflite-peer/libtensorflowlite_c.so. Open fails with
// the reason when it is absent; tests skip on that unless
// SWITCHYARD_REQUIRE_BACKENDS names "tflite" (internal/backendtest).
//
// The C API applies no delegate by itself: NewInterpreter runs TFLite's
// builtin kernels. NewInterpreterWith can apply the XNNPACK delegate the
// library carries (TfLiteXNNPackDelegateCreate), the delegate TFLite's
// standard builds apply by default: with its default flags it takes the
// float32 operators (float16 weights behind DEQUANTIZE included) and leaves
// int8 ones to TFLite's own optimized int8 kernels.
package tflitepeer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/switchyard-hal/switchyard/internal/dynlib"
)

// Lib is the opened TFLite C library; each func field is bound to the C
// function its tag names.
type Lib struct {
	Path    string
	Version string

	version        func() *byte                                       `sym:"TfLiteVersion"`
	modelCreate    func(data unsafe.Pointer, size uintptr) uintptr    `sym:"TfLiteModelCreate"`
	modelDelete    func(m uintptr)                                    `sym:"TfLiteModelDelete"`
	optionsCreate  func() uintptr                                     `sym:"TfLiteInterpreterOptionsCreate"`
	optionsDelete  func(o uintptr)                                    `sym:"TfLiteInterpreterOptionsDelete"`
	optionsThreads func(o uintptr, n int32)                           `sym:"TfLiteInterpreterOptionsSetNumThreads"`
	interpCreate   func(m, o uintptr) uintptr                         `sym:"TfLiteInterpreterCreate"`
	interpDelete   func(i uintptr)                                    `sym:"TfLiteInterpreterDelete"`
	allocate       func(i uintptr) int32                              `sym:"TfLiteInterpreterAllocateTensors"`
	invoke         func(i uintptr) int32                              `sym:"TfLiteInterpreterInvoke"`
	inputCount     func(i uintptr) int32                              `sym:"TfLiteInterpreterGetInputTensorCount"`
	inputTensor    func(i uintptr, k int32) uintptr                   `sym:"TfLiteInterpreterGetInputTensor"`
	outputCount    func(i uintptr) int32                              `sym:"TfLiteInterpreterGetOutputTensorCount"`
	outputTensor   func(i uintptr, k int32) uintptr                   `sym:"TfLiteInterpreterGetOutputTensor"`
	tensorByteSize func(t uintptr) uintptr                            `sym:"TfLiteTensorByteSize"`
	tensorType     func(t uintptr) int32                              `sym:"TfLiteTensorType"`
	tensorName     func(t uintptr) *byte                              `sym:"TfLiteTensorName"`
	copyFromBuffer func(t uintptr, p unsafe.Pointer, n uintptr) int32 `sym:"TfLiteTensorCopyFromBuffer"`
	copyToBuffer   func(t uintptr, p unsafe.Pointer, n uintptr) int32 `sym:"TfLiteTensorCopyToBuffer"`
	resetVariables func(i uintptr) int32                              `sym:"TfLiteInterpreterResetVariableTensors"`
	addDelegate    func(o, d uintptr)                                 `sym:"TfLiteInterpreterOptionsAddDelegate"`
	xnnpackCreate  func(opts unsafe.Pointer) uintptr                  `sym:"TfLiteXNNPackDelegateCreate"`
	xnnpackDelete  func(d uintptr)                                    `sym:"TfLiteXNNPackDelegateDelete"`
}

// xnnpackOptions is TfLiteXNNPackDelegateOptions of TFLite 2.9: the thread
// count and a flag word (TfLiteXNNPackDelegateOptionsDefault returns both
// zero in one 8-byte register, so the struct has nothing after them).
type xnnpackOptions struct {
	numThreads int32
	flags      uint32
}

// Options says how NewInterpreterWith builds an interpreter.
type Options struct {
	// Threads is the interpreter's thread count (and the delegate's).
	Threads int
	// XNNPACK applies the XNNPACK delegate with its default flags.
	XNNPACK bool
}

var (
	once    sync.Once
	opened  *Lib
	openErr error
)

// DefaultPath is where the library is looked for.
func DefaultPath() string {
	if p := os.Getenv("SWITCHYARD_TFLITE_PEER"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "switchyard", "tflite-peer", "libtensorflowlite_c.so")
}

// Open opens the library once per process.
func Open() (*Lib, error) {
	once.Do(func() { opened, openErr = open(DefaultPath()) })
	return opened, openErr
}

func open(path string) (*Lib, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("the TFLite peer library is fetched for linux/amd64 only, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if path == "" {
		return nil, errors.New("no home directory to find the TFLite peer in; set SWITCHYARD_TFLITE_PEER")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("TFLite peer library not found (%v): run .ci/install.d/tflite.sh or set SWITCHYARD_TFLITE_PEER", err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("open TFLite peer %s: %v", path, err)
	}
	l := &Lib{Path: path}
	if err := dynlib.Bind(h, l); err != nil {
		return nil, fmt.Errorf("TFLite peer %s: %v", path, err)
	}
	l.Version = goString(l.version())
	return l, nil
}

func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// Interpreter is one model loaded into a TFLite interpreter. It is not
// safe for concurrent use.
type Interpreter struct {
	lib   *Lib
	model uintptr
	opts  uintptr
	it    uintptr
	deleg uintptr // the XNNPACK delegate, deleted after the interpreter
	data  []byte  // the flatbuffer, which TFLite reads in place
	pin   runtime.Pinner
}

// Tensor describes one input or output of the interpreter.
type Tensor struct {
	Name  string
	Type  int32 // TfLiteType: 1 float32, 9 int8, …
	Bytes int
}

// NewInterpreter loads a .tflite flatbuffer with the given thread count,
// on TFLite's builtin kernels.
func (l *Lib) NewInterpreter(model []byte, threads int) (*Interpreter, error) {
	return l.NewInterpreterWith(model, Options{Threads: threads})
}

// NewInterpreterWith loads a .tflite flatbuffer as opts says.
func (l *Lib) NewInterpreterWith(model []byte, opts Options) (*Interpreter, error) {
	threads := opts.Threads
	if len(model) == 0 {
		return nil, errors.New("empty model")
	}
	ip := &Interpreter{lib: l, data: append([]byte(nil), model...)}
	ip.pin.Pin(&ip.data[0])
	ip.model = l.modelCreate(unsafe.Pointer(&ip.data[0]), uintptr(len(ip.data)))
	if ip.model == 0 {
		ip.Close()
		return nil, errors.New("TfLiteModelCreate failed")
	}
	ip.opts = l.optionsCreate()
	l.optionsThreads(ip.opts, int32(threads))
	if opts.XNNPACK {
		xo := xnnpackOptions{numThreads: int32(threads)}
		ip.deleg = l.xnnpackCreate(unsafe.Pointer(&xo))
		runtime.KeepAlive(&xo)
		if ip.deleg == 0 {
			ip.Close()
			return nil, errors.New("TfLiteXNNPackDelegateCreate failed")
		}
		l.addDelegate(ip.opts, ip.deleg)
	}
	ip.it = l.interpCreate(ip.model, ip.opts)
	if ip.it == 0 {
		ip.Close()
		return nil, errors.New("TfLiteInterpreterCreate failed")
	}
	if st := l.allocate(ip.it); st != 0 {
		ip.Close()
		return nil, fmt.Errorf("TfLiteInterpreterAllocateTensors: status %d", st)
	}
	return ip, nil
}

func (ip *Interpreter) describe(t uintptr) Tensor {
	return Tensor{Name: goString(ip.lib.tensorName(t)), Type: ip.lib.tensorType(t), Bytes: int(ip.lib.tensorByteSize(t))}
}

// Inputs describes the interpreter's inputs in order.
func (ip *Interpreter) Inputs() []Tensor {
	var out []Tensor
	for k := int32(0); k < ip.lib.inputCount(ip.it); k++ {
		out = append(out, ip.describe(ip.lib.inputTensor(ip.it, k)))
	}
	return out
}

// Outputs describes the interpreter's outputs in order.
func (ip *Interpreter) Outputs() []Tensor {
	var out []Tensor
	for k := int32(0); k < ip.lib.outputCount(ip.it); k++ {
		out = append(out, ip.describe(ip.lib.outputTensor(ip.it, k)))
	}
	return out
}

// Run resets the variable tensors (LSTM states), copies the inputs in
// (raw little-endian bytes of each input's exact size), invokes and
// returns each output's bytes.
func (ip *Interpreter) Run(inputs [][]byte) ([][]byte, error) {
	if err := ip.Set(inputs); err != nil {
		return nil, err
	}
	if st := ip.lib.resetVariables(ip.it); st != 0 {
		return nil, fmt.Errorf("TfLiteInterpreterResetVariableTensors: status %d", st)
	}
	if err := ip.Invoke(); err != nil {
		return nil, err
	}
	return ip.Get()
}

// Set copies the inputs in.
func (ip *Interpreter) Set(inputs [][]byte) error {
	n := int(ip.lib.inputCount(ip.it))
	if len(inputs) != n {
		return fmt.Errorf("model has %d inputs, got %d", n, len(inputs))
	}
	for k, b := range inputs {
		t := ip.lib.inputTensor(ip.it, int32(k))
		if want := int(ip.lib.tensorByteSize(t)); len(b) != want || want == 0 {
			return fmt.Errorf("input %d needs %d bytes, got %d", k, want, len(b))
		}
		if st := ip.lib.copyFromBuffer(t, unsafe.Pointer(&b[0]), uintptr(len(b))); st != 0 {
			return fmt.Errorf("input %d: TfLiteTensorCopyFromBuffer status %d", k, st)
		}
		runtime.KeepAlive(b)
	}
	return nil
}

// Invoke runs the model once on the inputs set.
func (ip *Interpreter) Invoke() error {
	if st := ip.lib.invoke(ip.it); st != 0 {
		return fmt.Errorf("TfLiteInterpreterInvoke: status %d", st)
	}
	return nil
}

// Get copies the outputs out.
func (ip *Interpreter) Get() ([][]byte, error) {
	var out [][]byte
	for k := int32(0); k < ip.lib.outputCount(ip.it); k++ {
		t := ip.lib.outputTensor(ip.it, k)
		b := make([]byte, ip.lib.tensorByteSize(t))
		if len(b) > 0 {
			if st := ip.lib.copyToBuffer(t, unsafe.Pointer(&b[0]), uintptr(len(b))); st != 0 {
				return nil, fmt.Errorf("output %d: TfLiteTensorCopyToBuffer status %d", k, st)
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// Close releases the interpreter.
func (ip *Interpreter) Close() {
	if ip.it != 0 {
		ip.lib.interpDelete(ip.it)
		ip.it = 0
	}
	if ip.opts != 0 {
		ip.lib.optionsDelete(ip.opts)
		ip.opts = 0
	}
	if ip.deleg != 0 {
		ip.lib.xnnpackDelete(ip.deleg)
		ip.deleg = 0
	}
	if ip.model != 0 {
		ip.lib.modelDelete(ip.model)
		ip.model = 0
	}
	ip.pin.Unpin()
}
