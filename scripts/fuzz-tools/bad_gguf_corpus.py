#!/usr/bin/env python3
"""Writes the bad-file corpus: files a user might pick or drop as a model, each of which Draftlab must
refuse with a clear error (and keep working). Made from a real test model (SmolLM2 by default).

usage: bad_gguf_corpus.py MODEL.gguf OUT_DIR      (prints one line per file: name and what it is)
"""
import os
import socket
import struct
import sys

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Header:
    """Where things are in a GGUF header: each metadata entry's key, type and value span, each tensor
    info's fields, and the header's end."""

    def __init__(self, data):
        self.data = data
        self.pos = 24
        self.n_tensors, self.n_kv = struct.unpack_from("<QQ", data, 8)
        self.kv = {}
        for _ in range(self.n_kv):
            key_at = self.pos
            key = self.string()
            ty_at = self.pos
            ty = self.take("I")
            value_at = self.pos
            self.skip(ty)
            self.kv[key] = (key_at, ty_at, value_at, self.pos)
        self.tensors = []
        for _ in range(self.n_tensors):
            name_at = self.pos
            name = self.string()
            n_dims = self.take("I")
            dims_at = self.pos
            self.pos += 8 * n_dims
            type_at = self.pos
            self.pos += 4
            offset_at = self.pos
            self.pos += 8
            self.tensors.append((name, name_at, dims_at, type_at, offset_at))
        self.end = self.pos

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize("<" + fmt)
        return v

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s.decode()

    def skip(self, ty):
        if ty in SCALAR:
            self.pos += struct.calcsize("<" + SCALAR[ty])
        elif ty == 8:
            self.pos += 8 + struct.unpack_from("<Q", self.data, self.pos)[0]
        else:
            item, n = struct.unpack_from("<IQ", self.data, self.pos)
            self.pos += 12
            if item in SCALAR:
                self.pos += n * struct.calcsize("<" + SCALAR[item])
            else:
                for _ in range(n):
                    self.skip(item)


def patched(data, at, fmt, value):
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, at, value)
    return out


