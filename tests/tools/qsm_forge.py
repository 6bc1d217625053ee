#!/usr/bin/env python3
"""qsm_forge.py IN.qsm SECTION BLOB OUT.qsm [RAWSIZE]: replace one section of
a .qsm (INFO, TREE or QSLY) by the bytes of BLOB (a zstd frame; its raw size
is RAWSIZE, default: the frame's content size), appended at the end of the
file, with every size and checksum recomputed (format/qsm.md), so that the
loader's size checks, not a CRC, must refuse it.  For hostile-input tests."""
import struct
import sys

T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    T.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def frame_content_size(f):
    # RFC 8878 frame header: descriptor byte after the 4-byte magic.
    d = f[4]
    fcs_flag, single = d >> 6, (d >> 5) & 1
    pos = 5 + (0 if single else 1) + [0, 1, 2, 4][d & 3]
    n = [1 if single else 0, 2, 4, 8][fcs_flag]
    v = int.from_bytes(f[pos:pos + n], "little")
    return v + 256 if n == 2 else v


src, name, blobp, dst = sys.argv[1:5]
q = bytearray(open(src, "rb").read())
blob = open(blobp, "rb").read()
raw = int(sys.argv[5]) if len(sys.argv) > 5 else frame_content_size(blob)
nsec = struct.unpack_from("<I", q, 20)[0]
sid = struct.unpack("<I", name.encode())[0]
off = len(q)
q += blob
for s in range(nsec):
    e = 64 + 48 * s
    if struct.unpack_from("<I", q, e)[0] == sid:
        flags = struct.unpack_from("<I", q, e + 4)[0] | 0x2
        struct.pack_into("<IIQQQI", q, e, sid, flags, off, len(blob), raw, crc32c(blob))
        break
else:
    sys.exit("no section " + name)
struct.pack_into("<Q", q, 24, len(q))
struct.pack_into("<I", q, 32, crc32c(bytes(q[64:64 + 48 * nsec])))
struct.pack_into("<I", q, 60, crc32c(bytes(q[:60])))
open(dst, "wb").write(q)
