#!/usr/bin/env python3
"""cbm_forge.py SPEC.json OUT.cbm: write a CatBoost binary model (.cbm:
"CBM1", the core's size, a FlatBuffers TModelCore as CatBoost's
model.fbs/features.fbs lay it out) from a JSON description, written by
hand here (Python's standard library only), so that tests and fuzz seeds
can hold small and malformed models CatBoost itself would not write.

SPEC (every key optional):
  format      the core's FormatVersion ("FlabuffersModel_v1"; null: absent)
  dim         ApproxDimension (1)
  float       [{"flat": F, "index": I, "borders": [...], "has_nans": bool,
                "nan": 0 AsIs | 1 AsFalse | 2 AsTrue, "id": "name"}, ...]
  cat, text, embedding   [{"flat": F, "id": "name", "used": bool}, ...]
  onehot      [{"index": I, "values": [...]}, ...]
  ctr, estimated         a count of (empty) tables
  splits, sizes, starts  TreeSplits, TreeSizes, TreeStartOffsets (starts:
              computed from sizes when absent)
  leaves, weights        LeafValues, LeafWeights
  steps       [[left, right], ...] NonSymmetricStepNodes; leafids: their
              NonSymmetricNodeIdToLeafId
  scale, bias, multibias
  info        {"key": "value"} InfoMap; parts: ["name"] ModelPartIds
  trailing    bytes after the core, as text (""); size: the core size the
              header records (default: the core's); size64: write it as
              0xFFFFFFFF and 64 bits
  lens        {"FIELD": N}: write vector FIELD (splits, sizes, leaves, ...)
              with length N whatever its values (a hostile length)
"""
import json
import struct
import sys


class Builder:
    """Forward layout: a table's vtable just before it, its children after
    it (FlatBuffers' uoffsets point forward)."""

    def __init__(self):
        self.buf = bytearray(b'\0\0\0\0')   # the root's uoffset, patched
        self.lens = {}

    def align(self, a):
        while len(self.buf) % a:
            self.buf.append(0)

    def patch_ref(self, at, target):
        struct.pack_into('<I', self.buf, at, target - at)

    def table(self, fields):
        """fields: list by field id of None or (kind, value); kinds: i32,
        u8, f64, or 'ref' with a callable that writes the child and returns
        its position."""
        n = len(fields)
        while n and fields[n - 1] is None:
            n -= 1
        layout, size = [], 4
        for i in range(n):
            f = fields[i]
            if f is None:
                layout.append(0)
                continue
            w = {'i32': 4, 'u8': 1, 'f64': 8, 'ref': 4}[f[0]]
            size = (size + w - 1) // w * w
            layout.append(size)
            size += w
        size = (size + 3) // 4 * 4
        self.align(2)
        vt = len(self.buf)
        self.buf += struct.pack('<HH', 4 + 2 * n, size) + b''.join(struct.pack('<H', o) for o in layout)
        self.align(8)
        pos = len(self.buf)
        self.buf += bytes(size)
        struct.pack_into('<i', self.buf, pos, pos - vt)
        refs = []
        for i in range(n):
            f = fields[i]
            if f is None:
                continue
            at = pos + layout[i]
            if f[0] == 'i32':
                struct.pack_into('<i', self.buf, at, f[1])
            elif f[0] == 'u8':
                struct.pack_into('<B', self.buf, at, f[1])
            elif f[0] == 'f64':
                struct.pack_into('<d', self.buf, at, f[1])
            else:
                refs.append((at, f[1]))
        for at, write in refs:
            self.patch_ref(at, write())
        return pos

    def vector(self, fmt, values, name=None):
        self.align(8)
        pos = len(self.buf)
        n = self.lens.get(name, len(values)) if name else len(values)
        self.buf += struct.pack('<I', n)
        for v in values:
            self.buf += struct.pack('<' + fmt, *(v if isinstance(v, (list, tuple)) else [v]))
        return pos

    def string(self, s):
        pos = len(self.buf)
        b = s.encode()
        self.buf += struct.pack('<I', len(b)) + b + b'\0'
        return pos

    def tables(self, items, write):
        self.align(4)
        pos = len(self.buf)
        self.buf += struct.pack('<I', len(items)) + bytes(4 * len(items))
        for i, it in enumerate(items):
            self.patch_ref(pos + 4 + 4 * i, write(it))
        return pos


