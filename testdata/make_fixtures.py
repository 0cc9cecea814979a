#!/usr/bin/env python3
"""Regenerates the fixtures in testdata/ deterministically.

usage: python3 testdata/make_fixtures.py [OUTDIR]     (default: the directory of this script)

The .npy files are serialised by the small writer below, not by np.save, so the bytes do not
depend on the NumPy version; NumPy is used only for the arithmetic. Expected outputs follow the
contract (cli-contract.md, "Arithmetic"): little-endian, C order, .npy version 1.0. See README.md
for what each file shows.
"""
import os
import sys

import numpy as np


def npy_bytes(arr, byte_order="<", fortran=False, version=(1, 0)):
    dt = arr.dtype
    if dt.itemsize == 1:
        descr, storage = "|" + dt.kind + "1", dt
    else:
        descr = byte_order + dt.kind + str(dt.itemsize)
        storage = dt.newbyteorder(byte_order)
    data = np.ascontiguousarray(arr).astype(storage).tobytes(order="F" if fortran else "C")
    return raw_npy("{'descr': %r, 'fortran_order': %s, 'shape': %r, }"
                   % (descr, fortran, tuple(arr.shape)), data, version)


def raw_npy(header, data, version=(1, 0)):
    length_bytes = 2 if version[0] == 1 else 4
    total = 6 + 2 + length_bytes + len(header) + 1
    header += " " * ((-total) % 64) + "\n"
    enc = header.encode("latin1")
    return b"\x93NUMPY" + bytes(version) + len(enc).to_bytes(length_bytes, "little") + enc + data


def f16(bits):
    return np.array(bits, dtype=np.uint16).view(np.float16)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    files = {}

    # float32 pair: A [2,3,4], B [3,1] broadcast to [2,3,4].
    a = (np.arange(24, dtype=np.float32) * np.float32(0.75) - np.float32(5)).reshape(2, 3, 4)
    b = np.array([[0.5], [-1.25], [3.0]], dtype=np.float32)
    d = a - b
    files["a.npy"] = npy_bytes(a)
    files["b.npy"] = npy_bytes(b)
    files["expected_sub.npy"] = npy_bytes(d)
    files["expected_sqdiff.npy"] = npy_bytes(d * d)
    # The same A stored big-endian, and in Fortran order (npy 2.0): same result as a.npy.
    files["a_big_endian.npy"] = npy_bytes(a, byte_order=">")
    files["a_fortran.npy"] = npy_bytes(a, fortran=True, version=(2, 0))

    # float16: values where rounding the difference first (--half-precision) changes sqdiff,
    # a subnormal result and an overflow.
    ha = f16([0x3C01, 0x3C02, 0x1400, 0x7BFF])
    hb = f16([0x1000, 0x1000, 0x0000, 0xFBFF])
    with np.errstate(over="ignore"):
        hd = ha.astype(np.float32) - hb.astype(np.float32)
        hh = hd.astype(np.float16).astype(np.float32)
        files["f16_a.npy"] = npy_bytes(ha)
        files["f16_b.npy"] = npy_bytes(hb)
        files["expected_f16_sub.npy"] = npy_bytes(hd.astype(np.float16))
        files["expected_f16_sqdiff.npy"] = npy_bytes((hd * hd).astype(np.float16))
        files["expected_f16_sqdiff_half.npy"] = npy_bytes((hh * hh).astype(np.float16))

    # int8 two's-complement wrap.
    ia = np.array([127, -128, 0, 100], dtype=np.int8)
    ib = np.array([-1, 1, -128, -100], dtype=np.int8)
    files["i8_a.npy"] = npy_bytes(ia)
    files["i8_b.npy"] = npy_bytes(ib)
    files["expected_i8_sub.npy"] = npy_bytes((ia.view(np.uint8) - ib.view(np.uint8)).view(np.int8))

    # Malformed: the header says float32 (2, 3) = 24 bytes, the file holds 20.
    files["malformed_truncated.npy"] = raw_npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", bytes(range(20)))

    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {out}")


if __name__ == "__main__":
    main()
