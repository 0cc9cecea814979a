#!/usr/bin/env python3
"""Seeded random cross-check of tensorop against NumPy.

usage: crosscheck.py TENSOROP [--seed N] [--cases N] [--no-large] [--only I] [--keep DIR] [-v]
                              [--extra="ARGS"]

e.g.   python3 tests/crosscheck.py target/release/tensorop --seed 7 --cases 2000
       python3 tests/crosscheck.py target/release/tensorop --extra="--backend wgpu"

Each case draws an operator (sub, sqdiff), one of the eleven dtypes, two broadcastable shapes of
rank 0..6 (size-1 dims, leading-dim padding, scalars, sometimes an empty dim or incompatible
shapes), values with edge cases (inf, nan, subnormals, -0.0, integer min/max, random bit
patterns), a random storage for each input (byte order, Fortran order, .npy version 1.0/2.0/3.0),
a feature level, `--half-precision` for float16, stdin input, stdout or in-place output and a
thread count. The expected result is computed in NumPy as the contract defines it and compared bit
for bit (NaN positions must match; NaN payloads may differ). Cases a feature level refuses must
exit 3 with the predicted checks failing and write nothing. A few large cases (3 million elements)
exercise multi-chunk, multi-thread paths and compare `--threads 1` with the default.

Prints one line per failing case, then 'N passed, N failed'; exits 1 if any case failed.
`--only I` reruns case I alone (same seed); `--keep DIR` keeps failing cases' files under DIR.
"""
import argparse
import ast
import io
import json
import math
from fractions import Fraction
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64"]
LEVELS = ["1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2",
          "6_0", "6_1", "6_2", "6_3", "6_4"]
F16_F32 = {"float32", "float16"}
ROWS = {
    "sub": [
        ("1_0", (4, 4), F16_F32),
        ("2_1", (4, 4), F16_F32 | {"int32", "uint32"}),
        ("3_0", (1, 8), F16_F32 | {"int32", "uint32"}),
        ("4_1", (1, 8), F16_F32 | {"int64", "int32", "uint64", "uint32"}),
        ("5_1", (1, 8), F16_F32 | {"int64", "int32", "int16", "int8",
                                   "uint64", "uint32", "uint16", "uint8"}),
    ],
    "sqdiff": [("3_1", (1, 8), F16_F32 | {"int32", "uint32"})],
}
TIMEOUT = 120


def level_key(level):
    return tuple(int(x) for x in level.split("_"))


def row_for(op, level):
    best = None
    for row in ROWS[op]:
        if level_key(row[0]) <= level_key(level):
            best = row
    return best


def broadcast(sa, sb):
    try:
        return tuple(np.broadcast_shapes(tuple(sa), tuple(sb)))
    except ValueError:
        return None


def model(op, level, dtype, sa, sb, mode):
    """Predicts validation: (valid, checks that must fail, checks whose status is not pinned)."""
    fails, loose = set(), set()
    shape_check = "broadcastable" if mode == "numpy" else "same_sizes"
    out = broadcast(sa, sb) if mode == "numpy" else (tuple(sa) if tuple(sa) == tuple(sb) else None)
    if out is None:
        fails.add(shape_check)
        loose |= {"dimension_count", "nonzero_sizes", "element_count"}
    if level == "none":
        if out is not None and len(out) > 32:
            fails.add("dimension_count")
        return not fails, fails, loose
    row = row_for(op, level)
    if row is None:
        # No support row: whether datatype/dimension checks fail or skip is not pinned down.
        fails.add("operator_available")
        loose |= {"datatype_supported", "dimension_count"}
    else:
        _, (lo, hi), dtypes = row
        if dtype not in dtypes:
            fails.add("datatype_supported")
        if out is not None:
            rank = max(1, len(out))
            ok = rank <= 4 if (lo, hi) == (4, 4) else lo <= rank <= hi
            if not ok:
                fails.add("dimension_count")
    if out is not None and 0 in out:
        fails.add("nonzero_sizes")
    return not fails, fails, loose


# --------------------------------------------------------------------------------------------
# .npy writing and strict reading
# --------------------------------------------------------------------------------------------

