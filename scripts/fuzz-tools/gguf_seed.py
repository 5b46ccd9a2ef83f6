#!/usr/bin/env python3
"""Shrinks a real GGUF model into a small fuzz seed with the same structure: every metadata key (arrays
cut to a few items), the tensors of the first two layers and the others (block count set to 2), each
tensor one quantisation block of its type, data zeroed.

usage: gguf_seed.py MODEL.gguf OUT.gguf
"""
import struct
import sys

# ggml type -> (block size, bytes per block); types not listed become F32.
LAYOUT = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 30: (1, 2)}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
KEEP_ARRAY = 8
KEEP_LAYERS = 2


class Reader:
    def __init__(self, f):
        self.f = f

    def take(self, fmt):
        size = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, self.f.read(size))[0]

    def string(self):
        return self.f.read(self.take("Q"))

    def value(self, ty):
        if ty in SCALAR:
            return self.take(SCALAR[ty])
        if ty == 8:
            return self.string()
        if ty == 9:
            item, n = self.take("I"), self.take("Q")
            return (item, [self.value(item) for _ in range(n)])
        raise ValueError(f"value type {ty}")


def put_string(out, b):
    out += struct.pack("<Q", len(b)) + b


def put_value(out, ty, v):
    if ty in SCALAR:
        out += struct.pack("<" + SCALAR[ty], v)
    elif ty == 8:
        put_string(out, v)
    else:
        item, items = v
        items = items[:KEEP_ARRAY]
        out += struct.pack("<IQ", item, len(items))
        for x in items:
            put_value(out, item, x)


def main(src, dst):
    with open(src, "rb") as f:
        r = Reader(f)
        assert f.read(4) == b"GGUF"
        version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
        kvs = []
        for _ in range(n_kv):
            key, ty = r.string(), r.take("I")
            kvs.append((key, ty, r.value(ty)))
        tensors = []
        for _ in range(n_tensors):
            name, n_dims = r.string(), r.take("I")
            dims = [r.take("Q") for _ in range(n_dims)]
            tensors.append((name, n_dims, r.take("I"), r.take("Q")))
    keep = []
    for name, n_dims, ty, _ in tensors:
        parts = name.split(b".")
        if parts[0] == b"blk" and int(parts[1]) >= KEEP_LAYERS:
            continue
        keep.append((name, n_dims, ty if ty in LAYOUT else 0))
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", version, len(keep), len(kvs))
    alignment = 32
    for key, ty, v in kvs:
        if key.endswith(b".block_count"):
            v = KEEP_LAYERS
        if key == b"general.alignment":
            alignment = v
        put_string(out, key)
        out += struct.pack("<I", ty)
        put_value(out, ty, v)
    offset = 0
    sizes = []
    for name, n_dims, ty in keep:
        block, nbytes = LAYOUT[ty]
        dims = [block] + [1] * (n_dims - 1)
        put_string(out, name)
        out += struct.pack("<I", n_dims) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ty, offset)
        sizes.append(nbytes)
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += b"\0" * ((-len(out)) % alignment)
    out += b"\0" * offset
    with open(dst, "wb") as f:
        f.write(out)
    print(f"{dst}: {len(out)} bytes, {len(keep)} tensors, {len(kvs)} metadata keys")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
