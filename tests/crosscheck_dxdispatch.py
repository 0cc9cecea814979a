#!/usr/bin/env python3
"""Cross-check of `tensorop run` against a NumPy reading of DxDispatch's semantics (docs/dxdispatch.md).

Random models: every dtype, ranks 1 to 4, tensor descs packed, broadcast (stride 0) or with any
other non-negative strides, element offsets, transposed or padded outputs (elements the output
desc does not address keep their values), outputs bound in place to an input's resource, a second
dispatch reading the first one's output, and initial values from arrays, constants, `.npy` and raw
files. Each model is run by tensorop at `--feature-level none` and emulated here on flat NumPy
buffers with the contract's arithmetic (`crosscheck.expected`); every file the model writes must
match bit for bit.

usage: crosscheck_dxdispatch.py TENSOROP [--seed N] [--cases N] [--extra "ARGS"]
prints failures, closes with 'N passed, N failed'."""
import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crosscheck import expected  # noqa: E402  (the contract's arithmetic, shared)

DTYPES = {
    "FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
}


def packed(sizes):
    return [int(np.prod(sizes[k + 1:])) for k in range(len(sizes))]


def addresses(sizes, strides, offset):
    """Element offsets of every element of a desc, in C order."""
    strides = packed(sizes) if strides is None else strides
    return np.array([offset + sum(i * s for i, s in zip(idx, strides))
                     for idx in itertools.product(*[range(n) for n in sizes])], dtype=np.int64)


def values(rng, dt, n):
    """Values exactly representable in `dt` (so JSON, float16 truncation and all agree)."""
    if np.dtype(dt).kind == "f":
        v = rng.integers(-64, 64, size=n) / 4.0
        return v.astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=n, dtype=np.int64 if info.min < 0 else np.uint64,
                        endpoint=True).astype(dt)


def input_desc(rng, sizes):
    """Strides for an input: packed (None), broadcast, or arbitrary."""
    kind = rng.choice(["packed", "broadcast", "any"])
    if kind == "packed":
        return None
    if kind == "broadcast":
        p = packed([1 if rng.random() < 0.5 else n for n in sizes])
        return [0 if rng.random() < 0.5 else s for s in p]
    return [int(rng.integers(0, 7)) for _ in sizes]


def output_strides(rng, sizes):
    """Strides that address every output element once: a padded shape in a random order."""
    if rng.random() < 0.4:
        return None
    padded = [n + int(rng.integers(0, 2)) for n in sizes]
    order = list(rng.permutation(len(sizes)))
    strides = [0] * len(sizes)
    step = 1
    for k in reversed(order):
        strides[k] = step
        step *= padded[k]
    return strides


