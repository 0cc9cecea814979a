#!/usr/bin/env python3
"""Seeded random cross-check of tensorop's container runs (.npz, .safetensors) against NumPy and
the `safetensors` package.

usage: crosscheck_containers.py TENSOROP [--seed N] [--cases N] [--extra="ARGS"] [--no-bf16]
                                         [--only I] [--keep DIR] [-v]

e.g.   python3 tests/crosscheck_containers.py target/release/tensorop --seed 7 --cases 1000
       python3 tests/crosscheck_containers.py target/release/tensorop --extra="--backend wgpu"

Each case draws an operator (sub, sqdiff, `--half-precision` sometimes), a format for A and for B
(`.npz` stored by `np.savez`, deflated by `np.savez_compressed`, `.safetensors` written by
`safetensors.numpy.save_file` or by hand in any member order with rank-0 members kept; sometimes
one side a single `.npy`, which pairs with every member), 1..12 member pairs with names like
`model.layers.3.weight` or `encoder/block_1/kernel`, dtypes from the eleven tensorop computes
(one for all members, or mixed within a container), broadcastable shapes, values with edge cases
(`crosscheck.py`'s generators), `.npz` members stored big-endian or in Fortran order, sometimes
members only one input holds (exit 5 and nothing written, unless `--skip-unpaired`), a member of
different dtypes in A and B, `--member` patterns (one that matches nothing: exit 1), an output
(`.safetensors`, `.npz`, a name of neither kind or standard output, whose format is the first
container input's, or `/dev/null` with `--stats`), a feature level (one that refuses some
member: exit 3 and nothing written), `--broadcast none` and a thread count.

Every output member is read back with `safetensors.numpy.load_file` or `np.load` and compared bit
for bit with the NumPy reference of `crosscheck.py` (NaN positions must match; NaN payloads may
differ). The report is checked: every pair's `status`, `checks` and `minimum_feature_level` as
`crosscheck.py`'s model predicts them, `inputs`, `output_member` and `stats`; `unpaired`; and the
totals, whose `minimum_feature_level` is the newest of the members' (null when one has none).
`totals.stats` (or each of `totals.stats_by_kind.float` and `.int`) must equal, key for key and
bit for bit, the `stats` of one `tensorop` run over a single `.npy` pair holding every member's
elements concatenated (each pair's inputs broadcast and flattened, in the report's member order).
Such a run exists only when those members share one dtype (not bfloat16, which `.npy` cannot
hold); where dtypes of one kind mix (float16 with float64, int8 with uint64), the totals are
compared with `crosscheck.py`'s stats reference of the concatenated results instead (exact sums;
each element counted as subnormal by its own dtype), with no tensorop run behind it. Every
totals object is also compared with that reference. One pair per case is also run on its own as
two `.npy` files: its checks, minimum level, support row, broadcast strides, `dml` descriptors and
stats must be the member entry's.

Cases also draw bfloat16 members (`BF16` in `.safetensors`, written as raw bytes; NumPy has no such
dtype; `--no-bf16` leaves them out). Their reference is computed on float32: `sub` is bf16(f32(a) - f32(b)); `sqdiff` is
bf16(d * d) with d = f32(a) - f32(b) (one rounding at the end), or with `--half-precision`
h = bf16(d), bf16(f32(h) * f32(h)); float32 rounds to bfloat16 to nearest, ties to even, and NaN
stays NaN. Only `--feature-level none` accepts them: at every DirectML level `datatype_supported`
refuses them (exit 3), and an `.npz` output cannot hold them (exit 1, nothing written).

Prints one line per failing case, then 'N passed, N failed'; exits 1 if any case failed.
`--only I` reruns case I alone (same seed); `--keep DIR` keeps failing cases' files under DIR.
"""
import argparse
import io
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crosscheck as xc  # noqa: E402 - the single-pair model, generators and references

try:
    import safetensors.numpy as stnp
except ImportError:  # reported by main(), so that --help works without it
    stnp = None

BF16 = "bfloat16"
FLOATS = ["float16", "float32", "float64"]
INTS = [d for d in xc.DTYPES if d not in FLOATS]
# safetensors' dtype names.
ST_NAME = {"float16": "F16", "float32": "F32", "float64": "F64", "int8": "I8", "int16": "I16",
           "int32": "I32", "int64": "I64", "uint8": "U8", "uint16": "U16", "uint32": "U32",
           "uint64": "U64", BF16: "BF16"}
