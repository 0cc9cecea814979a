#!/usr/bin/env python3
"""Cross-check of what any conformant DirectML may give, against a NumPy model of the rules.

usage: python3 tests/crosscheck_conformant.py TENSOROP [--seed N] [--cases N]

For random float16 pairs rich in ties, overflow, subnormals and NaN payloads, the model computes
each element under the four float16 rules in float32 with NumPy (nearest: rounded once; per-step:
sqdiff's difference rounded first; toward-zero-inf and toward-zero-saturate: truncated, beyond
65504 to infinity or to 65504), and from them the device-dependence counts: elements where the
rules differ, elements with a subnormal input or result, elements whose result is a NaN. It runs
`tensorop OP a b --device-dependence` and compares the report's counts; then it writes each
rule's result and checks that `tensorop compare --conformant` accepts it, and that a result one
ULP away from every allowed value of one element is refused (exit 4). Exits 1 on the first
disagreement, naming the case.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.simplefilter("ignore")

EDGES = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x3C02, 0x7BFF, 0xFBFF,
         0x7C00, 0xFC00, 0x7E00, 0x7E01, 0xFE00, 0x7D01, 0x1000, 0x5CB0, 0x0E00, 0x3C17]


def truncate(r32):
    """float32 values -> float16 bits toward zero (finite values beyond 65504 -> 0x7bff, sign)."""
    near = r32.astype(np.float16)
    bits = near.view(np.uint16).copy()
    away = np.abs(near.astype(np.float32)) > np.abs(r32)
    step = away & np.isfinite(near) & (bits & 0x7FFF != 0)
    bits[step] -= 1  # one float16 step toward zero (magnitude bits down by one)
    over = np.isfinite(r32) & (np.abs(r32) > 65504)
    bits[over] = np.where(r32[over] < 0, 0xFBFF, 0x7BFF)
    return bits


def rules(op, a, b):
    """The four rules' float16 bits for float16 arrays a, b: nearest, per-step, tz-inf, tz-sat."""
    x, y = a.astype(np.float32), b.astype(np.float32)
    d = x - y
    r = d * d if op == "sqdiff" else d
    nearest = r.astype(np.float16).view(np.uint16)
    if op == "sqdiff":
        h = d.astype(np.float16).astype(np.float32)
        per_step = (h * h).astype(np.float16).view(np.uint16)
    else:
        per_step = nearest.copy()
    sat = truncate(r)
    inf = sat.copy()
    over = np.isfinite(r) & (np.abs(r) > 65504)
    inf[over] = np.where(r[over] < 0, 0xFC00, 0x7C00)
    nan = np.isnan(r)
    for t in (sat, inf):
        t[nan] = nearest[nan]
    return [nearest, per_step, inf, sat]


def subnormal(bits):
    return (bits & 0x7C00 == 0) & (bits & 0x03FF != 0)


def is_nan(bits):
    return (bits & 0x7C00 == 0x7C00) & (bits & 0x03FF != 0)


def model(op, a, b):
    rs = rules(op, a, b)
    differ = np.zeros(a.shape, bool)
    for r in rs[1:]:
        differ |= r != rs[0]
    sub = subnormal(a.view(np.uint16)) | subnormal(b.view(np.uint16))
    for r in rs:
        sub |= subnormal(r)
    nan = np.zeros(a.shape, bool)
    for r in rs:
        nan |= is_nan(r)
    return {"elements": a.size, "float16_rule": int(differ.sum()), "subnormal": int(sub.sum()),
            "nan": int(nan.sum()), "any": int((differ | sub | nan).sum())}, rs


def run(args, cwd):
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tensorop")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--cases", type=int, default=40)
    args = p.parse_args()
    exe = os.path.abspath(args.tensorop)
    rng = np.random.default_rng(args.seed)
    refused = counted_rules = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(args.cases):
            op = ("sub", "sqdiff")[case % 2]
            n = int(rng.integers(1, 200))
            pick = lambda: np.array([EDGES[i] for i in rng.integers(0, len(EDGES), n)], np.uint16)  # noqa: E731
            raw = lambda: rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)  # noqa: E731
            a = np.where(rng.random(n) < 0.5, pick(), raw()).astype(np.uint16).view(np.float16)
            b = np.where(rng.random(n) < 0.5, pick(), raw()).astype(np.uint16).view(np.float16)
            np.save(os.path.join(tmp, "a.npy"), a)
            np.save(os.path.join(tmp, "b.npy"), b)
            label = f"case {case}: {op}, {n} elements"
            out = run([exe, op, "a.npy", "b.npy", "--dry-run", "--device-dependence", "--report", "r.json", "-q"], tmp)
            if out.returncode != 0:
                sys.exit(f"{label}: exit {out.returncode}: {out.stderr}")
            with open(os.path.join(tmp, "r.json")) as f:
                got = json.load(f)["device_dependence"]
            want, rs = model(op, a, b)
            if got != want:
                sys.exit(f"{label}: tensorop counts {got}, the NumPy model {want}\n  a={a.view(np.uint16)}\n  b={b.view(np.uint16)}")
            # Every rule's result is conformant.
            for name, r in zip(("nearest", "per-step", "toward-zero-inf", "toward-zero-saturate"), rs):
                np.save(os.path.join(tmp, "got.npy"), r.view(np.float16))
                c = run([exe, "compare", "got.npy", "--conformant", op, "a.npy", "b.npy"], tmp)
                if c.returncode != 0:
                    sys.exit(f"{label}: the {name} result is refused (exit {c.returncode}): {c.stdout}{c.stderr}")
            # One element moved one step from every value any rule gives: refused (an element
            # without a NaN or subnormal, whose allowed values are the rules' alone).
            k = int(rng.integers(0, n))
            choice = None
            allowed = {int(r[k]) for r in rs}
            plain = [int(a.view(np.uint16)[k]), int(b.view(np.uint16)[k])] + sorted(allowed)
            if not any(is_nan(np.array([v], np.uint16))[0] or subnormal(np.array([v], np.uint16))[0] for v in plain):
                bad = rs[0].copy()
                cand = [(v + 1) & 0xFFFF for v in allowed] + [(v - 1) & 0xFFFF for v in allowed]
                choice = next((c for c in cand if c not in allowed and not is_nan(np.array([c], np.uint16))[0]), None)
                if choice is not None:
                    bad[k] = choice
                    np.save(os.path.join(tmp, "got.npy"), bad.view(np.float16))
                    c = run([exe, "compare", "got.npy", "--conformant", op, "a.npy", "b.npy", "--json"], tmp)
                    if c.returncode != 4 or json.loads(c.stdout)["outside_tolerance"] != 1:
                        sys.exit(f"{label}: element {k} set to {choice:#06x} (allowed {sorted(allowed)}) was not "
                                 f"refused: exit {c.returncode} {c.stdout[:400]}")
            refused += choice is not None and not any(
                is_nan(np.array([v], np.uint16))[0] or subnormal(np.array([v], np.uint16))[0] for v in plain)
            counted_rules += want["float16_rule"]
    if refused == 0 or counted_rules == 0:
        sys.exit(f"the cases exercised too little: {refused} refusals, {counted_rules} rule-dependent elements")
    print(f"conformance cross-check: {args.cases} passed, 0 failed ({refused} one-step changes refused, "
          f"{counted_rules} rule-dependent elements counted)")


if __name__ == "__main__":
    main()