def main(model, out):
    os.makedirs(out, exist_ok=True)
    with open(model, "rb") as f:
        head = f.read(8 << 20)
    size = os.path.getsize(model)
    h = Header(head)
    header = head[:h.end + 64]
    made = []

    def write(name, data, what, whole_tail=False):
        path = os.path.join(out, name)
        with open(path, "wb") as f:
            f.write(data)
            if whole_tail:
                # The real file's length, its tensor data left as a hole (zeros, no disk space):
                # only the change above is wrong.
                f.truncate(size)
        made.append((name, what))

    arch_key_at, _, arch_at, arch_end = h.kv["general.architecture"]
    arch = head[arch_at + 8:arch_end].decode()
    write("empty.gguf", b"", "a 0-byte file")
    write("magic-only.gguf", head[:4], "the magic number and nothing else")
    write("truncated-24.gguf", head[:24], "only the fixed header (counts but no metadata)")
    write("truncated-metadata.gguf", head[:h.kv["tokenizer.ggml.tokens"][2] + 1000], "cut inside the vocabulary array")
    write("truncated-tensor-infos.gguf", head[:h.tensors[len(h.tensors) // 2][1] + 5], "cut inside the tensor infos")
    write("truncated-data.gguf", head[:h.end + (1 << 20)] if h.end + (1 << 20) <= len(head) else head, "1 MiB of tensor data: an interrupted download")
    write("downloading.gguf.part.gguf", head[:min(len(head), size // 20)], "a file still being downloaded (5 %)")
    write("text.gguf", b"these are my notes, not a model\n" * 20, "a text file named .gguf")
    write("bad-magic.gguf", b"GGML" + head[4:], "a flipped magic number", whole_tail=True)
    write("version-1.gguf", patched(head, 4, "I", 1), "GGUF version 1 (obsolete)", whole_tail=True)
    write("version-99.gguf", patched(head, 4, "I", 99), "an unknown GGUF version", whole_tail=True)
    write("big-endian.gguf", patched(head, 4, "I", 3 << 24), "a big-endian GGUF", whole_tail=True)
    write("huge-tensor-count.gguf", patched(head, 8, "Q", 1 << 62), "a tensor count of 2^62", whole_tail=True)
    write("huge-metadata-count.gguf", patched(head, 16, "Q", 1 << 40), "a metadata count of 2^40", whole_tail=True)
    write("huge-key-length.gguf", patched(head, 24, "Q", 1 << 60), "a metadata key 2^60 bytes long", whole_tail=True)
    bad_arch = bytearray(head)
    bad_arch[arch_at + 8:arch_end] = b"x" * len(arch)
    write("unknown-architecture.gguf", bad_arch, f"architecture `{'x' * len(arch)}` instead of `{arch}`", whole_tail=True)
    name, _, dims_at, type_at, offset_at = h.tensors[0]
    write("unsupported-quant.gguf", patched(head, type_at, "I", 99), f"tensor {name} of ggml type 99", whole_tail=True)
    write("absurd-dimension.gguf", patched(head, dims_at, "Q", 1 << 40), f"tensor {name} with a dimension of 2^40", whole_tail=True)
    write("offset-outside.gguf", patched(head, offset_at, "Q", 1 << 50), f"tensor {name} at an offset past the end", whole_tail=True)
    _, _, _, _, offset2_at = h.tensors[1]
    first_offset = struct.unpack_from("<Q", head, offset_at)[0]
    write("overlapping-tensors.gguf", patched(head, offset2_at, "Q", first_offset), "two tensors at the same offset", whole_tail=True)
    write("misaligned-offset.gguf", patched(head, offset2_at, "Q", struct.unpack_from("<Q", head, offset2_at)[0] + 1), "a tensor offset off its alignment", whole_tail=True)
    _, ty_at, value_at, _ = h.kv["tokenizer.ggml.tokens"]
    write("vocab-wrong-type.gguf", patched(head, value_at, "I", 4), "the vocabulary as an array of u32, not strings", whole_tail=True)
    key_at = h.kv["tokenizer.ggml.tokens"][0]
    no_tok = bytearray(head)
    no_tok[key_at + 8:key_at + 8 + len("tokenizer.ggml.tokens")] = b"tokenizer.ggml.tokenz"
    write("missing-tokenizer.gguf", no_tok, "no tokenizer.ggml.tokens (renamed)", whole_tail=True)
    flipped = bytearray(head)
    for i in range(64, h.end, max(1, h.end // 40)):
        flipped[i] ^= 0x10
    write("bit-flips.gguf", flipped, "40 bit flips spread over the header", whole_tail=True)
    os.makedirs(os.path.join(out, "folder.gguf"), exist_ok=True)
    made.append(("folder.gguf", "a folder named .gguf"))
    unreadable = os.path.join(out, "unreadable.gguf")
    with open(unreadable, "wb") as f:
        f.write(header)
    os.chmod(unreadable, 0)
    made.append(("unreadable.gguf", "a file without read permission (root can still read it)"))
    for a, b in (("loop-a.gguf", "loop-b.gguf"), ("loop-b.gguf", "loop-a.gguf")):
        p = os.path.join(out, a)
        if os.path.lexists(p):
            os.remove(p)
        os.symlink(b, p)
    made.append(("loop-a.gguf", "a symlink loop"))
    fifo = os.path.join(out, "pipe.gguf")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    made.append(("pipe.gguf", "a named pipe (opening it would wait for a writer)"))
    sock = os.path.join(out, "socket.gguf")
    if not os.path.exists(sock):
        s = socket.socket(socket.AF_UNIX)
        s.bind(sock)
        s.close()
    made.append(("socket.gguf", "a socket"))
    for name, what in made:
        print(f"{name}\t{what}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
