#!/usr/bin/env python3
"""Writes the committed seed corpus (fuzz/corpus/<target>/seed-*) byte for byte.

npy_reader seeds are whole .npy files: every header version, several dtypes, both byte orders,
C and Fortran order, a scalar, an empty array, a record dtype, and malformed files (bad magic,
truncated data, negative and overflowing shapes, trailing bytes, a header length past the end).

whole_run seeds are `settings byte | A length (2 bytes, big-endian) | A | B`, where the settings
bits pick the run (see fuzz_targets/whole_run.rs): bit 0 sqdiff, bits 1-2 feature level
(1_0, 3_1, 6_4, none), bit 3 --broadcast none, bit 4 --half-precision, bit 5 two threads, bit 6
input B from a pipe.

container_reader seeds are whole .npz and .safetensors files: archives np.savez (stored) and
np.savez_compressed (deflated) write, with several dtypes, an empty archive, zip64 and streamed
(data descriptor) entries; files the safetensors package writes, and hand-made ones
(`__metadata__`, zero-size and scalar tensors, BOOL, F8, BF16); and malformed ones (a CRC
mismatch, a `..` name, a member that is not .npy, duplicate names, truncations, a header
length past the end, offsets with a gap, trailing bytes).

Usage: python3 fuzz/make_seeds.py   (needs numpy and safetensors)
"""

import io
import json
import os
import struct
import warnings
import zipfile
import zlib

import numpy as np
from safetensors.numpy import save as st_save

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


def npz(arrays, compressed=False):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


class Unseekable(io.RawIOBase):
    """A write-only stream zipfile cannot seek in: it writes sizes and CRCs in data descriptors."""

    def __init__(self):
        self.buf = io.BytesIO()

    def writable(self):
        return True

    def write(self, b):
        return self.buf.write(b)


def zip_of(members, compression=zipfile.ZIP_STORED, force_zip64=False, stream=False):
    """A zip of (name, bytes) members, written by zipfile (names kept as given)."""
    out = Unseekable() if stream else io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as z:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = compression
            with z.open(info, "w", force_zip64=force_zip64) as f:
                f.write(data)
    return (out.buf if stream else out).getvalue()


def zip64_full(members):
    """A stored zip in which every size and offset is in zip64 extra fields, with a zip64 end of
    central directory record and locator (as a writer of archives past 4 GiB lays one out)."""
    import zlib

    out, central = b"", b""
    for name, data in members:
        crc, offset, n = zlib.crc32(data), len(out), len(data)
        fixed = struct.pack("<HHHHHIII", 45, 0, 0, 0, 0x5C21, crc, 0xFFFFFFFF, 0xFFFFFFFF)
        extra = struct.pack("<HHQQ", 1, 16, n, n)
        out += b"PK\x03\x04" + fixed + struct.pack("<HH", len(name), len(extra)) + name.encode() + extra + data
        extra = struct.pack("<HHQQQ", 1, 24, n, n, offset)
        central += (
            b"PK\x01\x02" + struct.pack("<H", 45) + fixed + struct.pack("<HHHHHII", len(name), len(extra), 0, 0, 0, 0, 0xFFFFFFFF)
            + name.encode() + extra
        )
    cd_at, count = len(out), len(members)
    out += central
    eocd64_at = len(out)
    out += b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, count, count, len(central), cd_at)
    out += b"PK\x06\x07" + struct.pack("<IQI", 0, eocd64_at, 1)
    out += b"PK\x05\x06" + struct.pack("<HHHHIIH", 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return out


def patch_crcs(archive, crc):
    """`archive` with every local and central header's CRC-32 replaced by `crc`."""
    b = bytearray(archive)
    for sig, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        i = b.find(sig)
        while i >= 0:
            b[i + at:i + at + 4] = struct.pack("<I", crc)
            i = b.find(sig, i + 4)
    return bytes(b)


def st_raw(header, data=b""):
    """A .safetensors file with the JSON header `header` (a dict, or text as given), then `data`."""
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def st(tensors, metadata=None):
    """A .safetensors file of (name, dtype, shape, data bytes), laid out in order."""
    header, at = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(data)]}
        at += len(data)
    return st_raw(header, b"".join(t[3] for t in tensors))