ST_DTYPE = {v: k for k, v in ST_NAME.items()}
OPS = {"sub": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT", "sqdiff": "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE"}
NAME_TEMPLATES = [
    "model.layers.{k}.weight", "model.layers.{k}.self_attn.q_proj.bias", "encoder/block_{k}/kernel",
    "decoder.layers.{k}.mlp/up_proj", "h.{k}.ln_1.weight", "layers.{k}", "weight_{k}", "a.b/c.d.{k}",
    "dots..inside.{k}", "x-y_z.{k}", "\u03c4.{k}", "w", "b", "bias", "x", "emb.tok", "lm_head.weight",
    "model.norm.weight", "weights.npy",
]
CONTAINER_FORMATS = ["npz", "npz_deflated", "safetensors", "safetensors_raw"]
TIMEOUT = xc.TIMEOUT


# --------------------------------------------------------------------------------------------
# bfloat16: bit patterns in uint16, arithmetic on float32
# --------------------------------------------------------------------------------------------

def bf16_widen(bits):
    """bfloat16 bit patterns to the float32 values they are (exact)."""
    return (np.array(bits, dtype=np.uint16, order="C").astype(np.uint32) << 16).view(np.float32)


def bf16_round(x):
    """float32 to bfloat16 bit patterns: to nearest, ties to even; NaN stays a (quiet) NaN."""
    x = np.array(x, dtype=np.float32, order="C")
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    quiet = ((u >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(x), quiet, rounded)


BF16_EDGES = np.array([0x7F80, 0xFF80, 0x7FC0, 0x0000, 0x8000, 0x7F7F, 0xFF7F, 0x0080, 0x8080,
                       0x0001, 0x8001, 0x0003, 0x007F, 0x3F80, 0xBF80, 0x3C00, 0x3F00, 0x4000],
                      dtype=np.uint16)


def gen_bf16(rng, shape):
    n = int(np.prod(shape, dtype=np.int64))
    if rng.random() < 0.25:  # any bit pattern
        v = rng.integers(0, 65535, size=n, dtype=np.uint16, endpoint=True)
    else:
        v = bf16_round(xc.gen_values(rng, "float32", (n,)))
    if n:
        k = int(rng.integers(0, min(n, 8) + 1))
        v[rng.choice(n, size=k, replace=False)] = rng.choice(BF16_EDGES, size=k)
    return v.reshape(shape)


def expected_bf16(op, a, b, half):
    shape = np.broadcast_shapes(a.shape, b.shape)
    fa = bf16_widen(np.broadcast_to(a, shape))
    fb = bf16_widen(np.broadcast_to(b, shape))
    with np.errstate(all="ignore"):
        d = fa - fb
        if op == "sub":
            return bf16_round(d)
        if half:
            h = bf16_widen(bf16_round(d))
            return bf16_round(h * h)
        return bf16_round(d * d)


def gen_member_values(rng, dtype, shape):
    return gen_bf16(rng, tuple(shape)) if dtype == BF16 else xc.gen_values(rng, dtype, tuple(shape))


def reference(op, dtype, a, b, half):
    """The expected result of a pair (bfloat16: bit patterns) from native-order arrays."""
    return expected_bf16(op, a, b, half) if dtype == BF16 else xc.expected(op, a, b, half)


def numeric(dtype, arr):
    """An array whose values the stats summarise (bfloat16 widened to float32, exactly)."""
    return bf16_widen(arr) if dtype == BF16 else arr


def same_values(dtype, got, exp):
    if dtype == BF16:
        return xc.same(bf16_widen(got).reshape(got.shape), bf16_widen(exp).reshape(exp.shape))
    return xc.same(got, exp)


# --------------------------------------------------------------------------------------------
# The single-pair model, per member pair
# --------------------------------------------------------------------------------------------

def pair_model(op, level, da, db, sa, sb, mode):
    """crosscheck.model for a pair whose dtypes may differ: (valid, must fail, not pinned)."""
    valid, fails, loose = xc.model(op, level, da, sa, sb, mode)
    if da != db:
        fails, loose = fails | {"same_datatype"}, loose | {"datatype_supported"}
        valid = False
    return valid, fails, loose


def minimum_level(op, da, db, sa, sb, mode):
    """The oldest DirectML level at which the pair passes every check, or None."""
    for level in xc.LEVELS:
        if pair_model(op, level, da, db, sa, sb, mode)[0]:
            return level
    return None


def newest(levels):
    """The newest of the members' minimum levels; None when some member has none (or none are)."""
    if not levels or any(lv is None for lv in levels):
        return None
    return max(levels, key=xc.level_key)


def glob_match(pattern, name):
    """`--member` matching: `*` any run of characters (`/` included), `?` one, others themselves."""
    rx = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.fullmatch(rx, name, re.DOTALL) is not None


# --------------------------------------------------------------------------------------------
# Containers: writing and reading
# --------------------------------------------------------------------------------------------

def safetensors_bytes(members, metadata=None):
    """A .safetensors file written by hand: `members` are (name, dtype, array) in this order, each
    array's elements little-endian in C order (bfloat16 as its uint16 bit patterns)."""
    header, data, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, arr in members:
        raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes(order="C")
        header[name] = {"dtype": ST_NAME[dtype], "shape": list(arr.shape), "data_offsets": [at, at + len(raw)]}
        data.append(raw)
        at += len(raw)
    text = json.dumps(header, ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(data)


def read_safetensors_raw(raw):
    """A .safetensors file's members, read without the package: {name: (dtype, array)}, bfloat16
    as uint16 bit patterns. Raises ValueError on a malformed file."""
    if len(raw) < 8:
        raise ValueError("shorter than the 8-byte header length")
    n = struct.unpack("<Q", raw[:8])[0]
    if 8 + n > len(raw):
        raise ValueError(f"header length {n} past the end ({len(raw)} bytes)")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    base, out, end = 8 + n, {}, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = ST_DTYPE.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"member {name!r}: dtype {info['dtype']!r}")
        storage = np.dtype("<u2") if dtype == BF16 else np.dtype(dtype).newbyteorder("<")
        s, e = info["data_offsets"]
        shape = tuple(info["shape"])
        if e - s != int(np.prod(shape, dtype=np.int64)) * storage.itemsize or base + e > len(raw):
            raise ValueError(f"member {name!r}: data_offsets {[s, e]} do not fit shape {list(shape)}")
        end = max(end, e)
        arr = np.frombuffer(raw, dtype=storage, count=(e - s) // storage.itemsize, offset=base + s)
        out[name] = (dtype, arr.reshape(shape).astype(storage.newbyteorder("=")))
    if base + end != len(raw):
        raise ValueError(f"{len(raw) - base - end} bytes after the last member's data")
    return out


def read_container(path, fmt):
    """A container's members as NumPy (or, for BF16, this script) reads them: {name: (dtype,
    array as stored)}."""
    if fmt.startswith("npz"):
        with np.load(path) as z:
            return {k: (z[k].dtype.name, z[k]) for k in z.files}
    with open(path, "rb") as f:
        members = read_safetensors_raw(f.read())
    if any(d == BF16 for d, _ in members.values()):
        return members
    return {k: (v.dtype.name, v) for k, v in stnp.load_file(path).items()}


def native(arr):
    """arr in native byte order and C order (rank 0 kept)."""
    return arr.astype(arr.dtype.newbyteorder("="), order="C")


def write_container(path, fmt, members, layouts, metadata):
    """Writes `members` (name, dtype, array) as `fmt`; `layouts` gives each .npz member's byte
    order and whether it is stored in Fortran order."""
    if fmt.startswith("npz"):
        arrays = {}
        for (name, _, arr), (bo, fortran) in zip(members, layouts):
            a = arr.astype(arr.dtype.newbyteorder(bo))
            arrays[name] = np.asfortranarray(a) if fortran else a
        with open(path, "wb") as f:
            (np.savez if fmt == "npz" else np.savez_compressed)(f, **arrays)
    elif fmt == "safetensors":
        stnp.save_file({name: arr.copy(order="C") for name, _, arr in members}, path, metadata=metadata)
    else:
        with open(path, "wb") as f:
            f.write(safetensors_bytes(members, metadata))


# --------------------------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------------------------

class Case:
    pass


def gen_names(rng, n, taken=()):
    names = []
    while len(names) < n:
        t = NAME_TEMPLATES[int(rng.integers(len(NAME_TEMPLATES)))]
        name = t.format(k=int(rng.integers(0, 40)))
        if name not in names and name not in taken:
            names.append(name)
    return names


def pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def gen_dtypes(rng, n, pool_floats):
    """n member dtypes: one for all, one kind mixed, or anything mixed."""
    pool = pool_floats + INTS
    style = rng.random()
    if style < 0.45:
        return [pick(rng, pool)] * n
    if style < 0.7:
        kind = pool_floats if rng.random() < 0.5 else INTS
        return [pick(rng, kind) for _ in range(n)]
    return [pick(rng, pool) for _ in range(n)]


def gen_pattern(rng, names):
    name = pick(rng, names)
    style = rng.random()
    if style < 0.3 or len(name) < 2:
        return name
    k = int(rng.integers(1, len(name)))
    if style < 0.55:
        return name[:k] + "*"
    if style < 0.75:
        return "*" + name[k:]
    if style < 0.9:
        return name[:k] + "?" + name[k + 1:]
    return "*"


def gen_case(seed, i, bf16=False):
    rng = np.random.default_rng([seed, i])
    c = Case()
    c.index = i
    c.op = pick(rng, ["sub", "sqdiff"])
    c.half = c.op == "sqdiff" and rng.random() < 0.4
    c.mode = "none" if rng.random() < 0.08 else "numpy"
    c.formats = [pick(rng, CONTAINER_FORMATS), pick(rng, CONTAINER_FORMATS)]
    r = rng.random()
    c.single = 0 if r < 0.08 else (1 if r < 0.16 else None)
    if c.single is not None:
        c.formats[c.single] = "npy"
    bin_ext = [rng.random() < 0.05 for _ in range(2)]  # formats are read from the content
    floats = FLOATS + ([BF16] if bf16 and c.single is None and rng.random() < 0.7 else [])
    n = int(rng.integers(1, 13))
    names = gen_names(rng, n)
    members = [[], []]  # per side: (name, dtype, array)
    # One member pair that no level accepts, sometimes: shapes that do not broadcast, or (two
    # containers) a member of one name and two dtypes.
    trouble = int(rng.integers(n)) if rng.random() < 0.12 else None
    # One member over 4 MiB sometimes: it runs alone on every thread, not in a batch of small ones.
    big = int(rng.integers(n)) if rng.random() < 0.05 else None
    if c.single is None:
        dtypes = gen_dtypes(rng, n, floats)
        for k, (name, dt) in enumerate(zip(names, dtypes)):
            sa, sb = xc.gen_shapes(rng, rng.random() < 0.03)
            if k == big and dt != BF16 and np.dtype(dt).itemsize >= 4:
                sa = [int(rng.integers(1100, 1300)) * 4 // np.dtype(dt).itemsize, 1024]
                sb = pick(rng, [list(sa), [1, 1024], [sa[0], 1], [1024]])
            if c.mode == "none" and rng.random() < 0.8:
                sb = list(sa)
            db = dt
            if k == trouble and rng.random() < 0.5:
                sa, sb = xc.make_incompatible(rng, sa, sb)
            elif k == trouble:
                db = pick(rng, [d for d in floats + INTS if d != dt])
            members[0].append((name, dt, gen_member_values(rng, dt, sa)))
            members[1].append((name, db, gen_member_values(rng, db, sb)))
        # Members only one input holds.
        if rng.random() < 0.25:
            ka, kb = int(rng.integers(0, 3)), int(rng.integers(0, 3))
            extra = gen_names(rng, ka + kb + (ka + kb == 0), names)
            for j, name in enumerate(extra):
                dt = pick(rng, floats + INTS)
                side = 0 if j < ka else 1
                members[side].append((name, dt, gen_member_values(rng, dt, xc.gen_out_shape(rng, False))))
        # B in another order.
        order = rng.permutation(len(members[1]))
        members[1] = [members[1][int(k)] for k in order]
    else:
        dt = pick(rng, FLOATS + INTS)
        out = xc.gen_out_shape(rng, False)
        s_npy = xc.derive_shape(rng, out)
        odd = trouble is not None and rng.random() < 0.5
        for k, name in enumerate(names):
            s = list(s_npy) if c.mode == "none" and rng.random() < 0.8 else xc.derive_shape(rng, out)
            mdt = dt
            if k == trouble and odd:
                mdt = pick(rng, [d for d in FLOATS + INTS if d != dt])
            elif k == trouble:
                s = xc.make_incompatible(rng, s, s_npy)[0]
            members[1 - c.single].append((name, mdt, gen_member_values(rng, mdt, s)))
        c.npy = xc.gen_values(rng, dt, tuple(s_npy))
        c.npy_layout = (pick(rng, ["<", ">", "="]), bool(rng.random() < 0.3),
                        [(1, 0), (2, 0), (3, 0)][int(rng.choice(3, p=[0.6, 0.2, 0.2]))])
    # A side holding bfloat16 can only be written by hand.
    for side in (0, 1):
        if any(d == BF16 for _, d, _ in members[side]):
            c.formats[side] = "safetensors_raw"
    c.ext = [".bin" if b else "." + f.split("_")[0] for f, b in zip(c.formats, bin_ext)]
    c.members = members
    c.layouts = [[(pick(rng, ["<", ">", "="]), bool(rng.random() < 0.3)) for _ in m] for m in members]
    c.metadata = [{"format": "np"} if rng.random() < 0.3 else None for _ in range(2)]
    # --member patterns.
    c.patterns = []
    container_names = [m[0] for side in members for m in side]
    if rng.random() < 0.2:
        c.patterns = [gen_pattern(rng, container_names) for _ in range(int(rng.integers(1, 3)))]
    if rng.random() < 0.02:
        c.patterns.append("no.such.member*")
    unpaired = c.single is None and {m[0] for m in members[0]} != {m[0] for m in members[1]}
    c.skip = bool(rng.random() < (0.5 if unpaired else 0.1))
    # A level that accepts every pair mostly; sometimes any level.
    if c.single is None:
        in_b = {m[0]: m for m in members[1]}
        pairs = [(m, in_b[m[0]]) for m in members[0] if m[0] in in_b]
    else:
        npy = (None, c.npy.dtype.name, c.npy)
        pairs = [(m, npy) if c.single == 1 else (npy, m) for m in members[1 - c.single]]
    name = lambda p: p[0][0] if c.single != 0 else p[1][0]  # noqa: E731
    selected = [p for p in pairs if not c.patterns or any(glob_match(q, name(p)) for q in c.patterns)]
    mins = [minimum_level(c.op, a[1], b[1], a[2].shape, b[2].shape, c.mode) for a, b in selected]
    r = rng.random()
    if r < 0.3:
        c.level = "none"
    elif r < 0.8:
        lo = newest(mins)
        accepting = [lv for lv in xc.LEVELS if lo is not None and xc.level_key(lv) >= xc.level_key(lo)]
        c.level = pick(rng, accepting) if accepting else "none"
    else:
        c.level = pick(rng, xc.LEVELS)
    c.level_arg = pick(rng, xc.level_spellings(c.level))
    r = rng.random()
    # .safetensors, .npz, another name or standard output (the format the inputs': the first
    # container's), or /dev/null.
    c.output = "safetensors" if r < 0.35 else "npz" if r < 0.6 else "other" if r < 0.68 else \
        "stdout" if r < 0.75 else "null"
    c.stats = c.output == "null" or rng.random() < 0.75
    c.threads = pick(rng, [None, "1", "2", "3"])
    c.pick = rng.random()  # which pair also runs as two .npy files
    return c


def describe(c):
    fmts = ",".join(f"{f}{e if e == '.bin' else ''}" for f, e in zip(c.formats, c.ext))
    dts = sorted({d for side in c.members for _, d, _ in side})
    parts = [c.op, f"formats={fmts}", f"members={len(c.members[0])}/{len(c.members[1])}",
             "dtypes=" + ",".join(dts), f"level={c.level_arg or '(default)'}", f"broadcast={c.mode}",
             f"out={c.output}"]
    if c.half:
        parts.append("half")
    if c.patterns:
        parts.append("member=" + "|".join(c.patterns))
    if c.skip:
        parts.append("skip-unpaired")
    if c.threads:
        parts.append(f"threads={c.threads}")
    return " ".join(parts)


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------

def run(exe, args, cwd):
    """Runs tensorop; returns the CompletedProcess, or None on a timeout."""
    try:
        return subprocess.run([exe] + args, cwd=cwd, capture_output=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, json.JSONDecodeError) as e:
        return None, f"{e.__class__.__name__}: {e}"


def exact(x):
    """JSON text that tells -0.0 from 0.0 and keys apart, for bit-for-bit comparisons."""
    return json.dumps(x, sort_keys=True)


def stats_problem(what, got, want):
    """A problem when report stats `got` differ from `want` in any key or bit, or None."""
    if not isinstance(got, dict) or not isinstance(want, dict):
        return f"{what} {str(got)[:100]}, expected {str(want)[:100]}"
    if set(got) != set(want):
        return f"{what} has keys {sorted(got)}, expected {sorted(want)}"
    why = xc.same_stats(got, want)
    if why is None and exact(got) != exact(want):
        why = f"differs: {exact(got)[:150]} vs {exact(want)[:150]}"
    return f"{what}: {why}" if why else None


class Pair:
    pass


def predict(c, inputs):
    """Pairs, unpaired members and each pair's prediction from the inputs as NumPy reads them."""
    sel = lambda name: not c.patterns or any(glob_match(p, name) for p in c.patterns)  # noqa: E731
    names = [list(x) if isinstance(x, dict) else [] for x in inputs]
    bad_patterns = [p for p in c.patterns if not any(glob_match(p, n) for n in names[0] + names[1])]
    pairs, only_a, only_b = [], [], []
    if c.single is None:
        pairs = [n for n in names[0] if sel(n) and n in inputs[1]]
        only_a = [n for n in names[0] if sel(n) and n not in inputs[1]]
        only_b = [n for n in names[1] if sel(n) and n not in inputs[0]]
    else:
        pairs = [n for n in names[1 - c.single] if sel(n)]
    out = []
    for name in pairs:
        p = Pair()
        p.name = name
        sides = [inputs[k][name] if isinstance(inputs[k], dict) else (inputs[k].dtype.name, inputs[k])
                 for k in (0, 1)]
        (p.da, p.a_stored), (p.db, p.b_stored) = sides
        p.a, p.b = native(p.a_stored), native(p.b_stored)
        p.valid, p.fails, p.loose = pair_model(c.op, c.level, p.da, p.db, p.a.shape, p.b.shape, c.mode)
        p.minimum = minimum_level(c.op, p.da, p.db, p.a.shape, p.b.shape, c.mode)
        p.exp = reference(c.op, p.da, p.a, p.b, c.half) if p.valid else None
        out.append(p)
    return out, only_a, only_b, bad_patterns


def check_member_entry(c, m, p, want, problems):
    tag = f"member {p.name!r}"
    if m.get("status") != ("ok" if p.valid else "invalid"):
        problems.append(f"{tag}: status {m.get('status')!r}, expected {'ok' if p.valid else 'invalid'}")
    statuses = {ch.get("id"): ch.get("status") for ch in m.get("checks") or []}
    failed = {k for k, v in statuses.items() if v == "fail"}
    if len(statuses) != 7:
        problems.append(f"{tag}: {len(statuses)} checks, expected 7")
    if p.fails - failed:
        problems.append(f"{tag}: checks {sorted(p.fails - failed)} should fail (failed: {sorted(failed)})")
    if failed - p.fails - p.loose:
        problems.append(f"{tag}: checks {sorted(failed - p.fails - p.loose)} failed unexpectedly")
    if m.get("minimum_feature_level") != p.minimum:
        problems.append(f"{tag}: minimum_feature_level {m.get('minimum_feature_level')!r}, expected {p.minimum!r}")
    ins = m.get("inputs") or [{}, {}]
    for k, (dt, arr) in enumerate(((p.da, p.a), (p.db, p.b))):
        want_member = None if c.single == k else p.name
        got = ins[k] if k < len(ins) else {}
        if got.get("member") != want_member:
            problems.append(f"{tag}: inputs[{k}].member {got.get('member')!r}, expected {want_member!r}")
        if got.get("shape") != list(arr.shape):
            problems.append(f"{tag}: inputs[{k}].shape {got.get('shape')!r}, expected {list(arr.shape)}")
        if got.get("dtype") != dt:
            problems.append(f"{tag}: inputs[{k}].dtype {got.get('dtype')!r}, expected {dt!r}")
    if want != 0:
        return
    if m.get("elements") != int(p.exp.size):
        problems.append(f"{tag}: elements {m.get('elements')!r}, expected {p.exp.size}")
    want_out = None if c.output == "null" else p.name
    if m.get("output_member") != want_out:
        problems.append(f"{tag}: output_member {m.get('output_member')!r}, expected {want_out!r}")
    if (m.get("dml") is None) != (c.level == "none"):
        problems.append(f"{tag}: dml {str(m.get('dml'))[:80]} at level {c.level}")
    elif m.get("dml") is not None and m["dml"].get("operator") != OPS[c.op]:
        problems.append(f"{tag}: dml.operator {m['dml'].get('operator')!r}, expected {OPS[c.op]}")
    if c.stats:
        why = stats_problem(f"{tag}: stats", m.get("stats"), xc.reference_stats(numeric(p.da, p.exp)))
        if why:
            problems.append(why)


def single_run(exe, c, d, args, a, b, extra, report="r.json"):
    """Runs `tensorop OP a.npy b.npy ARGS` in folder d, where a and b are arrays or a .npy file's
    bytes; returns (exit code, report or None, why)."""
    os.makedirs(d, exist_ok=True)
    for name, x in (("a.npy", a), ("b.npy", b)):
        if isinstance(x, bytes):
            with open(os.path.join(d, name), "wb") as f:
                f.write(x)
        else:
            np.save(os.path.join(d, name), x)
    cmd = [c.op, "a.npy", "b.npy", "-o", "o.npy", "-q", "--report", report] + args + extra
    p = run(exe, cmd, d)
    if p is None:
        return None, None, f"timed out ({' '.join(cmd)})"
    rep, why = load_json(os.path.join(d, report))
    return p.returncode, rep, why


def check_totals_stats(exe, c, tmp, pairs, totals, extra, problems):
    """totals.stats (or stats_by_kind) against one run over the concatenated elements, or the
    reference where the members' dtypes differ."""
    groups = {"float": [p for p in pairs if p.da == BF16 or np.dtype(p.da).kind == "f"],
              "int": [p for p in pairs if p.da != BF16 and np.dtype(p.da).kind != "f"]}
    both = groups["float"] and groups["int"]
    if both:
        if totals.get("stats") is not None:
            problems.append("totals.stats is not null with float and integer members mixed")
        by = totals.get("stats_by_kind")
        if not isinstance(by, dict):
            problems.append(f"totals.stats_by_kind {str(by)[:80]}, expected float and int")
            return
    elif "stats_by_kind" in totals and totals["stats_by_kind"] is not None:
        problems.append("totals.stats_by_kind present with members of one kind")
    for kind, group in groups.items():
        if not group:
            continue
        got = totals["stats_by_kind"].get(kind) if both else totals.get("stats")
        what = f"totals.stats_by_kind.{kind}" if both else "totals.stats"
        exps = [numeric(p.da, p.exp) for p in group]
        why = stats_problem(what + " (reference)", got, xc.reference_stats(*exps))
        if why:
            problems.append(why)
        dtypes = {p.da for p in group}
        if len(dtypes) != 1 or BF16 in dtypes:
            continue
        shape = lambda p: np.broadcast_shapes(p.a.shape, p.b.shape)  # noqa: E731
        a = np.concatenate([np.broadcast_to(p.a, shape(p)).reshape(-1) for p in group])
        b = np.concatenate([np.broadcast_to(p.b, shape(p)).reshape(-1) for p in group])
        args = ["-f", "none", "--stats"] + (["--half-precision"] if c.half else [])
        rc, rep, why = single_run(exe, c, os.path.join(tmp, "concat", kind), args, a, b, extra)
        if rc != 0 or rep is None:
            problems.append(f"the concatenated {kind} run: exit {rc}; {why or ''}")
            continue
        why = stats_problem(what + " vs one run over every element", got, rep.get("stats"))
        if why:
            problems.append(why)


def check_as_npy_pair(exe, c, tmp, p, m, want, extra, problems):
    """Runs pair p as two .npy files (as stored: byte order, Fortran order; the single .npy input
    as it is) and compares what its report says about the pair with the member entry m."""
    args = [] if c.level_arg is None else ["--feature-level", c.level_arg]
    if c.mode == "none":
        args += ["--broadcast", "none"]
    if c.half:
        args.append("--half-precision")
    if c.stats:
        args.append("--stats")
    if c.threads:
        args += ["--threads", c.threads]
    sides = [c.npy_file if c.single == k else x for k, x in enumerate((p.a_stored, p.b_stored))]
    rc, rep, why = single_run(exe, c, os.path.join(tmp, "pair"), args, sides[0], sides[1], extra)
    tag = f"member {p.name!r} run as two .npy files"
    if rc != (0 if p.valid else 3) or rep is None:
        problems.append(f"{tag}: exit {rc}, expected {0 if p.valid else 3}; {why or ''}")
        return
    keys = ["minimum_feature_level", "support_row"]
    if want == 0:
        keys += ["broadcast", "dml", "elements"] + (["stats"] if c.stats else [])
    for k in keys:
        if exact(rep.get(k)) != exact(m.get(k)):
            problems.append(f"{tag}: {k} {exact(rep.get(k))[:120]}, the member's {exact(m.get(k))[:120]}")
    ids = lambda r: [(ch.get("id"), ch.get("status")) for ch in r.get("checks") or []]  # noqa: E731
    if ids(rep) != ids(m):
        problems.append(f"{tag}: checks {ids(rep)}, the member's {ids(m)}")


def read_output(fmt, raw, path, names):
    """The output container's members {name: (dtype, array)}, or a problem; `raw` is its bytes,
    `path` its file (None for standard output)."""
    if fmt == "npz":
        with np.load(io.BytesIO(raw)) as z:
            got = {k: (z[k].dtype.name, z[k]) for k in z.files}
    else:
        try:
            got = read_safetensors_raw(raw)
        except (ValueError, KeyError, UnicodeDecodeError) as e:
            return None, f"output .safetensors malformed: {e}"
        if not any(d == BF16 for d, _ in got.values()):
            loaded = stnp.load_file(path) if path else stnp.load(raw)
            got = {k: (v.dtype.name, v) for k, v in loaded.items()}
    if sorted(got) != sorted(names):
        return None, f"output members {sorted(got)}, expected {sorted(names)}"
    return got, None


def run_case(exe, c, tmp, extra):
    """Runs one case in tmp; returns a list of problems (empty when it passed)."""
    files = [f"a{c.ext[0]}", f"b{c.ext[1]}"]
    inputs = []
    for k in (0, 1):
        path = os.path.join(tmp, files[k])
        if c.formats[k] == "npy":
            c.npy_file = xc.npy_bytes(c.npy, *c.npy_layout)
            with open(path, "wb") as f:
                f.write(c.npy_file)
            inputs.append(np.load(path))
        else:
            write_container(path, c.formats[k], c.members[k], c.layouts[k], c.metadata[k])
            inputs.append(read_container(path, c.formats[k]))
    pairs, only_a, only_b, bad_patterns = predict(c, inputs)
    any_bf16 = any(BF16 in (p.da, p.db) for p in pairs)
    first = next(f for f in c.formats if f != "npy").split("_")[0]
    c.out_format = {"safetensors": "safetensors", "npz": "npz", "null": None}.get(c.output, first)
    if bad_patterns:
        want = 1
    elif any(not p.valid for p in pairs):
        want = 3
    elif (only_a or only_b) and not c.skip:
        want = 5
    elif not pairs or (c.out_format == "npz" and any_bf16):
        want = 1
    else:
        want = 0
    out = {"safetensors": "c.safetensors", "npz": "c.npz", "other": "c.out", "stdout": "-",
           "null": os.devnull}[c.output]
    args = [c.op, files[0], files[1], "-o", out, "--report", "report.json", "-q"]
    if c.level_arg is not None:
        args += ["-f", c.level_arg]
    # Always given: two containers' members broadcast only when --broadcast says so.
    args += ["--broadcast", c.mode]
    if c.half:
        args.append("--half-precision")
    if c.stats:
        args.append("--stats")
    for pat in c.patterns:
        args += ["--member", pat]
    if c.skip:
        args.append("--skip-unpaired")
    if c.threads:
        args += ["--threads", c.threads]
    args += extra
    c.cmdline = " ".join(shlex.quote(x) for x in args)
    proc = run(exe, args, tmp)
    if proc is None:
        return [f"timed out after {TIMEOUT} s"]
    problems = []
    err = proc.stderr.decode(errors="replace").strip()
    if proc.returncode != want:
        problems.append(f"exit {proc.returncode}, expected {want}; stderr: {err[:300]}")
        return problems
    to_file = c.output not in ("null", "stdout")
    written = set(files) | {"report.json"} | ({out} if want == 0 and to_file else set())
    leftovers = set(os.listdir(tmp)) - written
    missing = written - set(os.listdir(tmp)) - ({"report.json"} if want == 1 else set())
    if leftovers:
        problems.append(f"files left that should not be: {sorted(leftovers)}")
    if missing:
        problems.append(f"files missing: {sorted(missing)}")
    if want != 0 and proc.stdout:
        problems.append(f"{len(proc.stdout)} bytes on standard output on exit {want}")
    if want == 1:
        if not err:
            problems.append("exit 1 without a message on stderr")
        return problems
    if want == 0 and err:
        problems.append(f"stderr not empty with -q: {err[:200]}")
    elif want != 0 and not err:
        problems.append(f"exit {want} without a message on stderr")
    rep, why = load_json(os.path.join(tmp, "report.json"))
    if rep is None:
        return problems + [f"no readable report: {why}"]
    # The report.
    want_status = {0: "ok", 3: "invalid", 5: "unpaired"}[want]
    if rep.get("status") != want_status or rep.get("valid") is not (want == 0):
        problems.append(f"report status {rep.get('status')!r} valid {rep.get('valid')!r}, expected {want_status}")
    for k, fmt in enumerate(c.formats):
        got = (rep.get("inputs") or [{}, {}])[k]
        want_fmt = fmt.split("_")[0]
        want_n = 1 if fmt == "npy" else len(inputs[k])
        if got.get("format") != want_fmt or got.get("members") != want_n:
            problems.append(f"report inputs[{k}] {got}, expected format {want_fmt} with {want_n} members")
    entries = rep.get("members") or []
    by_name = {m.get("name"): m for m in entries}
    if sorted(by_name) != sorted(p.name for p in pairs) or len(entries) != len(pairs):
        problems.append(f"report members {[m.get('name') for m in entries]}, expected {[p.name for p in pairs]}")
        return problems
    for pr in pairs:
        check_member_entry(c, by_name[pr.name], pr, want, problems)
    un = rep.get("unpaired") or {}
    if sorted(un.get("only_in_a") or []) != sorted(only_a) or sorted(un.get("only_in_b") or []) != sorted(only_b):
        problems.append(f"report unpaired {un}, expected only_in_a {only_a}, only_in_b {only_b}")
    if un.get("skipped") is not c.skip:
        problems.append(f"report unpaired.skipped {un.get('skipped')!r}, expected {c.skip}")
    totals = rep.get("totals") or {}
    want_totals = {
        "pairs": len(pairs), "ok": sum(p.valid for p in pairs), "invalid": sum(not p.valid for p in pairs),
        "unpaired": len(only_a) + len(only_b), "minimum_feature_level": newest([p.minimum for p in pairs]),
    }
    if want == 0:
        want_totals["elements"] = sum(int(p.exp.size) for p in pairs)
    for k, v in want_totals.items():
        if totals.get(k) != v:
            problems.append(f"totals.{k} {totals.get(k)!r}, expected {v!r}")
    # A pair as two .npy files.
    plain = [pr for pr in pairs if BF16 not in (pr.da, pr.db)]
    if plain:
        pr = plain[int(c.pick * len(plain))]
        check_as_npy_pair(exe, c, tmp, pr, by_name[pr.name], want, extra, problems)
    if want != 0:
        return problems
    # The results.
    if c.out_format:
        path = os.path.join(tmp, out) if to_file else None
        raw = proc.stdout
        if path:
            with open(path, "rb") as f:
                raw = f.read()
        got, why = read_output(c.out_format, raw, path, [p.name for p in pairs])
        if why:
            problems.append(why)
        else:
            for pr in pairs:
                dt, arr = got[pr.name]
                if dt != pr.da:
                    problems.append(f"member {pr.name!r}: output dtype {dt}, expected {pr.da}")
                    continue
                why = same_values(pr.da, arr, pr.exp)
                if why:
                    problems.append(f"member {pr.name!r}: {why}")
        o = rep.get("output") or {}
        if o.get("format") != c.out_format or o.get("members") != len(pairs):
            problems.append(f"report output {str(o)[:120]}, expected format {c.out_format} with {len(pairs)} "
                            "members")
    elif rep.get("output") is not None or rep.get("bytes_written") != 0:
        problems.append(f"report output {rep.get('output')!r}, bytes_written {rep.get('bytes_written')!r} for "
                        "/dev/null")
    if c.stats:
        refs = [xc.reference_stats(numeric(p.da, p.exp)) for p in pairs]
        # Two containers' members differ when their bits do (a NaN equals only the same NaN,
        # +0 and -0 differ), or their shapes; a .npy against a container, when the result is not
        # all zeros.
        def pair_differs(p, r):
            if c.single is not None:
                return r["histogram"]["zero"] != r["count"]
            return p.a.shape != p.b.shape or p.a.dtype != p.b.dtype or p.a.tobytes() != p.b.tobytes()
        differing = sum(pair_differs(p, r) for p, r in zip(pairs, refs))
        if totals.get("differing") != differing:
            problems.append(f"totals.differing {totals.get('differing')!r}, expected {differing}")
        check_totals_stats(exe, c, tmp, pairs, totals, extra, problems)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exe")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=120)
    ap.add_argument("--only", type=int, help="run only case I")
    ap.add_argument("--keep", help="copy failing cases' files into this directory")
    ap.add_argument("--extra", default="", help="arguments appended to every command line")
    ap.add_argument("--no-bf16", dest="bf16", action="store_false",
                    help="leave out bfloat16 members (.safetensors BF16)")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    if stnp is None:
        print("the safetensors Python package is needed (pip install safetensors)", file=sys.stderr)
        return 2
    exe = os.path.abspath(opts.exe)
    extra = shlex.split(opts.extra)
    passed, failed = 0, []
    indices = [opts.only] if opts.only is not None else range(opts.cases)
    for i in indices:
        c = gen_case(opts.seed, i, opts.bf16)
        with tempfile.TemporaryDirectory(prefix="tensorop-xcc-") as tmp:
            try:
                problems = run_case(exe, c, tmp, extra)
            except Exception as e:  # noqa: BLE001 - report, keep going
                problems = [f"checker error: {e.__class__.__name__}: {e}"]
            if problems and opts.keep:
                shutil.copytree(tmp, os.path.join(opts.keep, f"case{i}"), dirs_exist_ok=True)
        label = f"case {i} ({describe(c)}) [tensorop {getattr(c, 'cmdline', '')}]"
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
