package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
)

func randSlice(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// refGemm is C = A·B (+bias, clamped) in float64.
func refGemm(m, n, k int, a, b []float32, bias []float32, biasMode int, clampOn bool, lo, hi float32) []float32 {
	c := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			switch biasMode {
			case initColBias:
				s = float64(bias[j])
			case initRowBias:
				s = float64(bias[i])
			}
			for l := 0; l < k; l++ {
				s += float64(a[i*k+l]) * float64(b[l*n+j])
			}
			v := float32(s)
			if clampOn {
				v = clamp(v, lo, hi)
			}
			c[i*n+j] = v
		}
	}
	return c
}

// Every micro-kernel this machine runs, through the blocked driver, on
// shapes around its tile and cache-block edges, with each init mode,
// clamp and 1 or 3 threads, against a float64 reference.
func TestGemmKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pools := map[int]*pool{1: nil, 3: newPool(3)}
	defer pools[3].close()
	for _, kern := range kernelsAvailable {
		shapes := [][3]int{{1, 1, 1}, {kern.mr, kern.nr, 7}, {kern.mr + 1, kern.nr - 1, 3}, {2*kern.mr - 1, 2*kern.nr + 1, kern.kc + 5},
			{kern.mc + 3, 3*kern.nr + 2, 2*kern.kc + 1}, {5, 7, 0}, {300, 130, 40}, {3, 1000, 17}}
		for h := 1; h < kern.mr; h++ { // every tail kernel: whole and partial panels, k over two blocks
			shapes = append(shapes, [3]int{kern.mr + h, 2*kern.nr + 3, kern.kc + 2})
		}
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			a, b := randSlice(rng, m*k), randSlice(rng, k*n)
			packed := make([]float32, packedLen(k, n, kern.nr))
			packB(packed, b, k, n, kern.nr, n, 1)
			var pa []float32 // A packed (packA), for the packedA kernels
			if kern.packedA != nil {
				pa = make([]float32, packedALen(m, k, kern.mr))
				packA(pa, a, m, k, k, kern.mr)
			}
			for mode := 0; mode < 4; mode++ {
				if mode == initC {
					continue
				}
				for _, th := range []int{1, 3} {
					for _, apk := range []bool{false, true} {
						if apk && pa == nil {
							continue
						}
						op := gemmOp{m: m, n: n, k: k, a: a, lda: k, b: packed, ldc: n, clamp: mode == initColBias, lo: -0.5, hi: 0.75}
						if apk {
							op.a, op.apacked = pa, true
							if th == 3 { // B read in place (row-major), as a 1×1 convolution reads it
								op.b, op.ldb = b, n
							}
						}
						clampOn := mode == initColBias
						bias := randSlice(rng, max(panelsOf(n, kern.nr)*kern.nr, (m+kern.mr-1)/kern.mr*kern.mr))
						c := make([]float32, m*n)
						for i := range c {
							c[i] = float32(math.NaN()) // every element must be written
						}
						op.c, op.bias, op.biasMode = c, bias, mode
						gemm(&kern, pools[th], &op)
						want := refGemm(m, n, k, a, b, bias, mode, clampOn, -0.5, 0.75)
						for i := range want {
							if d := math.Abs(float64(c[i] - want[i])); !(d <= 1e-4*math.Sqrt(float64(k+1))) {
								t.Fatalf("%s %dx%dx%d mode %d threads %d packed A %v: c[%d,%d] = %v, want %v", kern.name, m, n, k, mode, th, apk, i/n, i%n, c[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// The clamp keeps NaN (as the reference Relu and Clip do).
func TestGemmClampKeepsNaN(t *testing.T) {
	for _, kern := range kernelsAvailable {
		m, n, k := kern.mr, kern.nr, 2
		a := make([]float32, m*k)
		a[0] = float32(math.NaN())
		b := make([]float32, k*n)
		for i := range b {
			b[i] = 1
		}
		packed := make([]float32, packedLen(k, n, kern.nr))
		packB(packed, b, k, n, kern.nr, n, 1)
		c := make([]float32, m*n)
		gemm(&kern, nil, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: packed, c: c, ldc: n, clamp: true, lo: 0, hi: float32(math.Inf(1))})
		if !math.IsNaN(float64(c[0])) || c[n] != 0 {
			t.Fatalf("%s: relu(NaN) = %v, relu(0) = %v", kern.name, c[0], c[n])
		}
	}
}

// BenchmarkGemm is C = A·B for 512³ float32 with B pre-packed, per
// micro-kernel and thread count, in GFLOP/s.
func BenchmarkGemm(b *testing.B) {
	const n = 512
	rng := rand.New(rand.NewPCG(1, 1))
	a, w := randSlice(rng, n*n), randSlice(rng, n*n)
	c := make([]float32, n*n)
	for _, kern := range kernelsAvailable {
		packed := make([]float32, packedLen(n, n, kern.nr))
		packB(packed, w, n, n, kern.nr, n, 1)
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", kern.name, th), func(b *testing.B) {
				p := newPool(th)
				defer p.close()
				g := &gemmOp{m: n, n: n, k: n, a: a, lda: n, b: packed, c: c, ldc: n}
				for b.Loop() {
					gemm(&kern, p, g)
				}
				b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// The vector helpers (assembly where the CPU has AVX2+FMA) agree with
// scalar Go at every length around their 8- and 32-lane steps.
func TestVectorHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 0; n <= 70; n++ {
		a, b := randSlice(rng, n), randSlice(rng, n)
		for i := range b {
			if b[i] == 0 {
				b[i] = 1
			}
		}
		for op := opAdd; op <= opDiv; op++ {
			for mode := 0; mode < 3; mode++ {
				got, want := make([]float32, n), make([]float32, n)
				for i := range want {
					switch mode {
					case 0:
						want[i] = apply(op, a[i], b[i])
					case 1:
						want[i] = apply(op, a[i], b[0%max(n, 1)])
					case 2:
						want[i] = apply(op, a[0%max(n, 1)], b[i])
					}
				}
				switch {
				case mode == 0:
					binaryVec(op, got, a, b)
				case mode == 1 && n > 0:
					binaryScalarB(op, got, a, b[0])
				case mode == 2 && n > 0:
					binaryScalarA(op, got, a[0], b)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("op %d mode %d n %d: [%d] = %v, want %v", op, mode, n, i, got[i], want[i])
					}
				}
			}
		}
		y := append([]float32{}, b...)
		want := append([]float32{}, b...)
		axpy(0.75, a, y)
		axpyGo(0.75, a, want)
		for i := range want {
			if d := y[i] - want[i]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("axpy n %d: [%d] = %v, want %v", n, i, y[i], want[i])
			}
		}
		clampTo(y, a, -0.3, 0.4)
		clampGo(want, a, -0.3, 0.4)
		for i := range want {
			if y[i] != want[i] {
				t.Fatalf("clamp n %d: [%d] = %v, want %v", n, i, y[i], want[i])
			}
		}
	}
}

// The depthwise tile kernels (assembly where the CPU has AVX2+FMA) agree
// with the portable dwTileGo for every tile shape, tap count and clamp.
func TestDepthwiseTiles(t *testing.T) {
	for _, wide := range []bool{false, true} {
		if wide && !dw512Available {
			continue
		}
		t.Run(fmt.Sprintf("avx512=%v", wide), func(t *testing.T) {
			defer func(v bool) { hasDW512 = v }(hasDW512)
			hasDW512 = wide
			testDepthwiseTiles(t)
		})
	}
}

func testDepthwiseTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, rv := range [][2]int{{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 1}, {2, 2}, {2, 4}, {2, 8}, {4, 1}, {4, 2}, {4, 4}, {4, 8}, {8, 1}, {8, 2}, {8, 4}, {8, 8}} {
		for _, taps := range []int{1, 2, 9, 25} {
			for _, clampOn := range []bool{false, true} {
				R, V := rv[0], rv[1]
				nt := 1 + taps%3 // 1, 2 or 3 tiles side by side
				ldx, ldy := 77+nt*V*dwLane, 45+nt*V*dwLane
				offs := make([]int, taps)
				for i := range offs {
					offs[i] = rng.IntN(200)
				}
				w, x := randSlice(rng, taps), randSlice(rng, 200+R*ldx+nt*V*dwLane)
				got, want := make([]float32, R*ldy), make([]float32, R*ldy)
				hiOff := 0
				for _, o := range offs {
					hiOff = max(hiOff, o)
				}
				dwTile(R, V, nt, offs, hiOff, w, x, ldx, got, ldy, 0.25, clampOn, -0.5, 0.75)
				dwTileGo(R, V, nt, offs, w, x, ldx, want, ldy, 0.25, clampOn, -0.5, 0.75)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%dx%d taps %d clamp %v: [%d] = %v, want %v", R, V, taps, clampOn, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// maxPool2x2 (assembly where the CPU has AVX2) agrees with the scalar
// reference order at every length around its 8-output step, with NaNs
// (which never win) and all-NaN windows (-Inf).
func TestMaxPool2x2(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	nan := float32(math.NaN())
	for n := 0; n <= 35; n++ {
		r0, r1 := randSlice(rng, 2*n+1), randSlice(rng, 2*n+3)
		for i := range r0 {
			if rng.IntN(5) == 0 {
				r0[i] = nan
			}
		}
		for i := range r1 {
			if rng.IntN(5) == 0 {
				r1[i] = nan
			}
		}
		if n > 3 {
			r0[6], r0[7], r1[6], r1[7] = nan, nan, nan, nan
		}
		got, want := make([]float32, n), make([]float32, n)
		maxPool2x2(got, r0, r1)
		for j := range want {
			s := negInf
			for _, v := range []float32{r0[2*j], r0[2*j+1], r1[2*j], r1[2*j+1]} {
				if v > s {
					s = v
				}
			}
			want[j] = s
		}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("n %d: [%d] = %v, want %v", n, j, got[j], want[j])
			}
		}
	}
}

// BenchmarkGemmShapes runs the pointwise-convolution shapes of
// ppocrv4_rec (m×n×k: output channels × positions × input channels) and
// 512³ on the best micro-kernel at 1 thread, in GFLOP/s.
func BenchmarkGemmShapes(b *testing.B) {
	kern := bestKernel()
	for _, s := range gemmShapes() {
		for _, sets := range []int{1, 32} { // 32: operands cycled, out of cache
			m, n, k := s[0], s[1], s[2]
			b.Run(fmt.Sprintf("%dx%dx%d/sets=%d", m, n, k, sets), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				var gs []*gemmOp
				for i := 0; i < sets; i++ {
					a, w := randSlice(rng, m*k), randSlice(rng, k*n)
					packed := make([]float32, packedLen(k, n, kern.nr))
					packB(packed, w, k, n, kern.nr, n, 1)
					bias := make([]float32, (m+kern.mr-1)/kern.mr*kern.mr)
					g := &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: packed, c: make([]float32, m*n), ldc: n, bias: bias, biasMode: initRowBias}
					if os.Getenv("GEMM_PACKA") == "1" && kern.packedA != nil {
						g.a, g.apacked = make([]float32, packedALen(m, k, kern.mr)), true
						packA(g.a, a, m, k, k, kern.mr)
					}
					gs = append(gs, g)
				}
				i := 0
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0 := threadCPU()
				for b.Loop() {
					gemm(&kern, nil, gs[i%sets])
					i++
				}
				cpu := float64(threadCPU() - c0)
				b.ReportMetric(cpu/float64(b.N), "cpu-ns/op")
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/cpu, "cpu-GFLOP/s")
			})
		}
	}
}

// expSum (assembly where the CPU has AVX2+FMA) is within 2 ulp of exp
// (float64, rounded) over the range softmax uses, and its sum agrees.
func TestExpSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*100 - 95)
		}
		if n > 3 {
			x[1], x[2] = -200, 5
		}
		y := make([]float32, n)
		got := expSum(x, y, 5)
		var want float64
		for i, v := range x {
			e := math.Exp(float64(v - 5)) // the difference in float32, as softmax takes it
			want += e
			w := float32(e)
			if d := math.Abs(float64(y[i] - w)); d > 2.5*float64(ulp(w)) && d > 1e-37 {
				t.Fatalf("n %d: exp(%v - 5) = %v, want %v", n, v, y[i], w)
			}
		}
		if math.Abs(float64(got)-want) > 1e-5*want+1e-30 {
			t.Fatalf("n %d: sum %v, want %v", n, got, want)
		}
	}
}

