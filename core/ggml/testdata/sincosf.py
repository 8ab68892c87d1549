#!/usr/bin/env python3
"""Writes sincosf.bin, the golden values of TestSinfCosfGlibc: for each
input x, the bits of x, glibc's sinf(x) and cosf(x), three little-endian
uint32 a value. Run on x86-64 Linux with glibc, on a CPU with FMA and AVX2
(glibc then runs its -mfma variants, the ones llama.cpp's CPU backend
calls):

    python3 sincosf.py > sincosf.bin

The inputs are drawn from groups: the angles of rotary tables
(p*base^(-2i/d) in float32 as ggml computes them, for common bases and
head widths, positions up to 2^17), uniform float bits in each range glibc
treats apart, and every float exponent. Of each group, inputs where glibc's
value is not the correctly rounded one (at most 2000 of the rotary
angles, 300 of each other group) and a quarter as many where it is; then
special values, and the three inputs of a sample of 172 million where the
fused and the unfused arithmetic part (the fused one is glibc's)."""
import ctypes, math, random, struct, sys

libm = ctypes.CDLL("libm.so.6")
for fn in ("sinf", "cosf", "powf"):
    getattr(libm, fn).restype = ctypes.c_float
libm.sinf.argtypes = libm.cosf.argtypes = [ctypes.c_float]
libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def frombits(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def rounded(fn, x):
    try:
        return f32(fn(x))
    except (ValueError, OverflowError):
        return None


rng = random.Random(27)
groups = []  # (inputs, how many discriminating values to keep at most)
cands = []
for base in (10000.0, 500000.0, 1000000.0):
    for d in (64, 128):
        step = libm.powf(base, f32(-2.0 / d))
        for p in list(range(0, 4096)) + [rng.randrange(4096, 1 << 17) for _ in range(2000)]:
            a = f32(p)
            for i in range(d // 2):
                cands.append(a)
                a = f32(a * step)
groups.append((cands, 2000))
for lo, hi in ((0, 0x3C800000), (0x3C800000, 0x3F400000), (0x3F400000, 0x42F00000), (0x42F00000, 0x7F800000)):
    groups.append(([frombits(rng.randrange(lo, hi)) for _ in range(20000)], 300))
groups.append(([frombits(e << 23 | rng.randrange(1 << 23)) for e in range(255) for _ in range(8)], 300))
keep, seen, total = [], set(), 0
for xs, most in groups:
    diff, same = [], []
    for x in xs:
        for v in (x, -x):
            b = bits(v)
            if b in seen:
                continue
            seen.add(b)
            s, c = libm.sinf(v), libm.cosf(v)
            (diff if rounded(math.sin, v) != s or rounded(math.cos, v) != c else same).append((b, bits(s), bits(c)))
    keep += rng.sample(diff, min(most, len(diff))) + rng.sample(same, min(most // 4, len(same)))
for b in (0x4202EB4B, 0x42687A55, 0x42D8D23E, 0, 0x80000000, 1, 0x00800000, 0x39800000, 0x3F490FDB, 0x42F00000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000):
    v = frombits(b)
    keep.append((b, bits(libm.sinf(v)), bits(libm.cosf(v))))
keep.sort()
sys.stdout.buffer.write(b"".join(struct.pack("<III", *k) for k in keep))
print(len(keep), "values of", len(seen), file=sys.stderr)
