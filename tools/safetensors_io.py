"""The one safetensors writer and BF16 rounding of pocketdec's Python tools (train/ and
tools/testmodels/), numpy only.

A file is an 8-byte little-endian header length, the JSON header ({name: {dtype, shape,
data_offsets}} and "__metadata__"), padded with spaces to a multiple of 8 so the data stays aligned,
then the tensors' bytes in header order. BF16 is F32 rounded to nearest even (as torch's
.bfloat16() and ggml do); a NaN stays a NaN, made quiet, where the plain rounding could carry it
into an infinity.
"""

import json
import struct

import numpy as np

SIZES = {"F32": 4, "F16": 2, "BF16": 2}


def f32_to_bf16_bits(x):
    """uint16 BF16 bits of float32 values (same shape), round to nearest even, NaN kept quiet."""
    u = np.ascontiguousarray(x, dtype=np.float32).reshape(-1).view(np.uint32)
    r = ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)).astype(np.uint16)
    nan = np.nonzero((u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000))[0]
    r[nan] = (u[nan] >> np.uint32(16)) | np.uint32(64)
    return r.reshape(np.shape(x))


def encode(x, dtype):
    """Little-endian bytes of array-like x stored as dtype (F32, F16 or BF16)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if dtype == "F32":
        return x.astype("<f4").tobytes()
    if dtype == "F16":
        return x.astype("<f2").tobytes()
    if dtype == "BF16":
        return f32_to_bf16_bits(x).astype("<u2").tobytes()
    raise ValueError(f"safetensors dtype {dtype!r}: F32, F16 or BF16")


def header(entries, metadata=None):
    """The length prefix and padded header of entries [(name, dtype, shape, nbytes)], in order."""
    h, off = {}, 0
    for name, dtype, shape, n in entries:
        h[name] = {"dtype": dtype, "shape": [int(d) for d in shape], "data_offsets": [off, off + n]}
        off += n
    if metadata:
        h["__metadata__"] = metadata
    raw = json.dumps(h, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def write(path, tensors, dtype="F32", metadata=None, sort=True):
    """A safetensors file of {name: array-like or (dtype, array-like)} (a bare array takes dtype),
    names sorted unless sort is False."""
    names = sorted(tensors) if sort else list(tensors)
    parts = []
    for name in names:
        v = tensors[name]
        dt, x = v if isinstance(v, tuple) else (dtype, v)
        x = np.asarray(x, dtype=np.float32)
        parts.append((name, dt, x.shape, encode(x, dt)))
    with open(path, "wb") as f:
        f.write(header([(n, dt, s, len(b)) for n, dt, s, b in parts], metadata))
        for *_, b in parts:
            f.write(b)