def npy_bytes(arr, byte_order="<", fortran=False, version=(1, 0)):
    """Serialises arr with the given descr byte order ('<', '>', '=', ignored for 1-byte types),
    storage order and format version."""
    dt = arr.dtype
    if dt.itemsize == 1:
        descr = "|" + dt.kind + "1"
        storage = dt
    else:
        descr = byte_order + dt.kind + str(dt.itemsize)
        if byte_order == "=":
            storage = dt.newbyteorder("<" if sys.byteorder == "little" else ">")
        else:
            storage = dt.newbyteorder(byte_order)
    data = np.ascontiguousarray(arr).astype(storage).tobytes(order="F" if fortran else "C")
    header = "{'descr': %r, 'fortran_order': %s, 'shape': %r, }" % (descr, fortran, tuple(arr.shape))
    length_bytes = 2 if version[0] == 1 else 4
    prefix = 6 + 2 + length_bytes
    total = prefix + len(header) + 1
    header += " " * ((-total) % 64) + "\n"
    enc = header.encode("utf-8" if version[0] == 3 else "latin1")
    out = b"\x93NUMPY" + bytes(version)
    out += len(enc).to_bytes(length_bytes, "little")
    return out + enc + data


def read_output(raw):
    """Parses the tool's output strictly: version 1.0, little-endian (or '|'), C order, data size
    exact. Returns (array, problem)."""
    if raw[:6] != b"\x93NUMPY":
        return None, "output does not start with the .npy magic"
    if tuple(raw[6:8]) != (1, 0):
        return None, f"output .npy version {raw[6]}.{raw[7]}, expected 1.0"
    hlen = int.from_bytes(raw[8:10], "little")
    try:
        header = ast.literal_eval(raw[10:10 + hlen].decode("latin1"))
    except (ValueError, SyntaxError) as e:
        return None, f"output header unparsable: {e}"
    descr, fortran, shape = header["descr"], header["fortran_order"], tuple(header["shape"])
    if fortran:
        return None, "output is Fortran order"
    dt = np.dtype(descr)
    if dt.itemsize > 1 and not descr.startswith("<"):
        return None, f"output descr {descr!r} is not little-endian"
    need = 10 + hlen + int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if len(raw) != need:
        return None, f"output is {len(raw)} bytes, header says {need}"
    arr = np.frombuffer(raw, dtype=dt.newbyteorder("<"), offset=10 + hlen).reshape(shape)
    return arr.astype(dt.newbyteorder("=")), None


def same(got, exp):
    if got.dtype != exp.dtype:
        return f"dtype {got.dtype} != {exp.dtype}"
    if got.shape != exp.shape:
        return f"shape {got.shape} != {exp.shape}"
    if got.dtype.kind == "f":
        gn, en = np.isnan(got), np.isnan(exp)
        if not np.array_equal(gn, en):
            i = np.flatnonzero(gn.ravel() != en.ravel())[0]
            return f"NaN positions differ, first at flat {i}: got {got.ravel()[i]!r} expected {exp.ravel()[i]!r}"
        u = f"u{got.itemsize}"
        g = np.where(gn, 0, got).view(u)
        e = np.where(en, 0, exp).view(u)
    else:
        g, e = got, exp
    bad = np.flatnonzero(g.ravel() != e.ravel())
    if bad.size:
        i = bad[0]
        gv, ev = got.ravel()[i], exp.ravel()[i]
        bits = ""
        if got.dtype.kind == "f":
            bits = f" (bits {int(g.ravel()[i]):#x} vs {int(e.ravel()[i]):#x})"
        return f"{bad.size} elements differ, first at flat {i}: got {gv!r} expected {ev!r}{bits}"
    return None


# --------------------------------------------------------------------------------------------
# Expected values per the contract
# --------------------------------------------------------------------------------------------

def expected(op, a, b, half):
    dt = a.dtype
    shape = np.broadcast_shapes(a.shape, b.shape)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    with np.errstate(all="ignore"):
        if dt.kind in "iu":
            u = np.dtype(f"u{dt.itemsize}")
            d = np.empty(shape, u)
            np.subtract(a.view(u), b.view(u), out=d)  # unsigned arithmetic wraps
            if op == "sqdiff":
                np.multiply(d, d, out=d)
            return d.view(dt)
        if dt == np.float16:
            d = np.empty(shape, np.float32)
            np.subtract(a.astype(np.float32), b.astype(np.float32), out=d)
            if op == "sub":
                return d.astype(np.float16)
            if half:
                h = d.astype(np.float16).astype(np.float32)
                p = np.empty(shape, np.float32)
                np.multiply(h, h, out=p)
                return p.astype(np.float16)
            p = np.empty(shape, np.float32)
            np.multiply(d, d, out=p)
            return p.astype(np.float16)
        d = np.empty(shape, dt)
        np.subtract(a, b, out=d)
        if op == "sqdiff":
            p = np.empty(shape, dt)
            np.multiply(d, d, out=p)
            return p
        return d


