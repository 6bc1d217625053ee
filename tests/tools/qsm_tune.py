#!/usr/bin/env python3
"""qsm_tune.py IN.qsm OUT.qsm dup | backend NAME | raw OFFSET HEX: edit the
TUNE section of a tuned .qsm (format/qsm.md), every offset, size and
checksum recomputed, so that only the loader's and the tuning reader's own
checks can refuse it.  dup: a second TUNE entry (a copy of the record, the
table one entry longer); backend NAME: the record's back end name replaced
by NAME; raw OFFSET HEX: the record's bytes at OFFSET replaced by HEX.  For
tests."""
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


src, dst, what = sys.argv[1:4]
q = bytearray(open(src, "rb").read())
nsec = struct.unpack_from("<I", q, 20)[0]
ents = [list(struct.unpack_from("<IIQQQI", q, 64 + 48 * s)) for s in range(nsec)]
tune = struct.unpack("<I", b"TUNE")[0]
idx = [s for s in range(nsec) if ents[s][0] == tune]
if not idx:
    sys.exit("no TUNE section")
t = idx[0]
data = [bytes(q[e[2]:e[2] + e[3]]) for e in ents]
if what == "dup":
    ents.append(list(ents[t]))
    data.append(data[t])
elif what == "backend":
    rec = bytearray(data[t])
    name = sys.argv[4].encode()
    rec[32:64] = name[:32] + b"\0" * (32 - len(name[:32]))
    data[t] = bytes(rec)
elif what == "raw":
    rec = bytearray(data[t])
    at, new = int(sys.argv[4]), bytes.fromhex(sys.argv[5])
    rec[at:at + len(new)] = new
    data[t] = bytes(rec)
else:
    sys.exit("dup, backend NAME or raw OFFSET HEX")
n = len(ents)
out = bytearray(q[:64])
off = 64 + 48 * n
body = bytearray()
for e, d in zip(ents, data):
    e[2] = off + len(body)
    e[5] = crc32c(d)
    body += d
table = b"".join(struct.pack("<IIQQQI", *e) + b"\0" * 12 for e in ents)
out += table + body
struct.pack_into("<I", out, 20, n)
struct.pack_into("<Q", out, 24, len(out))
struct.pack_into("<I", out, 32, crc32c(bytes(out[64:64 + 48 * n])))
struct.pack_into("<I", out, 60, crc32c(bytes(out[:60])))
open(dst, "wb").write(out)