def span(sizes, strides, offset, es):
    """Elements a resource needs so that, from `offset`, it holds the desc's
    TotalTensorSizeInBytes (the addressed bytes rounded up to 4), as DirectML's bindings must."""
    addressed = (int(addresses(sizes, strides, 0).max()) + 1) * es
    return offset + -(-((addressed + 3) // 4 * 4) // es)


class Case:
    pass


def gen_case(seed, i, tmp):
    rng = np.random.default_rng([seed, i])
    c = Case()
    name = rng.choice(list(DTYPES))
    dt = DTYPES[name]
    es = np.dtype(dt).itemsize
    rank = int(rng.integers(1, 5))
    sizes = [int(rng.integers(1, 5)) for _ in range(rank)]
    op = rng.choice(["ELEMENT_WISE_SUBTRACT", "ELEMENT_WISE_DIFFERENCE_SQUARE"])
    sa, sb, so = input_desc(rng, sizes), input_desc(rng, sizes), output_strides(rng, sizes)
    offa, offb = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    in_place = sa is None and offa == 0 and so is None and rng.random() < 0.3
    bufs, resources = {}, {}

    def resource(rname, n):
        n = max(n, 1)
        vals = values(rng, dt, n)
        kind = rng.choice(["array", "npy", "raw", "constant"])
        if kind == "constant":
            vals = np.full(n, vals[0], dtype=dt)
            init = {"valueCount": n, "value": vals[0].item()}
            res = {"initialValuesDataType": name, "initialValues": init}
        elif kind == "array":
            res = {"initialValuesDataType": name, "initialValues": [v.item() for v in vals]}
        elif kind == "npy":
            np.save(os.path.join(tmp, f"{rname}.npy"), vals)
            res = {"initialValues": {"sourcePath": f"{rname}.npy"}}
        else:
            vals.astype(np.dtype(dt).newbyteorder("<")).tofile(os.path.join(tmp, f"{rname}.bin"))
            res = {"initialValuesDataType": name, "initialValues": {"sourcePath": f"{rname}.bin"}}
        size = (n * es + 3) // 4 * 4
        buf = np.zeros(size // es + (1 if size % es else 0), dtype=dt)
        buf[:n] = vals
        resources[rname] = res
        bufs[rname] = buf

    resource("A", span(sizes, sa, offa, es))
    resource("B", span(sizes, sb, offb, es))
    out_name = "A" if in_place else "Out"
    if not in_place:
        resource("Out", span(sizes, so, 0, es))
    desc = lambda st: {k: v for k, v in (("DataType", name), ("Sizes", sizes), ("Strides", st)) if v is not None}
    dispatchables = {"d": {"type": op, "desc": {"ATensor": desc(sa), "BTensor": desc(sb), "OutputTensor": desc(so)}}}
    bind = lambda r, off: {"name": r, "elementOffset": off} if off else r
    commands = [{"type": "dispatch", "dispatchable": "d",
                 "bindings": {"ATensor": bind("A", offa), "BTensor": bind("B", offb), "OutputTensor": out_name}}]
    plan = [("d", op, ("A", sa, offa), ("B", sb, offb), (out_name, so, 0))]
    if rng.random() < 0.3:
        # A second dispatch reads the first one's output through its desc.
        resource("Out2", span(sizes, None, 0, es))
        dispatchables["e"] = {"type": "DML_OPERATOR_" + op,
                              "desc": {"ATensor": desc(so), "BTensor": desc(sb), "OutputTensor": desc(None)}}
        commands.append({"type": "dispatch", "dispatchable": "e",
                         "bindings": {"ATensor": out_name, "BTensor": bind("B", offb), "OutputTensor": "Out2"}})
        plan.append(("e", op, (out_name, so, 0), ("B", sb, offb), ("Out2", None, 0)))
    for r in sorted(set(p[4][0] for p in plan)):
        commands.append({"type": "writeFile", "targetPath": f"w_{r}.bin", "resource": r})
    commands.append({"type": "writeFile", "targetPath": "w.npy", "resource": plan[0][4][0],
                     "dimensions": [len(bufs[plan[0][4][0]])]})
    c.model = {"resources": resources, "dispatchables": dispatchables, "commands": commands}
    c.bufs, c.plan, c.sizes, c.dtype = bufs, plan, sizes, dt
    c.what = f"{name} {op} sizes {sizes} strides A {sa}+{offa} B {sb}+{offb} out {so}{' in place' if in_place else ''}" \
             f"{', two dispatches' if len(plan) > 1 else ''}"
    return c


def emulate(c):
    bufs = {k: v.copy() for k, v in c.bufs.items()}
    for _, op, (ra, sa, oa), (rb, sb, ob), (ro, so, oo) in c.plan:
        a = bufs[ra][addresses(c.sizes, sa, oa)]
        b = bufs[rb][addresses(c.sizes, sb, ob)]
        r = expected("sub" if op.endswith("SUBTRACT") else "sqdiff", a, b, False)
        bufs[ro][addresses(c.sizes, so, oo)] = r
    return bufs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--extra", default="")
    args = ap.parse_args()
    exe = os.path.abspath(args.exe)
    passed, failed = 0, []
    for i in range(args.cases):
        with tempfile.TemporaryDirectory() as tmp:
            c = gen_case(args.seed, i, tmp)
            with open(os.path.join(tmp, "model.json"), "w") as f:
                json.dump(c.model, f)
            p = subprocess.run([exe, "run", "model.json", "-f", "none", *shlex.split(args.extra)],
                               cwd=tmp, capture_output=True, timeout=120)
            if p.returncode != 0:
                failed.append((i, c.what, f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:300]}"))
                continue
            want = emulate(c)
            problems = []
            for r in sorted(set(p[4][0] for p in c.plan)):
                size = (len(c.bufs[r]) * np.dtype(c.dtype).itemsize + 3) // 4 * 4
                expect = want[r].astype(np.dtype(c.dtype).newbyteorder("<")).tobytes()
                expect = (expect + b"\0" * size)[:size]
                got = open(os.path.join(tmp, f"w_{r}.bin"), "rb").read()
                if got != expect:
                    problems.append(f"{r}: got {np.frombuffer(got[:len(expect)], dtype=c.dtype)[:8]} "
                                    f"want {want[r][:8]}")
            first = c.plan[0][4][0]
            npy = np.load(os.path.join(tmp, "w.npy"))
            if npy.dtype != np.dtype(c.dtype) or npy.tobytes() != want[first].tobytes():
                problems.append("w.npy differs")
            if problems:
                failed.append((i, c.what, "; ".join(problems)))
            else:
                passed += 1
    for i, what, why in failed:
        print(f"FAIL case {i} ({what}): {why}")
    print(f"{passed} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