def ref(fn, *a, **k):
    return ('ref', lambda: fn(*a, **k))


def build(spec):
    b = Builder()
    b.lens = spec.get('lens', {})

    def float_feature(f):
        return b.table([('u8', int(f.get('has_nans', False))), ('i32', f.get('index', 0)),
                        ('i32', f.get('flat', 0)), ref(b.vector, 'f', f.get('borders', [])),
                        ref(b.string, f['id']) if 'id' in f else None,
                        ('u8', f.get('nan', 0))])

    def cat_feature(f, used_field=3):
        fields = [('i32', f.get('index', 0)), ('i32', f.get('flat', 0)),
                  ref(b.string, f['id']) if 'id' in f else None, None, None]
        fields[used_field] = ('u8', int(f.get('used', True)))
        return b.table(fields)

    def onehot(f):
        return b.table([('i32', f.get('index', 0)), ref(b.vector, 'i', f.get('values', []))])

    def empty(_):
        return b.table([])

    sizes = spec.get('sizes', [])
    starts = spec.get('starts')
    if starts is None:
        starts, at = [], 0
        for s in sizes:
            starts.append(at)
            at += s
    vec = lambda key, fmt, default=None: (  # noqa: E731
        ref(b.vector, fmt, spec[key], key) if key in spec and spec[key] is not None else None)
    trees = [
        ('i32', spec.get('dim', 1)),
        vec('splits', 'i'), ref(b.vector, 'i', sizes, 'sizes'), ref(b.vector, 'i', starts, 'starts'),
        ref(b.tables, spec['cat'], cat_feature) if 'cat' in spec else None,
        ref(b.tables, spec.get('float', []), float_feature),
        ref(b.tables, spec['onehot'], onehot) if 'onehot' in spec else None,
        ref(b.tables, [0] * spec['ctr'], empty) if 'ctr' in spec else None,
        vec('leaves', 'd'), vec('weights', 'd'), vec('steps', 'HH'), vec('leafids', 'I'),
        ref(b.tables, spec['text'], cat_feature) if 'text' in spec else None,
        ref(b.tables, [0] * spec['estimated'], empty) if 'estimated' in spec else None,
        ('f64', spec['scale']) if 'scale' in spec else None,
        ('f64', spec['bias']) if 'bias' in spec else None,
        vec('multibias', 'd'), None,
        ref(b.tables, spec['embedding'], lambda f: cat_feature(f, 4)) if 'embedding' in spec else None,
    ]
    info = spec.get('info', {})
    core = [
        ref(b.string, spec.get('format', 'FlabuffersModel_v1')) if spec.get('format', 1) is not None
        else None,
        ('ref', lambda: b.table(trees)),
        ref(b.tables, list(info.items()),
            lambda kv: b.table([ref(b.string, kv[0]), ref(b.string, kv[1])])) if info else None,
        ref(b.tables, spec['parts'], b.string) if 'parts' in spec else None,
    ]
    root = b.table(core)
    b.patch_ref(0, root)
    b.align(4)
    body = bytes(b.buf)
    size = spec.get('size', len(body))
    head = b'CBM1' + (struct.pack('<IQ', 0xFFFFFFFF, size) if spec.get('size64') else struct.pack('<I', size))
    return head + body + spec.get('trailing', '').encode('latin-1')


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    with open(sys.argv[2], 'wb') as f:
        f.write(build(spec))


if __name__ == '__main__':
    main()
