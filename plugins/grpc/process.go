package grpcplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
	"github.com/switchyard-hal/switchyard/internal/sealed"
)

// process is one generation of the plugin: a started binary, its gRPC
// client and its descriptor channel.
type process struct {
	gen     uint64
	client  *plugin.Client
	cmd     *exec.Cmd
	rpc     halv1.BackendClient
	fds     *wire.FDChannel
	door    *wire.Doorbell
	pid     int
	info    hal.Info
	sockDir string
	// binSHA256 is the sha256 of the sealed bytes this process executes.
	binSHA256 string
	// devmem: the plugin serves the HAL 1.1 RPCs (it lists
	// wire.FeatureDeviceMemory and speaks HAL 1.1).
	devmem bool
	// fence ids of this process the host will never name again, sent
	// with the next request that carries release_fences
	relMu   sync.Mutex
	release []uint64

	dead     chan struct{} // closed when the process is gone (crash or kill)
	stopOnce sync.Once
	exitMsg  string // set before dead closes... read after
	mu       sync.Mutex
}

const sockPrefix = "switchyard-plugin-"

// cleanStaleSockets removes socket directories left by hosts that died
// without cleaning up (the host pid is part of the directory's name).
func cleanStaleSockets() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sockPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), sockPrefix)
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// start verifies, starts and handshakes one plugin process. The binary is
// opened once and copied into a sealed private memfd (internal/sealed); the
// copy's sha256 is what is checked against the manifest, and the copy is
// what the child executes (/proc/self/fd/N). go-plugin's SecureConfig is
// handed that same path, so its own checksum reads the sealed bytes too:
// nothing that happens to o.Path after the copy reaches the process.
func (b *Backend) start(ctx context.Context, gen uint64) (p *process, err error) {
	o := &b.opts
	want := strings.ToLower(o.SHA256)
	if want == "" && !o.AllowUnverified {
		return nil, &hal.Error{Code: hal.CodeFailedPrecondition, Backend: b.name, Op: "open", Msg: fmt.Sprintf("plugin binary %s has no sha256 to verify against (set Options.SHA256 or AllowUnverified)", o.Path)}
	}
	if err := sealed.CheckPath(o.Path); err != nil {
		if !sealed.InsecureAllowed() {
			return nil, &hal.Error{Code: hal.CodeFailedPrecondition, Backend: b.name, Op: "open", Msg: fmt.Sprintf("plugin binary %s", sealed.Hint()), Err: err}
		}
		b.log.Warn("starting a plugin binary other users can replace ("+sealed.EnvAllowInsecure+" is set)", "plugin", b.name, "problem", err.Error())
	}
	bin, err := sealed.Open(o.Path)
	if err != nil {
		return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: "open", Msg: "cannot read plugin binary " + o.Path, Err: err}
	}
	defer bin.Close() // the child has executed it once Client() returns
	if want != "" && bin.SHA256 != want {
		return nil, manifest.ChecksumError(b.name, o.Path, want, bin.SHA256)
	}
	sum, _ := hex.DecodeString(want)

	local, remote, err := wire.SocketPair()
	if err != nil {
		return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: "open", Err: err}
	}
	doorLocal, doorRemote, err := wire.DoorbellPair()
	if err != nil {
		local.Close()
		remote.Close()
		return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: "open", Err: err}
	}
	defer doorRemote.Close() // the child has its copy once started
	sockDir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", sockPrefix, os.Getpid()))
	if err != nil {
		local.Close()
		remote.Close()
		return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: "open", Err: err}
	}
	extra := []*os.File{remote, doorRemote}
	// the child execs the sealed copy by descriptor; os/exec rearranges the
	// child's descriptors below 2×(their count + its pipe), so the copy's
	// descriptor goes above that
	exe, exeFile, err := bin.PathAbove(2*(3+len(extra)+1) + 1)
	if err != nil {
		local.Close()
		remote.Close()
		doorLocal.Close()
		_ = os.RemoveAll(sockDir)
		return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: "open", Err: err}
	}
	if exeFile != nil {
		defer exeFile.Close()
	}
	cmd := exec.Command(exe, o.Args...)
	cmd.Args[0] = o.Path // what the plugin (and ps) sees as its name
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Env = append(cmd.Env, wire.EnvFDChannel+"="+strconv.Itoa(wire.FDChannelFD), wire.EnvDoorbell+"="+strconv.Itoa(wire.DoorbellFD), plugin.EnvUnixSocketDir+"="+sockDir)
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = sysProcAttr()

	cfg := &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(nil),
		Cmd:              cmd,
		AutoMTLS:         true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           newSlogAdapter(b.log, b.name),
		StartTimeout:     o.StartTimeout,
		SkipHostEnv:      true, // the environment is built above, host first, then Options.Env
		Stderr:           io.Discard,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(wire.MaxMessageBytes), grpc.MaxCallSendMsgSize(wire.MaxMessageBytes))},
	}
	if len(sum) > 0 {
		// go-plugin checks again right before exec; cmd.Path is the sealed
		// copy, so this hashes the bytes that will run (we checked above to
		// name both hashes in the error)
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	client := plugin.NewClient(cfg)
	p = &process{gen: gen, client: client, cmd: cmd, sockDir: sockDir, dead: make(chan struct{}), binSHA256: bin.SHA256}
	fail := func(code hal.Code, msg string, e error) (*process, error) {
		client.Kill()
		local.Close()
		doorLocal.Close()
		remote.Close()
		_ = os.RemoveAll(sockDir)
		return nil, &hal.Error{Code: code, Backend: b.name, Op: "open", Msg: msg, Err: e}
	}
	rpcClient, err := client.Client()
	remote.Close() // the child has its copy
	if err != nil {
		if err == plugin.ErrChecksumsDoNotMatch {
			// cannot happen with a sealed copy; said plainly if it does
			return fail(hal.CodeFailedPrecondition, fmt.Sprintf("checksum mismatch: the sealed copy of plugin binary %s (sha256 %s) failed go-plugin's check against the manifest's sha256 %s", o.Path, bin.SHA256, want), nil)
		}
		return fail(hal.CodeUnavailable, fmt.Sprintf("starting plugin %s", o.Path), err)
	}
	if v := client.NegotiatedVersion(); v != wire.ProtocolVersion {
		return fail(hal.CodeFailedPrecondition, fmt.Sprintf("plugin speaks wire protocol %d, host speaks %d", v, wire.ProtocolVersion), nil)
	}
	raw, err := rpcClient.Dispense(wire.PluginName)
	if err != nil {
		return fail(hal.CodeUnavailable, "dispensing the backend", err)
	}
	p.rpc = raw.(halv1.BackendClient)
	if p.fds, err = wire.NewFDChannel(local, wire.HostSide); err != nil {
		return fail(hal.CodeUnavailable, "descriptor channel", err)
	}
	ictx, cancel := b.callCtx(ctx)
	ir, err := p.rpc.Info(ictx, &halv1.InfoRequest{})
	cancel()
	if err != nil {
		p.fds.Close()
		return fail(hal.CodeUnavailable, "asking the plugin for its info", wire.TransportError(ictx, err))
	}
	p.info = wire.InfoFrom(ir)
	p.pid = int(ir.Pid)
	for _, f := range ir.Features {
		if f == wire.FeatureDeviceMemory && !p.info.HAL.Max.Less(hal.V1_1) {
			p.devmem = true
		}
	}
	if _, err := hal.Negotiate(hal.Current, p.info.HAL); err != nil {
		p.fds.Close()
		return fail(hal.CodeFailedPrecondition, fmt.Sprintf("plugin %s (%s) refused", p.info.Name, o.Path), err)
	}
	if b.opts.Name != "" && p.info.Name != b.opts.Name {
		p.fds.Close()
		return fail(hal.CodeFailedPrecondition, fmt.Sprintf("plugin %s calls itself %q, its manifest says %q", o.Path, p.info.Name, b.opts.Name), nil)
	}
	// the fast path for Execute; a plugin that does not serve it is
	// called over gRPC
	p.door = wire.NewDoorbell(doorLocal, 2*time.Second)
	b.log.Debug("plugin started", "plugin", p.info.Name, "pid", p.pid, "generation", gen, "doorbell", p.door.Usable())
	b.wg.Add(1)
	go b.watch(p)
	return p, nil
}