func ulp(v float32) float32 {
	return math.Nextafter32(v, float32(math.Inf(1))) - v
}

// The chain program kernel (assembly where the CPU has AVX2) agrees
// exactly with runChainGo for every op kind, NaN inputs included, at
// lengths around its 32-float step.
func TestChainKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	ops := []chainOp{{kind: chainMul, c: 0.75}, {kind: chainAdd, c: -0.25}, {kind: chainSave}, {kind: chainAdd, c: 3},
		{kind: chainClamp, lo: 0, hi: 6}, {kind: chainMulSaved}, {kind: chainDiv, c: 6}, {kind: chainRSub, c: 1},
		{kind: chainSub, c: 0.5}, {kind: chainRDiv, c: 2}, {kind: chainClamp, lo: -3, hi: float32(math.Inf(1))}}
	for n := 0; n <= 400; n += 7 { // AVX-512 blocks of 128, AVX2 ones of 32, the rest in Go
		x := randSlice(rng, n)
		for i := range x {
			if rng.IntN(9) == 0 {
				x[i] = float32(math.NaN())
			}
		}
		got, want := append([]float32{}, x...), append([]float32{}, x...)
		runChain(got, ops)
		runChainGo(want, ops)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("n %d: [%d] = %v, want %v (x %v)", n, i, got[i], want[i], x[i])
			}
		}
	}
}

// gemmShapes are BenchmarkGemmShapes' m×n×k; GEMM_SHAPES (m×n×k,...)
// replaces them.
func gemmShapes() [][3]int {
	s := os.Getenv("GEMM_SHAPES")
	if s == "" {
		return [][3]int{{512, 512, 512}, {240, 960, 240}, {480, 240, 480}, {64, 3840, 32}, {256, 1089, 512}}
	}
	var out [][3]int
	for _, f := range strings.Split(s, ",") {
		var m, n, k int
		if _, err := fmt.Sscanf(f, "%dx%dx%d", &m, &n, &k); err == nil {
			out = append(out, [3]int{m, n, k})
		}
	}
	return out
}