# --------------------------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------------------------

def float_edges(dt):
    fi = np.finfo(dt)
    sub = fi.smallest_subnormal
    return np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, fi.max, -fi.max, fi.tiny, -fi.tiny,
                     sub, -sub, sub * 3, fi.tiny - sub, 1.0, -1.0, fi.eps, 0.5, 2.0], dtype=dt)


def reference_stats(arr, *more):
    """The `stats` object of the report for result `arr`, computed independently: exact sums
    with Python integers, math.fsum or Fractions (rounded to float64 once), binades with frexp.

    With `more` arrays (all float, or all integer, like `arr`), the stats of their elements
    concatenated, each element counted as subnormal or not by its own array's dtype."""
    arrays = [np.asarray(a).reshape(-1) for a in (arr,) + more]
    floats = {a.dtype.kind == "f" for a in arrays}
    if len(floats) != 1:
        raise ValueError("reference_stats: float and integer arrays mixed")
    s = {"count": sum(int(a.size) for a in arrays)}
    if floats == {True}:
        x = np.concatenate([a.astype(np.float64) for a in arrays])
        fin = x[np.isfinite(x)]
        s.update(finite=int(fin.size), nan=int(np.isnan(x).sum()),
                 posinf=int((x == np.inf).sum()), neginf=int((x == -np.inf).sum()))
        if fin.size:
            lo, hi = fin.min(), fin.max()
            # -0.0 orders before +0.0.
            if lo == 0 and np.signbit(fin[fin == 0]).any():
                lo = -0.0
            if hi == 0 and (~np.signbit(fin[fin == 0])).any():
                hi = 0.0
            s.update(min=float(lo), max=float(hi))
        else:
            s.update(min=None, max=None)
        try:
            # Exact, then rounded once (Shewchuk); raises where a partial sum overflows.
            total = math.fsum(fin.tolist())
        except OverflowError:
            total = sum((Fraction(v) for v in fin.tolist()), Fraction(0))
            try:
                total = float(total)
            except OverflowError:
                total = None
        s["sum"] = total
        # Every finite float64 is an integer number of 2^-1074 units.
        units = sum(n * ((1 << 1074) // d) for n, d in (v.as_integer_ratio() for v in fin.tolist()))
        s["exact_sum"] = exact_form(units, -1074)
        s["mean"] = None if total is None or fin.size == 0 else total / fin.size
        sub, exps = [], []
        for a in arrays:
            tiny = float(np.finfo(a.dtype).tiny)
            y = a.astype(np.float64)
            nonzero = y[np.isfinite(y) & (y != 0)]
            sub += nonzero[np.abs(nonzero) < tiny].tolist()
            exps += (np.frexp(nonzero[np.abs(nonzero) >= tiny])[1] - 1).tolist()
        zero = int((fin == 0).sum())
    else:
        vals = [int(v) for a in arrays for v in a.tolist()]
        s.update(finite=len(vals), nan=0, posinf=0, neginf=0,
                 min=min(vals) if vals else None, max=max(vals) if vals else None)
        s["sum"] = sum(vals)
        s["exact_sum"] = exact_form(s["sum"], 0)
        # The exact sum over the count, rounded once (Python's int / int is correctly rounded).
        s["mean"] = s["sum"] / len(vals) if vals else None
        exps = [abs(v).bit_length() - 1 for v in vals if v != 0]
        zero, sub = sum(1 for v in vals if v == 0), []
    counts = {}
    for e in exps:
        counts[e] = counts.get(e, 0) + 1
    s["histogram"] = {"zero": zero, "subnormal": len(sub),
                      "binades": [{"exp": e, "count": counts[e]} for e in sorted(counts)]}
    return s


def exact_form(significand, exp2):
    """The report's `exact_sum` of significand * 2^exp2: the significand odd, or 0 with exp2 0."""
    if significand == 0:
        return {"significand": "0", "exp2": 0}
    while significand % 2 == 0:
        significand //= 2
        exp2 += 1
    return {"significand": str(significand), "exp2": exp2}


def same_stats(got, want):
    """A problem with the report's stats, or None."""
    if not isinstance(got, dict):
        return f"report stats {got!r}, expected an object"
    for k, w in want.items():
        g = got.get(k)
        if isinstance(w, float) and isinstance(g, (int, float)):
            if not (g == w and math.copysign(1, g) == math.copysign(1, w)):
                return f"stats.{k} {g!r}, expected {w!r}"
        elif g != w or type(g) is bool:
            return f"stats.{k} {str(g)[:120]}, expected {str(w)[:120]}"
    return None


def gen_values(rng, dtype, shape):
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if rng.random() < 0.3:
            lo = 0 if dt.kind == "u" else -6
            v = rng.integers(lo, 7, size=n).astype(dt)
        else:
            v = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        edges = [info.min, info.max, 0, 1, info.max - 1, info.min + 1]
        if dt.kind == "i":
            edges.append(-1)
        edges = np.array(edges, dtype=dt)
    else:
        style = rng.integers(4)
        if style == 0:  # any bit pattern: NaNs, infs, subnormals included
            u = np.dtype(f"u{dt.itemsize}")
            v = rng.integers(0, np.iinfo(u).max, size=n, dtype=u, endpoint=True).view(dt)
        elif style == 1:  # ordinary magnitudes
            scale = 10.0 ** rng.integers(-4, 5)
            v = (rng.standard_normal(n) * scale).astype(dt)
        elif style == 2:  # nearly equal values: cancellation, rounding ties
            v = (1.0 + rng.integers(-64, 64, size=n) * np.finfo(dt).eps).astype(dt)
        else:  # small integers (exact results) and halves
            v = (rng.integers(-20, 21, size=n) / 2).astype(dt)
        edges = float_edges(dt)
    v = v.copy()
    if n:
        k = int(rng.integers(0, min(n, 8) + 1))
        pos = rng.choice(n, size=k, replace=False)
        v[pos] = rng.choice(edges, size=k)
    return v.reshape(shape)


def gen_out_shape(rng, allow_empty):
    """A broadcast result's shape: rank 0..6, at most 4096 elements, one dim 0 if allow_empty."""
    rank = int(rng.integers(0, 7))
    out = [int(rng.choice([1, 2, 3, 4, 5, 7, 16])) for _ in range(rank)]
    while int(np.prod(out, dtype=np.int64)) > 4096:
        out[int(rng.integers(rank))] = 1
    if allow_empty and rank:
        out[int(rng.integers(rank))] = 0
    return out


def derive_shape(rng, out):
    """An input shape that broadcasts to `out`: sometimes fewer leading dims, some dims 1."""
    rank = len(out)
    r = int(rng.integers(0, rank + 1)) if rng.random() < 0.4 else rank
    s = out[rank - r:]
    return [1 if (d != 0 and rng.random() < 0.3) else d for d in s]


def gen_shapes(rng, allow_empty):
    out = gen_out_shape(rng, allow_empty)
    return derive_shape(rng, out), derive_shape(rng, out)


def make_incompatible(rng, sa, sb):
    """Turns a broadcastable pair into a clashing one, if possible."""
    r = min(len(sa), len(sb))
    if r == 0:
        return [2], [3]
    i = int(rng.integers(1, r + 1))
    sa, sb = list(sa), list(sb)
    sa[-i], sb[-i] = 2, 3
    return sa, sb


def level_spellings(level):
    """The ways `--feature-level` can name `level` (None: the flag left out, for 6_4)."""
    if level == "6_4":
        return ["6_4", "latest", None, "6.4", "DML_FEATURE_LEVEL_6_4"]
    if level == "none":
        return ["none"]
    return [level, level.replace("_", "."), "DML_FEATURE_LEVEL_" + level]


class Case:
    pass


def gen_case(seed, i):
    rng = np.random.default_rng([seed, i])
    c = Case()
    c.index = i
    c.op = str(rng.choice(["sub", "sqdiff"]))
    # float16 is weighted up: its rounding rules are the subtle part.
    c.dtype = str(rng.choice(DTYPES, p=[0.2] + [0.08] * 10))
    c.half = c.dtype == "float16" and c.op == "sqdiff" and rng.random() < 0.5
    c.mode = "none" if rng.random() < 0.1 else "numpy"
    allow_empty = rng.random() < 0.05
    sa, sb = gen_shapes(rng, allow_empty)
    if c.mode == "none" and rng.random() < 0.7:
        sb = list(sa)
    if rng.random() < 0.04:
        sa, sb = make_incompatible(rng, sa, sb)
    c.sa, c.sb = tuple(sa), tuple(sb)
    # Feature level: mostly one that accepts the case, sometimes a random one.
    pick = rng.random()
    if pick < 0.25:
        c.level = "none"
    elif pick < 0.8:
        valid_latest = model(c.op, "6_4", c.dtype, c.sa, c.sb, c.mode)[0]
        c.level = "6_4" if valid_latest else "none"
    else:
        c.level = str(rng.choice(LEVELS))
    options = level_spellings(c.level)
    c.level_arg = options[int(rng.integers(len(options)))]
    c.valid, c.fails, c.loose = model(c.op, c.level, c.dtype, c.sa, c.sb, c.mode)
    c.a = gen_values(rng, c.dtype, c.sa)
    c.b = gen_values(rng, c.dtype, c.sb)
    c.layouts = []
    for _ in range(2):
        bo = str(rng.choice(["<", ">", "="]))
        fortran = bool(rng.random() < 0.3)
        version = [(1, 0), (2, 0), (3, 0)][int(rng.choice(3, p=[0.6, 0.2, 0.2]))]
        c.layouts.append((bo, fortran, version))
    r = rng.random()
    c.stdin = "a" if r < 0.1 else ("b" if r < 0.15 else None)
    r = rng.random()
    if r < 0.6:
        c.output = "file"
    elif r < 0.7:
        c.output = "dash"
    elif r < 0.8:
        c.output = "implicit"
    else:
        c.output = "inplace_b" if c.stdin == "a" else ("inplace_a" if c.stdin == "b" or rng.random() < 0.5 else "inplace_b")
    c.threads = [None, "1", "3"][int(rng.integers(3))]
    return c


def describe(c):
    parts = [c.op, c.dtype, f"A{list(c.sa)}", f"B{list(c.sb)}", f"level={c.level_arg or '(default)'}",
             f"broadcast={c.mode}"]
    if c.half:
        parts.append("half")
    parts.append("layouts=" + ",".join(f"{bo}{'F' if f else 'C'}v{v[0]}" for bo, f, v in c.layouts))
    if c.stdin:
        parts.append(f"stdin={c.stdin}")
    parts.append(f"out={c.output}")
    if c.threads:
        parts.append(f"threads={c.threads}")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------

def run_case(exe, c, tmp, extra):
    """Runs one case in tmp; returns a list of problems (empty when it passed)."""
    files = {}
    for name, arr, (bo, fortran, version) in (("a", c.a, c.layouts[0]), ("b", c.b, c.layouts[1])):
        files[name] = npy_bytes(arr, bo, fortran, version)
        with open(os.path.join(tmp, f"{name}.npy"), "wb") as f:
            f.write(files[name])
    a_arg = "-" if c.stdin == "a" else "a.npy"
    b_arg = "-" if c.stdin == "b" else "b.npy"
    args = [exe, c.op, a_arg, b_arg]
    result_path = None
    if c.output == "file":
        args += ["-o", "out.npy"]
        result_path = "out.npy"
    elif c.output == "dash":
        args += ["-o", "-"]
    elif c.output == "inplace_a":
        args += ["-o", "a.npy"]
        result_path = "a.npy"
    elif c.output == "inplace_b":
        args += ["-o", "b.npy"]
        result_path = "b.npy"
    if c.level_arg is not None:
        args += ["--feature-level", c.level_arg]
    if c.mode == "none":
        args += ["--broadcast", "none"]
    if c.half:
        args.append("--half-precision")
    if c.threads:
        args += ["--threads", c.threads]
    args += ["--report", "report.json", "-q", "--stats"] + extra
    c.cmdline = " ".join(shlex.quote(x) for x in args[1:])
    stdin = files[c.stdin] if c.stdin else None
    try:
        p = subprocess.run(args, cwd=tmp, input=stdin, capture_output=True, timeout=TIMEOUT,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return [f"timed out after {TIMEOUT} s"]
    problems = []
    err = p.stderr.decode(errors="replace").strip()
    want = 0 if c.valid else 3
    if p.returncode != want:
        problems.append(f"exit {p.returncode}, expected {want}; stderr: {err[:300]}")
        return problems
    try:
        with open(os.path.join(tmp, "report.json")) as f:
            rep = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        problems.append(f"no readable report: {e.__class__.__name__}: {e}")
        rep = None
    if rep is not None:
        statuses = {ch.get("id"): ch.get("status") for ch in rep.get("checks", [])}
        failed = {k for k, v in statuses.items() if v == "fail"}
        if rep.get("valid") is not c.valid:
            problems.append(f"report valid={rep.get('valid')!r}, expected {c.valid}")
        if len(statuses) != 7:
            problems.append(f"report has {len(statuses)} checks, expected 7")
        if c.fails - failed:
            problems.append(f"checks {sorted(c.fails - failed)} should fail (failed: {sorted(failed)})")
        if failed - c.fails - c.loose:
            problems.append(f"checks {sorted(failed - c.fails - c.loose)} failed unexpectedly")
    if not c.valid:
        if not err:
            problems.append("exit 3 without a message on stderr")
        if c.output == "file" and os.path.exists(os.path.join(tmp, "out.npy")):
            problems.append("an output file was written on exit 3")
        if c.output in ("inplace_a", "inplace_b"):
            name = c.output[-1]
            with open(os.path.join(tmp, f"{name}.npy"), "rb") as f:
                if f.read() != files[name]:
                    problems.append(f"in-place target {name}.npy changed on exit 3")
        if c.output in ("dash", "implicit") and p.stdout:
            problems.append("data on stdout on exit 3")
        return problems
    if err:
        problems.append(f"stderr not empty with -q: {err[:200]}")
    if result_path:
        with open(os.path.join(tmp, result_path), "rb") as f:
            raw = f.read()
    else:
        raw = p.stdout
    got, why = read_output(raw)
    if why:
        problems.append(why)
        return problems
    exp = expected(c.op, c.a, c.b, c.half)
    why = same(got, exp)
    if why:
        problems.append(why)
    if rep is not None:
        if rep.get("elements") != int(exp.size):
            problems.append(f"report elements {rep.get('elements')!r}, expected {exp.size}")
        if list(rep.get("broadcast", {}).get("shape", [None])) != list(exp.shape):
            problems.append(f"report broadcast.shape {rep.get('broadcast', {}).get('shape')!r}, expected {list(exp.shape)}")
        why = same_stats(rep.get("stats"), reference_stats(exp))
        if why:
            problems.append(why)
    leftovers = set(os.listdir(tmp)) - {"a.npy", "b.npy", "out.npy", "report.json"}
    if leftovers:
        problems.append(f"stray files left: {sorted(leftovers)}")
    return problems


def large_cases():
    """Fixed big cases (about 3 million elements) for the chunked and threaded paths."""
    rng = np.random.default_rng(12345)
    n = 3_000_000
    cases = []

    def case(name, op, a, b, args=(), half=False, layouts=None):
        cases.append((name, op, a, b, list(args), half, layouts or [("<", False, (1, 0))] * 2))

    a = rng.standard_normal(n).astype(np.float32) * 100
    a[::9973] = np.float32("nan")
    a[5::10007] = np.float32(1e-40)
    case("sub float32 [3e6] - [1]", "sub", a, np.array([0.25], np.float32))
    # No NaN or infinity: every block of the float32 summary takes its windowed path.
    big = np.tile(np.array([1e30, 1, -1e30], np.float32), n // 3)
    case("sub float32 [3e6] - [1]: 1e30, 1, -1e30 repeated", "sub", big, np.array([0.0], np.float32))
    wide = (rng.standard_normal(n) * 10.0 ** rng.uniform(-25, 18, n)).astype(np.float32)
    near = (wide * (1 + rng.standard_normal(n).astype(np.float32) * 1e-3)).astype(np.float32)
    case("sqdiff float32 [3e6] - [3e6], 43 decades, near-equal", "sqdiff", wide, near)
    bits = rng.integers(0, 65535, size=(1000, 3000), dtype=np.uint16, endpoint=True).view(np.float16)
    bb = rng.integers(0, 65535, size=3000, dtype=np.uint16, endpoint=True).view(np.float16)
    case("sqdiff float16 [1000,3000] - [3000]", "sqdiff", bits, bb)
    case("sqdiff float16 [1000,3000] - [3000] half", "sqdiff", bits, bb, ["--half-precision"], half=True)
    ia = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=(3, 1_000_000), dtype=np.int64)
    ib = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=(3, 1), dtype=np.int64)
    case("sub int64 [3,1e6] - [3,1]", "sub", ia, ib)
    ua = rng.integers(0, 2**32 - 1, size=(1500, 2000), dtype=np.uint32, endpoint=True)
    ub = rng.integers(0, 2**32 - 1, size=(1500, 1), dtype=np.uint32, endpoint=True)
    case("sqdiff uint32 [1500,2000] Fortran big-endian - [1500,1]", "sqdiff", ua, ub,
         layouts=[(">", True, (1, 0)), ("<", False, (2, 0))])
    da = rng.standard_normal(n)
    db = rng.standard_normal((1, n)) * 1e-3
    case("sqdiff float64 [3e6] - [1,3e6] level none", "sqdiff", da, db, ["--feature-level", "none"],
         layouts=[("<", False, (1, 0)), (">", False, (3, 0))])
    return cases


def run_large(exe, tmp, case, extra):
    name, op, a, b, args, half, layouts = case
    problems = []
    with open(os.path.join(tmp, "a.npy"), "wb") as f:
        f.write(npy_bytes(a, *layouts[0]))
    with open(os.path.join(tmp, "b.npy"), "wb") as f:
        f.write(npy_bytes(b, *layouts[1]))
    outs, stats = [], []
    for threads in (None, "1"):
        out = f"out_{threads or 'all'}.npy"
        cmd = [exe, op, "a.npy", "b.npy", "-o", out, "-q", "--stats", "--report", "r.json", *args, *extra]
        if threads:
            cmd += ["--threads", threads]
        try:
            p = subprocess.run(cmd, cwd=tmp, capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return [f"timed out after {TIMEOUT} s ({' '.join(cmd[1:])})"]
        if p.returncode != 0:
            return [f"exit {p.returncode} ({' '.join(cmd[1:])}); stderr: {p.stderr.decode(errors='replace')[:300]}"]
        with open(os.path.join(tmp, out), "rb") as f:
            outs.append(f.read())
        with open(os.path.join(tmp, "r.json")) as f:
            stats.append(json.load(f).get("stats"))
    if outs[0] != outs[1]:
        problems.append("--threads 1 and the default thread count give different bytes")
    if stats[0] != stats[1] or not stats[0]:
        problems.append(f"--threads 1 and the default thread count give different stats: {stats}"[:300])
    got, why = read_output(outs[0])
    if why:
        return problems + [why]
    exp = expected(op, a, b, half)
    why = same(got, exp)
    if why:
        problems.append(why)
    why = same_stats(stats[0], reference_stats(exp))
    if why:
        problems.append(why)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exe")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--no-large", action="store_true", help="skip the 3-million-element cases")
    ap.add_argument("--only", type=int, help="run only random case I")
    ap.add_argument("--keep", help="copy failing cases' files into this directory")
    ap.add_argument("--extra", default="", help="arguments appended to every command line")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    exe = os.path.abspath(opts.exe)
    extra = opts.extra.split()
    passed, failed = 0, []
    indices = [opts.only] if opts.only is not None else range(opts.cases)
    for i in indices:
        c = gen_case(opts.seed, i)
        with tempfile.TemporaryDirectory(prefix="tensorop-xc-") as tmp:
            try:
                problems = run_case(exe, c, tmp, extra)
            except Exception as e:  # noqa: BLE001 - report, keep going
                problems = [f"checker error: {e.__class__.__name__}: {e}"]
            if problems and opts.keep:
                dst = os.path.join(opts.keep, f"case{i}")
                shutil.copytree(tmp, dst, dirs_exist_ok=True)
        label = f"case {i} ({describe(c)}) [tensorop {getattr(c, 'cmdline', '')}]"
        if problems:
            failed.append((label, "; ".join(problems)))
        else:
            passed += 1
            if opts.verbose:
                print(f"ok   {label}")
    if not opts.no_large and opts.only is None:
        for case in large_cases():
            with tempfile.TemporaryDirectory(prefix="tensorop-xc-") as tmp:
                try:
                    problems = run_large(exe, tmp, case, extra)
                except Exception as e:  # noqa: BLE001
                    problems = [f"checker error: {e.__class__.__name__}: {e}"]
            label = f"large: {case[0]}"
            if problems:
                failed.append((label, "; ".join(problems)))
            else:
                passed += 1
                if opts.verbose:
                    print(f"ok   {label}")
    for label, why in failed:
        print(f"FAIL {label}: {why}")
    print(f"{passed} passed, {len(failed)} failed (seed {opts.seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