// watch waits for the process to go away (its end of the descriptor
// channel closes when it exits for any reason) and reports it.
func (b *Backend) watch(p *process) {
	defer b.wg.Done()
	<-p.fds.Done()
	b.died(p) // first: callers stop using p and a restart is scheduled
	p.stop()
	b.mu.Lock()
	closing := b.closed
	b.mu.Unlock()
	if closing {
		b.log.Debug("plugin process exited", "plugin", b.name, "pid", p.pid, "status", p.exit())
	} else {
		b.log.Warn("plugin process exited", "plugin", b.name, "pid", p.pid, "status", p.exit())
	}
}

// stop kills the process (if alive), waits for it, and releases
// everything: descriptor channel, socket directory. Safe to call twice.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		close(p.dead)
		p.client.Kill()
		_ = p.fds.Close()
		p.door.Close()
		_ = os.RemoveAll(p.sockDir)
		msg := "exited"
		if st := p.cmd.ProcessState; st != nil {
			msg = st.String()
		}
		p.mu.Lock()
		p.exitMsg = msg
		p.mu.Unlock()
	})
}

func (p *process) exit() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exitMsg == "" {
		return "died"
	}
	return p.exitMsg
}

func (p *process) alive() bool {
	select {
	case <-p.dead:
		return false
	case <-p.fds.Done():
		return false
	default:
		return true
	}
}

// deadline applies the default per-call deadline when ctx has none.
func (b *Backend) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || b.opts.CallTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, b.opts.CallTimeout)
}

// backoff returns the delay before restart attempt n (0-based).
func (o *RestartPolicy) backoff(n int) time.Duration {
	d := o.MinBackoff
	for i := 0; i < n && d < o.MaxBackoff; i++ {
		d *= 2
	}
	if d > o.MaxBackoff {
		d = o.MaxBackoff
	}
	return d
}

// BinarySHA256 is the sha256 of the sealed copy of the binary the running
// plugin process was started from: the bytes that execute, as verified
// ("" while no process runs). A conformance harness records it as the
// tested binary.
func (b *Backend) BinarySHA256() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return ""
	}
	return b.cur.binSHA256
}
