package hal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BlobCache stores compiled blobs (BlobExporter output) by key, so a model
// loaded again skips compilation on backends where compiling is expensive
// (GPU pipelines, NPU graphs). Implementations MUST be safe for concurrent
// use; a Get that fails for any reason is a miss.
type BlobCache interface {
	Get(key string) ([]byte, bool)
	Put(key string, blob []byte) error
}

// DirCache is a BlobCache in a directory: one file per key, written
// atomically (temporary file + rename), so concurrent processes sharing
// the directory never read a half-written blob.
type DirCache struct {
	Dir string
	// MaxBlobBytes refuses larger blobs on Get and Put (0 = 1 GiB).
	MaxBlobBytes int64
}

func (c *DirCache) limit() int64 {
	if c.MaxBlobBytes > 0 {
		return c.MaxBlobBytes
	}
	return 1 << 30
}

func (c *DirCache) path(key string) (string, error) {
	if len(key) != 64 {
		return "", fmt.Errorf("hal: blob cache key %q is not a sha256 hex digest", key)
	}
	if _, err := hex.DecodeString(key); err != nil {
		return "", fmt.Errorf("hal: blob cache key %q is not a sha256 hex digest", key)
	}
	return filepath.Join(c.Dir, key+".blob"), nil
}

// Get reads a blob; anything but a regular file of bounded size is a miss.
func (c *DirCache) Get(key string) ([]byte, bool) {
	p, err := c.path(key)
	if err != nil {
		return nil, false
	}
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > c.limit() {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil || int64(len(b)) != st.Size() {
		return nil, false
	}
	return b, true
}

// Put writes a blob atomically.
func (c *DirCache) Put(key string, blob []byte) error {
	p, err := c.path(key)
	if err != nil {
		return err
	}
	if int64(len(blob)) > c.limit() {
		return fmt.Errorf("hal: blob of %d bytes is over the cache's limit of %d", len(blob), c.limit())
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("hal: blob cache: %w", err)
	}
	f, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("hal: blob cache: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(blob)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("hal: blob cache: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("hal: blob cache: %w", err)
	}
	return nil
}

var _ BlobCache = (*DirCache)(nil)

// BlobKey is the cache key of a compiled subgraph: the backend (name and
// version), the device's CacheKey (vendor, device, driver), the compile
// options and a digest of the subgraph's canonical encoding. A blob is
// only reused under an equal key.
func BlobKey(info Info, dev DeviceDesc, opts CompileOptions, subgraphDigest string) string {
	o, _ := json.Marshal(struct {
		Device      int
		Precision   Precision
		ShapeBounds map[string][]DimRange
		Threads     int
		Profile     bool
	}{opts.Device, opts.Precision, opts.ShapeBounds, opts.Threads, opts.Profile})
	h := sha256.New()
	for _, s := range []string{info.Name, info.Version, dev.CacheKey.Vendor, dev.CacheKey.Device, dev.CacheKey.Driver, string(o), subgraphDigest} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CompileCached compiles sg through the cache: a blob stored under the
// key is imported (BlobImporter) instead of compiling; on a miss (or an
// import the backend refuses) it compiles and stores the exported blob
// (BlobExporter). A backend without export and import just compiles.
// hit says whether the blob was reused. subgraphDigest must identify sg's
// content (the runtime uses a sha256 of its ONNX encoding).
func (d *Device) CompileCached(ctx context.Context, sg *Subgraph, opts *CompileOptions, cache BlobCache, subgraphDigest string) (c *Compiled, hit bool, err error) {
	be, canExport := d.b.(BlobExporter)
	bi, canImport := d.b.(BlobImporter)
	if cache == nil || !canExport || !canImport || subgraphDigest == "" {
		c, err = d.Compile(ctx, sg, opts)
		return c, false, err
	}
	if err := d.check("compile"); err != nil {
		return nil, false, err
	}
	if err := validateSubgraph(sg); err != nil {
		return nil, false, wrap(d.info.Name, "compile", err)
	}
	if opts == nil {
		opts = &CompileOptions{}
	}
	devs, err := d.Devices(ctx)
	if err != nil {
		return nil, false, err
	}
	var desc DeviceDesc
	if opts.Device >= 0 && opts.Device < len(devs) {
		desc = devs[opts.Device]
	}
	key := BlobKey(d.info, desc, *opts, subgraphDigest)
	if blob, ok := cache.Get(key); ok {
		var exe Executable
		ierr := guard(func() (err error) { exe, err = bi.ImportBlob(ctx, blob); return })
		if ierr == nil && exe != nil {
			if d.checkPrecision(exe, opts.Precision) == nil {
				return d.compiled(exe, sg), true, nil
			}
			_ = guard(exe.Release)
		}
		// a stale or corrupt blob: compile afresh and overwrite it
	}
	c, err = d.Compile(ctx, sg, opts)
	if err != nil {
		return nil, false, err
	}
	var blob []byte
	if guard(func() (err error) { blob, err = be.ExportBlob(ctx, c.exe); return }) == nil && len(blob) > 0 {
		_ = cache.Put(key, blob) // a cache that cannot store is not an error of the compile
	}
	return c, false, nil
}

func (d *Device) compiled(exe Executable, sg *Subgraph) *Compiled {
	c := &Compiled{exe: exe, dev: d}
	c.inputs = append(c.inputs, sg.Graph.Inputs...)
	c.outputs = append(c.outputs, sg.Graph.Outputs...)
	return c
}
