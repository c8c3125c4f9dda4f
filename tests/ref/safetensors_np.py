"""Read and write safetensors files with NumPy only.

File layout: u64 little-endian N, then N bytes of JSON header, then the data
section. Each header entry is name -> {"dtype", "shape", "data_offsets": [b, e]}
with offsets relative to the start of the data section; the optional
"__metadata__" entry maps strings to strings. Tensors are row-major, little-endian.
"""
import json
import struct

import numpy as np

# safetensors dtype name -> little-endian NumPy dtype (BF16 is handled apart).
_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_ITEMSIZE = {name: dt.itemsize for name, dt in _DTYPES.items()}
_ITEMSIZE["BF16"] = 2

# Writable float dtypes.
_FLOAT_OUT = ("F64", "F32", "F16", "BF16")


def bf16_to_f32(bits):
    """uint16 bfloat16 bit patterns -> float32 (the high half of a float32)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """float32 -> uint16 bfloat16 bits, round to nearest even (NaN kept NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def read_header(path):
    """-> (header dict without __metadata__, metadata dict, data section offset)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: shorter than 8 bytes")
        (n,) = struct.unpack("<Q", raw)
        head = f.read(n)
        if len(head) != n:
            raise ValueError(f"{path}: header truncated")
    header = json.loads(head.decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    return header, metadata, 8 + n


def _decode(buf, dtype, shape):
    if dtype == "BF16":
        return bf16_to_f32(np.frombuffer(buf, dtype="<u2")).reshape(shape)
    if dtype not in _DTYPES:
        raise ValueError(f"unsupported safetensors dtype {dtype}")
    return np.frombuffer(buf, dtype=_DTYPES[dtype]).reshape(shape)


def load(path, float64=False, names=None):
    """-> dict name -> ndarray. BF16 becomes float32; with float64=True every
    float tensor is returned as float64. names: optional subset to read."""
    header, _, base = read_header(path)
    out = {}
    data = np.memmap(path, dtype=np.uint8, mode="r")  # read lazily, copied per tensor
    for name, info in header.items():
        if names is not None and name not in names:
            continue
        dtype, shape = info["dtype"], tuple(info["shape"])
        b, e = info["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64))
        if e - b != count * _ITEMSIZE.get(dtype, 0) or base + e > len(data):
            raise ValueError(f"{path}: bad offsets for {name}")
        arr = _decode(bytearray(data[base + b:base + e]), dtype, shape)
        if float64 and arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        out[name] = arr
    return out


def load_metadata(path):
    return read_header(path)[1]


def _encode(arr, dtype):
    """-> (safetensors dtype name, bytes)."""
    arr = np.asarray(arr)
    if dtype is not None and arr.dtype.kind == "f":
        if dtype not in _FLOAT_OUT:
            raise ValueError(f"cannot write float tensors as {dtype}")
        if dtype == "BF16":
            return "BF16", f32_to_bf16(arr.astype(np.float32)).astype("<u2").tobytes()
        return dtype, np.ascontiguousarray(arr, dtype=_DTYPES[dtype]).tobytes()
    for name, dt in _DTYPES.items():
        if arr.dtype == dt or (arr.dtype.kind == dt.kind and arr.dtype.itemsize == dt.itemsize):
            return name, np.ascontiguousarray(arr, dtype=dt).tobytes()
    raise ValueError(f"unsupported array dtype {arr.dtype}")


def save(path, tensors, metadata=None, dtype=None):
    """Writes dict name -> ndarray. Each array keeps its own dtype (float64 -> F64,
    float32 -> F32, ...) unless dtype ("F64", "F32", "F16", "BF16") forces the
    dtype of every float tensor. Tensors are stored in name order; the header is
    padded with spaces to a multiple of 8 bytes."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        st_dtype, blob = _encode(arr, dtype)
        header[name] = {"dtype": st_dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)
