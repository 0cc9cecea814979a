"""A model of wgsl/float32_exact.wgsl on a device that flushes float32 subnormals: every float
operation's inputs and result are flushed to signed zero, as such a device does, and the
kernel's integer steps are copied line for line. Its subtraction, multiplication and square of a
difference must equal IEEE-754 (NumPy's float32) bit for bit on random pairs drawn around the
subnormal range, near-equal pairs and specials. Lavapipe keeps subnormals, so the GPU tests
cannot check the shader's fast paths under flushing; this does (docs/backends.md, "Subnormals").

usage: python3 tests/float32_exact_model.py [SEED] [PAIRS]     (exit 1 on a difference)
"""
import numpy as np, struct, random, sys
f32 = np.float32
def fb(x): return int(np.array(x, dtype=np.float32).view(np.uint32))
def bf(u): return np.array(u & 0xffffffff, dtype=np.uint32).view(np.float32)[()]
def flush(u):
    return u & 0x80000000 if (u >> 23) & 0xff == 0 else u
np.seterr(all='ignore')
# device ops: flush inputs and outputs
def dsub(a, b): return flush(fb(f32(bf(flush(a))) - f32(bf(flush(b)))))
def dmul(a, b): return flush(fb(f32(bf(flush(a))) * f32(bf(flush(b)))))
def ddev_f(x): # float op result on device: f32 value -> bits flushed
    return flush(fb(x))
SIGN = 0x80000000
def scale_up(x):
    e = (x >> 23) & 0xff
    if e == 0:
        m = f32(x & 0x7fffff) * bf(0x15000000)
        return bf(ddev_f(m) | (x & SIGN))
    return bf(x + (64 << 23))
def scale_down(d):
    x = fb(d)
    if ((x >> 23) & 0xff) >= 65: return x - (64 << 23)
    return (x & SIGN) | int(bf(ddev_f(f32(abs(d)) * bf(0x6a000000))))
def step_sub(a, b):
    ea, eb = (a >> 23) & 0xff, (b >> 23) & 0xff
    if max(ea, eb) >= 26: return dsub(a, b)
    d = ddev_f(f32(scale_up(a)) - f32(scale_up(b)))
    return scale_down(bf(d))
def step_mul(a, b):
    ea, eb = (a >> 23) & 0xff, (b >> 23) & 0xff
    s = (a ^ b) & SIGN
    zero = (a & 0x7fffffff) == 0 or (b & 0x7fffffff) == 0
    if ea == 255 or eb == 255:
        x = (a & SIGN) | 0x800000 if (ea == 0 and not zero) else a
        y = (b & SIGN) | 0x800000 if (eb == 0 and not zero) else b
        return dmul(x, y)
    if zero: return s
    if ea != 0 and eb != 0 and ea + eb >= 128: return dmul(a, b)
    xa, xb = max(ea, 1), max(eb, 1)
    ma = (a & 0x7fffff) | (0x800000 if ea else 0)
    mb = (b & 0x7fffff) | (0x800000 if eb else 0)
    p = ma * mb
    top = p.bit_length() - 1
    r = max(top - 23, 151 - (xa + xb))
    if r <= 0: q = p << -r
    elif r > 49: q = 0
    else:
        q = p >> r; half = (p >> (r - 1)) & 1; below = (p & ((1 << (r - 1)) - 1)) != 0
        if half and (below or q & 1): q += 1
    return s | (((xa + xb - 151 + r) << 23) + q)
def same(x, y):
    fx, fy = bf(x), bf(y)
    return x == y or (np.isnan(fx) and np.isnan(fy))
def rand_bits():
    k = rng.random()
    e = rng.choice([0,0,1,1,2,3,rng.randrange(0,30),rng.randrange(20,70),rng.randrange(50,80),rng.randrange(0,256)]) if k < 0.95 else 255
    m = rng.choice([0, 1, 0x7fffff, rng.randrange(1 << 23), rng.randrange(1 << 23), rng.randrange(16)])
    return (rng.randrange(2) << 31) | (e << 23) | m
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
rng = random.Random(seed)
bad = 0


def check(what, a, b, got, want):
    global bad
    if not same(got, want):
        bad += 1
        if bad <= 10:
            print(f"{what} {a:#010x} {b:#010x}: model {got:#010x}, IEEE {want:#010x}")


for _ in range(pairs):
    a, b = rand_bits(), rand_bits()
    if rng.random() < 0.3:  # near-equal pairs: differences in the subnormal range
        b = (a + rng.randrange(-3, 4)) & 0xFFFFFFFF
    d_ref = fb(f32(bf(a)) - f32(bf(b)))
    d = step_sub(a, b)
    check("sub", a, b, d, d_ref)
    check("mul", a, b, step_mul(a, b), fb(f32(bf(a)) * f32(bf(b))))
    check("sqdiff", a, b, step_mul(d, d), fb(f32(bf(d_ref)) * f32(bf(d_ref))))
print(f"float32_exact model: {pairs} pairs, {bad} differences (seed {seed})")
sys.exit(1 if bad else 0)
