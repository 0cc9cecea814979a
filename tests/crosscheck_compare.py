#!/usr/bin/env python3
"""Property cross-check of tensorop's comparison core against NumPy and exact arithmetic.

usage: python3 tests/crosscheck_compare.py TENSOROP [--seed N] [--cases N]

For random pairs of arrays of every NumPy dtype tensorop reads (integers, float16, float32,
float64), rich in edge values (+0 and -0, infinities, NaNs with several payloads, subnormals,
the extremes, neighbours one ULP apart), with random tolerances (`--atol`, `--rtol`, `--ulps`),
it runs `tensorop compare --json` and recomputes every count from the bits with NumPy:
elements differing in their bits, NaN mismatches, elements outside the tolerances (NumPy's
`isclose` rule |a - b| <= atol + rtol * |b|, decided in exact rational arithmetic, or at most N
ULPs apart), the largest ULP distance and where it first occurs, the largest absolute
difference (every digit), the first difference's index and both bit patterns, and the exit
status. Exits 1 on the first disagreement, naming the case.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from fractions import Fraction

import warnings

import numpy as np

warnings.simplefilter("ignore")

FLOATS = {np.float16: (np.uint16, 5), np.float32: (np.uint32, 8), np.float64: (np.uint64, 11)}
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def edge_values(dt):
    if dt in FLOATS:
        u, _ = FLOATS[dt]
        fi = np.finfo(dt)
        bits = 8 * np.dtype(dt).itemsize
        sign = 1 << (bits - 1)
        quiet = (int(np.array(np.nan, dt).view(u)) & ~sign) & ((1 << bits) - 1)
        nans = [quiet, quiet | 1, quiet | sign, (quiet ^ (1 << (fi.nmant - 1))) | 1]
        vals = [0.0, -0.0, np.inf, -np.inf, fi.max, -fi.max, fi.tiny, -fi.tiny, 1.0, -1.0, 0.5, 3.0]
        out = [np.array(v, dt) for v in vals]
        out += [np.array(n, u).view(dt) for n in nans]
        out += [np.array(1, u).view(dt), np.array(2, u).view(dt), np.array(sign | 1, u).view(dt)]
        return out
    info = np.iinfo(dt)
    return [np.array(v, dt) for v in [0, 1, 2, info.max, info.min, info.max - 1, info.min + 1]]


def random_array(rng, dt, n):
    if dt in FLOATS:
        u, _ = FLOATS[dt]
        kind = rng.integers(3)
        if kind == 0:
            x = rng.standard_normal(n).astype(dt)
        elif kind == 1:
            x = rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True).view(dt)
        else:
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6)).astype(dt)
        edges = edge_values(dt)
        for i in rng.choice(n, size=min(n, n // 4 + 1), replace=False):
            x[i] = edges[rng.integers(len(edges))]
        return x
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    edges = edge_values(dt)
    for i in rng.choice(n, size=min(n, n // 4 + 1), replace=False):
        x[i] = edges[rng.integers(len(edges))]
    return x


def perturb(rng, a):
    """b: a with some elements moved a few ULPs (or units), some replaced, the rest equal."""
    dt = a.dtype.type
    b = a.copy()
    n = a.size
    if dt in FLOATS:
        u, _ = FLOATS[dt]
        bits = b.view(u)
        for i in rng.choice(n, size=rng.integers(0, n + 1), replace=False):
            step = int(rng.integers(-3, 4))
            bits[i] = (int(bits[i]) + step) % (1 << (8 * a.itemsize))
        other = random_array(rng, dt, n)
        for i in rng.choice(n, size=rng.integers(0, n // 3 + 1), replace=False):
            b[i] = other[i]
        return b
    info = np.iinfo(dt)
    for i in rng.choice(n, size=rng.integers(0, n + 1), replace=False):
        v = int(b[i]) + int(rng.integers(-5, 6))
        b[i] = min(max(v, info.min), info.max)
    return b


def ordered(bits, width):
    sign = 1 << (width - 1)
    mag = bits & (sign - 1)
    return -mag if bits & sign else mag


def expect(a, b, atol, rtol, ulps):
    """What tensorop compare must find for a against b (flat C order)."""
    dt = a.dtype.type
    is_float = dt in FLOATS
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    if is_float:
        u, _ = FLOATS[dt]
        ba, bb = flat_a.view(u), flat_b.view(u)
    else:
        ba, bb = flat_a, flat_b
    width = 8 * a.itemsize
    r = dict(differing=0, nan=0, outside=0, max_ulps=None, max_ulps_at=None, first=None, max_abs=None)
    for i in range(flat_a.size):
        if int(ba[i]) == int(bb[i]):
            continue
        r["differing"] += 1
        if r["first"] is None:
            r["first"] = i
        x, y = flat_a[i], flat_b[i]
        if is_float:
            nan = bool(np.isnan(x) or np.isnan(y))
            inf = bool(np.isinf(x) or np.isinf(y))
            dist = None if nan or (inf and x != y) else abs(ordered(int(ba[i]), width) - ordered(int(bb[i]), width))
            finite = not (nan or inf)
        else:
            nan, finite = False, True
            dist = abs(int(x) - int(y))
        if nan:
            r["nan"] += 1
        else:
            d = "inf" if not finite and x != y else abs(Fraction(x.item()) - Fraction(y.item())) if is_float else Fraction(abs(int(x) - int(y)))
            if r["max_abs"] is None or (d == "inf") or (r["max_abs"] != "inf" and d > r["max_abs"]):
                r["max_abs"] = d if r["max_abs"] != "inf" else "inf"
        if dist is not None:
            dist = min(dist, (1 << 64) - 1)
            if r["max_ulps"] is None or dist > r["max_ulps"]:
                r["max_ulps"], r["max_ulps_at"] = dist, i
        allowed = False
        if finite:
            if ulps is not None and dist is not None and dist <= ulps:
                allowed = True
            if (atol is not None or rtol is not None) and not allowed:
                fx = Fraction(x.item()) if is_float else Fraction(int(x))
                fy = Fraction(y.item()) if is_float else Fraction(int(y))
                bound = Fraction(atol or 0.0) + Fraction(rtol or 0.0) * abs(fy)
                allowed = abs(fx - fy) <= bound
        if not allowed:
            r["outside"] += 1
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tensorop")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--cases", type=int, default=120)
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    dtypes = list(FLOATS) + INTS
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = os.path.join(tmp, "a.npy"), os.path.join(tmp, "b.npy")
        for case in range(args.cases):
            dt = dtypes[case % len(dtypes)]
            shape = tuple(int(s) for s in rng.integers(1, 7, rng.integers(1, 4)))
            a = random_array(rng, dt, int(np.prod(shape))).reshape(shape)
            b = perturb(rng, a.reshape(-1)).reshape(shape)
            atol = float(10.0 ** rng.integers(-8, 3)) if rng.random() < 0.4 else None
            rtol = float(10.0 ** rng.integers(-6, 0)) if rng.random() < 0.4 else None
            ulps = int(rng.integers(0, 5)) if rng.random() < 0.4 else None
            np.save(pa, a)
            np.save(pb, b)
            cmd = [args.tensorop, "compare", pa, pb, "--json"]
            for flag, v in (("--atol", atol), ("--rtol", rtol), ("--ulps", ulps)):
                if v is not None:
                    cmd += [flag, repr(v)]
            out = subprocess.run(cmd, capture_output=True, text=True)
            want = expect(a, b, atol, rtol, ulps)
            label = f"case {case}: {np.dtype(dt).name} {shape} atol={atol} rtol={rtol} ulps={ulps}"
            try:
                got = json.loads(out.stdout)
            except json.JSONDecodeError:
                sys.exit(f"{label}: not JSON (exit {out.returncode}): {out.stdout!r} {out.stderr!r}")
            checks = [
                ("exit", out.returncode, 0 if want["outside"] == 0 else 4),
                ("elements", got["elements"], a.size),
                ("compared", got["compared"], a.size),
                ("differing", got["differing"], want["differing"]),
                ("nan_mismatches", got["nan_mismatches"], want["nan"]),
                ("outside_tolerance", got["outside_tolerance"], want["outside"]),
                ("identical", got["identical"], want["differing"] == 0),
                ("max_ulps", got["max_ulps"], want["max_ulps"]),
            ]
            if want["max_ulps_at"] is not None:
                at = [int(i) for i in np.unravel_index(want["max_ulps_at"], shape)]
                checks.append(("max_ulps_at", got["max_ulps_at"], at))
            m = want["max_abs"]
            got_abs = got["max_abs_difference"]
            checks.append(("max_abs_difference", None if got_abs is None else got_abs if got_abs == "inf" else Fraction(got_abs), m))
            if want["first"] is not None:
                f = got["first_differences"][0]
                i = want["first"]
                u = FLOATS[dt][0] if dt in FLOATS else {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
                w = 2 * a.itemsize
                checks += [
                    ("first index", f["index"], [int(k) for k in np.unravel_index(i, shape)]),
                    ("first element", f["element"], i),
                    ("first a_bits", f["a_bits"], f"0x{int(a.reshape(-1).view(u)[i]):0{w}X}"),
                    ("first b_bits", f["b_bits"], f"0x{int(b.reshape(-1).view(u)[i]):0{w}X}"),
                ]
            for name, g, e in checks:
                if g != e:
                    sys.exit(f"{label}: {name}: tensorop says {g!r}, NumPy {e!r}\n  a={a.reshape(-1)!r}\n  b={b.reshape(-1)!r}")
    print(f"compare cross-check: {args.cases} passed, 0 failed")


if __name__ == "__main__":
    main()
