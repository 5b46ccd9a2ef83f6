#!/usr/bin/env python3
"""Draws icons/source.png (1024×1024), the one image every platform icon is generated from
(`scripts/icons`): a rounded square with a row of token blocks — accepted drafts in green, the
target's own token in blue. Pure Python (zlib), so the same bytes on every machine."""
import pathlib
import struct
import zlib

N = 1024
R = 200  # corner radius


def inside_rounded(x, y, x0, y0, x1, y1, r):
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


blocks = [  # (x0, y0, x1, y1, colour)
    (150, 300, 330, 480, (76, 217, 120)),
    (370, 300, 550, 480, (76, 217, 120)),
    (590, 300, 770, 480, (76, 217, 120)),
    (150, 560, 330, 740, (76, 217, 120)),
    (370, 560, 550, 740, (90, 140, 255)),
]
rows = []
for y in range(N):
    row = bytearray([0])
    for x in range(N):
        if not inside_rounded(x, y, 40, 40, N - 40, N - 40, R):
            row += bytes((0, 0, 0, 0))
            continue
        t = y / N
        c = (int(28 + 14 * t), int(32 + 16 * t), int(58 + 30 * t), 255)
        for x0, y0, x1, y1, col in blocks:
            if inside_rounded(x, y, x0, y0, x1, y1, 36):
                c = (*col, 255)
        row += bytes(c)
    rows.append(bytes(row))


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", N, N, 8, 6, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
out = pathlib.Path(__file__).resolve().parents[2] / "icons" / "source.png"  # scripts/gen/ -> the root
out.write_bytes(png)
print(f"wrote {out} ({len(png)} bytes)")
