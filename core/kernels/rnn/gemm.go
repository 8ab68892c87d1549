package rnn

import (
	"runtime"
	"sync"
)

// gemmNT computes c[i*ldc+j] = sum_p a[i*k+p] * b[j*k+p] for i < m, j < n:
// C = A·Bᵀ with A [m,k] and B [n,k] row-major (the layout of ONNX RNN
// weights, so no transpose is needed). C's rows are ldc apart.
func gemmNT[T float](m, n, k int, a, b []T, c []T, ldc int) {
	i := 0
	for ; i+2 <= m; i += 2 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		c0 := c[i*ldc : i*ldc+n]
		c1 := c[(i+1)*ldc : (i+1)*ldc+n]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			var s00, s01, s02, s03, s10, s11, s12, s13 T
			for p := range a0 {
				x0, x1 := a0[p], a1[p]
				y0, y1, y2, y3 := b0[p], b1[p], b2[p], b3[p]
				s00 += x0 * y0
				s01 += x0 * y1
				s02 += x0 * y2
				s03 += x0 * y3
				s10 += x1 * y0
				s11 += x1 * y1
				s12 += x1 * y2
				s13 += x1 * y3
			}
			c0[j], c0[j+1], c0[j+2], c0[j+3] = s00, s01, s02, s03
			c1[j], c1[j+1], c1[j+2], c1[j+3] = s10, s11, s12, s13
		}
		for ; j < n; j++ {
			bj := b[j*k : j*k+k]
			c0[j] = dot(a0, bj)
			c1[j] = dot(a1, bj)
		}
	}
	if i < m {
		a0 := a[i*k : i*k+k]
		c0 := c[i*ldc : i*ldc+n]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			var s0, s1, s2, s3 T
			for p, x := range a0 {
				s0 += x * b0[p]
				s1 += x * b1[p]
				s2 += x * b2[p]
				s3 += x * b3[p]
			}
			c0[j], c0[j+1], c0[j+2], c0[j+3] = s0, s1, s2, s3
		}
		for ; j < n; j++ {
			c0[j] = dot(a0, b[j*k:j*k+k])
		}
	}
}

func dot[T float](x, y []T) T {
	y = y[:len(x)]
	var s0, s1 T
	p := 0
	for ; p+2 <= len(x); p += 2 {
		s0 += x[p] * y[p]
		s1 += x[p+1] * y[p+1]
	}
	if p < len(x) {
		s0 += x[p] * y[p]
	}
	return s0 + s1
}

// parallelWork is the multiply-add count above which gemmNTPar splits rows
// across goroutines.
const parallelWork = 1 << 21

// gemmNTPar is gemmNT split over row blocks when the product is large.
func gemmNTPar[T float](m, n, k int, a, b []T, c []T, ldc int) {
	workers := runtime.GOMAXPROCS(0)
	if workers > m/2 {
		workers = m / 2
	}
	if workers < 2 || m*n*k < parallelWork {
		gemmNT(m, n, k, a, b, c, ldc)
		return
	}
	rows := (m/workers + 1) &^ 1
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for lo := 0; lo < m; lo += rows {
		hi := min(lo+rows, m)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			// a panic in a worker would kill the process; hand it to the
			// caller, whose runtime turns it into an error naming the node
			defer func() {
				if p := recover(); p != nil {
					once.Do(func() { panicked = p })
				}
			}()
			gemmNT(hi-lo, n, k, a[lo*k:hi*k], b, c[lo*ldc:], ldc)
		}(lo, hi)
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
