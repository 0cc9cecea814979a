#!/usr/bin/env python3
"""Writes the committed seed corpus (fuzz/corpus/<target>/seed-*) byte for byte.

npy_reader seeds are whole .npy files: every header version, several dtypes, both byte orders,
C and Fortran order, a scalar, an empty array, a record dtype, and malformed files (bad magic,
truncated data, negative and overflowing shapes, trailing bytes, a header length past the end).

whole_run seeds are `settings byte | A length (2 bytes, big-endian) | A | B`, where the settings
bits pick the run (see fuzz_targets/whole_run.rs): bit 0 sqdiff, bits 1-2 feature level
(1_0, 3_1, 6_4, none), bit 3 --broadcast none, bit 4 --half-precision, bit 5 two threads, bit 6
input B from a pipe.

Usage: python3 fuzz/make_seeds.py   (needs numpy)
"""

import io
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(arr, version=(1, 0)):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=version, allow_pickle=False)
    return buf.getvalue()


def raw(dict_text, data=b"", version=1):
    """A .npy file with a hand-written header dict (for headers NumPy would not write)."""
    text = dict_text.encode("latin1")
    pre = 10 if version == 1 else 12
    pad = (64 - (pre + len(text) + 1) % 64) % 64
    text += b" " * pad + b"\n"
    length = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text + data


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# Finding 1 (whole_run, timeout), as the fuzzer wrote it: input A's header is `{'descr':` and 84
# unclosed `[`; the old header parser backtracked exponentially on nested brackets.
NESTED_BRACKETS_RUN = (
    b"\x01\x00\x81\x93NUMPY\x01\x00v\x00{'descr':" + b" " * 25 + b"[" * 95 + b" " * 17 + b"\n"
    b"\x03\x93NUMP\xa7\xfe\xff\x89\xff\x84\x9b\x9a'scr': '|u4', 'fortran_order': False, 'shape': (3,),"
    + b" " * 54 + b"\x05\xff"
)


def reader_seeds():
    f4 = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    yield "f4_c.npy", npy(f4)
    yield "u4_1d.npy", npy(np.array([0, 1, 2**31, 2**32 - 1, 7], dtype="<u4"))
    yield "i8_v2.npy", npy(np.array([[-1, 2], [3, -4], [2**62, -(2**63)]], dtype="<i8"), (2, 0))
    yield "u1_v3_scalar.npy", npy(np.array(200, dtype="|u1"), (3, 0))
    yield "f2_be_fortran.npy", npy(np.asfortranarray(np.linspace(-2, 2, 12, dtype=">f2").reshape(3, 4)))
    yield "f8_be_3d_fortran.npy", npy(np.asfortranarray(np.arange(12, dtype=">f8").reshape(2, 3, 2)))
    yield "i2_empty.npy", npy(np.zeros((0, 5), dtype="<i2"))
    yield "i1_be_v3.npy", npy(np.array([-128, 0, 127], dtype="|i1"), (3, 0))
    yield "u2_be_4d_fortran.npy", npy(np.asfortranarray(np.arange(24, dtype=">u2").reshape(2, 3, 1, 4)), (2, 0))
    yield "rec.npy", npy(np.zeros(2, dtype=[("x", "<f4"), ("y", "<i2")]))
    yield "bool.npy", npy(np.array([True, False]))
    good = npy(f4)
    yield "bad_magic.npy", good[:5] + b"Z" + good[6:]
    yield "truncated.npy", good[:-3]
    yield "trailing.npy", good + b"\x00"
    yield "long_header_len.npy", good[:8] + struct.pack("<H", 0xFFFF) + good[10:]
    yield "neg_shape.npy", raw("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", bytes(24))
    yield "huge_shape.npy", raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }")
    yield "native_order.npy", raw("{'descr': '=i4', 'fortran_order': True, 'shape': (2, 2), }", bytes(16))
    yield "regress_nested_brackets.npy", NESTED_BRACKETS_RUN[3:3 + 129]


def run_seed(settings, a, b):
    return bytes([settings]) + struct.pack(">H", len(a)) + a + b


def run_seeds():
    a = np.arange(24, dtype="<f4").reshape(2, 3, 4) - 5
    b = np.array([[0.5], [-1.0], [2.0]], dtype="<f4")
    yield "sub_bcast", run_seed(0b0000_0000, npy(a), npy(b))
    yield "sqdiff_31_f16", run_seed(0b0000_0011, npy(np.arange(4, dtype="<f2")), npy(np.ones(4, ">f2")))
    yield "sqdiff_half", run_seed(0b0001_0111, npy(np.full(3, 300, "<f2")), npy(np.zeros(3, "<f2")))
    yield "i8_none", run_seed(0b0000_0110, npy(np.array([2**62, -7], "<i8")), npy(np.array([-(2**63), 9], ">i8"), (2, 0)))
    yield "u1_scalar", run_seed(0b0000_0001, npy(np.array(3, "|u1")), npy(np.array([1, 5, 255], "|u1")))
    yield "dtype_mix", run_seed(0b0000_0000, npy(np.ones(2, "<f4")), npy(np.ones(2, "<i4")))
    yield "mismatch", run_seed(0b0000_1000, npy(np.ones((2, 3), "<i2")), npy(np.ones((3, 2), "<i2")))
    fa = np.asfortranarray(np.arange(12, dtype=">i4").reshape(3, 4))
    yield "fortran_2threads", run_seed(0b0010_0101, npy(fa), npy(np.arange(4, dtype="<i4"), (3, 0)))
    yield "pipe_b", run_seed(0b0100_0110, npy(np.arange(6, dtype="<u2")), npy(np.arange(6, dtype=">u2")))
    yield "rank7", run_seed(0b0000_0100, npy(np.ones((1,) * 7, "<f4")), npy(np.ones(1, "<f4")))
    yield "regress_nested_brackets", NESTED_BRACKETS_RUN


def main():
    for name, data in reader_seeds():
        write("npy_reader", name, data)
    for name, data in run_seeds():
        write("whole_run", name, data)


if __name__ == "__main__":
    main()