def container_seeds():
    f4 = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    i8 = np.array([-1, 2**62, -(2**63)], dtype="<i8")
    yield "stored.npz", npz({"a": f4, "b": i8, "c": np.array(7, dtype="|u1")})
    yield "deflated.npz", npz(
        {
            "w": np.linspace(-2, 2, 12, dtype="<f2").reshape(3, 4),
            "be": np.arange(5, dtype=">u4"),
            "f": np.asfortranarray(np.arange(6, dtype="<i2").reshape(2, 3)),
            "mask": np.array([True, False, True]),
        },
        compressed=True,
    )
    yield "mixed_dtypes.npz", npz(
        {"f8": np.array([0.5, -1.0]), "rec": np.zeros(2, dtype=[("x", "<f4"), ("y", "<i2")]), "c8": np.ones(2, "<c8"), "empty": np.zeros((0, 3), "<f4")}
    )
    yield "empty.npz", npz({})
    member = npy(np.arange(4, dtype="<u2"))
    yield "zip64_local.npz", zip_of([("z.npy", member)], force_zip64=True)
    yield "zip64.npz", zip64_full([("z.npy", member), ("y.npy", npy(i8))])
    yield "streamed_deflated.npz", zip_of([("s.npy", member), ("t.npy", npy(f4))], zipfile.ZIP_DEFLATED, stream=True)
    yield "nested_name.npz", zip_of([("layer/0.npy", member)])
    good = npz({"a": f4}, compressed=True)
    yield "crc_mismatch.npz", patch_crcs(good, 0x12345678)
    yield "dotdot_name.npz", zip_of([("../evil.npy", member)])
    yield "not_npy_member.npz", zip_of([("notes.txt", b"hello")])
    with_dup = io.BytesIO()
    with zipfile.ZipFile(with_dup, "w") as z:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(2):
                z.writestr(zipfile.ZipInfo("a.npy", date_time=(2026, 1, 1, 0, 0, 0)), member)
    yield "duplicate_names.npz", with_dup.getvalue()
    yield "truncated.npz", good[:-10]
    bad_member = npy(f4)[:-4]
    yield "truncated_member.npz", zip_of([("a.npy", bad_member)])

    yield "saved.safetensors", st_save(
        {"w": f4, "ids": i8, "h": np.array([1.5, -2], dtype="<f2"), "m": np.array([True, False]), "b": np.arange(3, dtype="u1")},
        metadata={"format": "np"},
    )
    yield "metadata.safetensors", st(
        [("x", "F32", [2], struct.pack("<2f", 1.0, -2.0))], metadata={"format": "pt", "note": "seed"}
    )
    yield "zero_size.safetensors", st(
        [("empty", "F32", [0, 3], b""), ("scalar", "I32", [], struct.pack("<i", -5)), ("v", "U16", [2], struct.pack("<2H", 1, 65535))]
    )
    yield "f8_bool.safetensors", st(
        [("f8", "F8_E4M3", [3], bytes([0x38, 0xB8, 0x7E])), ("f8b", "F8_E5M2", [1], b"\x3c"), ("flag", "BOOL", [2], b"\x01\x00")]
    )
    yield "bf16.safetensors", st([("bf", "BF16", [2, 2], struct.pack("<4H", 0x3F80, 0xBF80, 0x4000, 0x0000)), ("i64", "I64", [1], struct.pack("<q", -(2**63)))])
    yield "empty.safetensors", st([])
    good = st([("a", "F32", [2], struct.pack("<2f", 1.0, 2.0)), ("b", "I16", [1], struct.pack("<h", 3))])
    yield "header_past_end.safetensors", struct.pack("<Q", 1 << 40) + good[8:]
    yield "trailing.safetensors", good + b"\x00"
    yield "truncated.safetensors", good[:-1]
    yield "duplicate_key.safetensors", st_raw(
        b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\x01"
    )
    yield "offset_gap.safetensors", st_raw({"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}, b"\x00\x01")
    yield "dotdot_name.safetensors", st([("../x", "U8", [1], b"\x01")])
    yield "wrong_size.safetensors", st_raw({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8))


def main():
    for name, data in reader_seeds():
        write("npy_reader", name, data)
    for name, data in run_seeds():
        write("whole_run", name, data)
    for name, data in container_seeds():
        write("container_reader", name, data)


if __name__ == "__main__":
    main()
