"""The reference of --preview: the picture of a latent [C, F, H, W] through a fixed
latent-to-RGB map, in float64, and a strict PNG reader (signature, chunk CRCs, IHDR,
the zlib stream) written from the PNG specification.

  preview_ref.py check PNG LATENTS TABLE [--latent NAME]

reads the final latents from LATENTS (safetensors), the map named TABLE from
models/latent_rgb.c (the C source, parsed here: factors [C][3] and bias [3]), renders
them (rgb = latent . factors + bias; (rgb + 1) / 2 clamped to [0, 1]; x 255 rounded to
nearest; each frame a tile magnified by max(1, min(8, ceil(128 / W))), 8 tiles a row,
black past the last frame) and compares with PNG pixel for pixel (at most 1 level
apart, for the last bit of the float sums). Exit 0 when they agree.
"""
import os
import re
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np as st  # noqa: E402


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, "bad CRC in chunk %r" % kind
        chunks.append((kind, body))
        pos += 12 + n
    assert pos == len(data), "bytes after the last chunk"
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b""), "chunk order"
    w, h, depth, color, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, color, comp, filt, inter) == (8, 2, 0, 0, 0), "not 8-bit RGB"
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    rows = np.frombuffer(raw, np.uint8).reshape(h, 1 + 3 * w)
    assert (rows[:, 0] == 0).all(), "a row filter other than None"
    return rows[:, 1:].reshape(h, w, 3)


def read_table(path, name):
    src = open(path).read()
    m = re.search(r"%s_factors\[(\d+)\]\[3\] = \{(.*?)\};" % name, src, re.S)
    rows = re.findall(r"\{([^{}]*)\}", m.group(2))
    factors = np.array([[float(v.rstrip("f")) for v in r.split(",")] for r in rows])
    assert factors.shape == (int(m.group(1)), 3)
    b = re.search(r"dit_latent_rgb_%s = \{\d+, %s_factors, \{([^}]*)\}\}" % (name, name), src)
    bias = np.array([float(v.strip().rstrip("f")) for v in b.group(1).split(",")])
    return factors, bias


def render(lat, factors, bias):
    c, f, h, w = lat.shape
    cols = min(f, 8)
    rows = (f + cols - 1) // cols
    s = max(1, min(8, -(-128 // w)))
    img = np.zeros((rows * h * s, cols * w * s, 3), np.uint8)
    for fr in range(f):
        rgb = np.einsum("chw,ck->hwk", lat[:, fr].astype(np.float64), factors) + bias
        v = np.clip((rgb + 1.0) / 2.0, 0.0, 1.0)
        px = np.rint(v * 255.0).astype(np.uint8)
        px = px.repeat(s, axis=0).repeat(s, axis=1)
        y0, x0 = fr // cols * h * s, fr % cols * w * s
        img[y0:y0 + h * s, x0:x0 + w * s] = px
    return img


def main():
    args = sys.argv[1:]
    name = "latents"
    if "--latent" in args:
        i = args.index("--latent")
        name = args[i + 1]
        del args[i:i + 2]
    assert args[0] == "check", __doc__
    png, latents, table = args[1:4]
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    factors, bias = read_table(os.path.join(top, "models", "latent_rgb.c"), table)
    lat = st.load(latents)[name]
    want = render(lat, factors, bias)
    got = read_png(png)
    if got.shape != want.shape:
        print("preview %s, the reference %s" % (got.shape, want.shape))
        return 1
    diff = np.abs(got.astype(int) - want.astype(int)).max()
    if diff > 1:
        print("preview and reference differ by %d levels" % diff)
        return 1
    print("ok %s %dx%d, max difference %d" % (table, got.shape[1], got.shape[0], diff))
    return 0


if __name__ == "__main__":
    sys.exit(main())
