#!/usr/bin/env python3
"""letor2dense.py: write LETOR/SVMLight documents as CSV, TSV or raw float32
rows, for the tests of qs-score --input (tests/62-inputs.bats).

usage: letor2dense.py FORMAT [options] < LETOR > OUT
  FORMAT         csv, tsv, f32, or letor-f32 (the LETOR lines again, every
                 value rounded to float32 and written so that strtod and
                 strtof both read back that float exactly: the LETOR twin of
                 the f32 rows)
  --features N   columns 0 .. N-1 (default: the largest id + 1)
  --absent zero|missing   what an absent feature becomes: 0, or an empty cell
                 (NaN in f32) (default: missing)
  --label        a label column first
  --qid          a qid column last
  --header       a header row (csv, tsv): label, f0, f1, ..., qid, quoted in csv

Values are copied verbatim (csv, tsv), so qs-score parses the same tokens as
on the LETOR path.  float32 rounding (f32, letor-f32) goes through struct,
which rounds a double: the source tokens are first read as Python floats, so
the rows are what those doubles round to.
"""
import math
import struct
import sys


def parse(lines):
    docs = []
    for line in lines:
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        toks = line.split()
        label, qid, feats = toks[0], None, {}
        for t in toks[1:]:
            if t.startswith('qid:'):
                qid = t[4:]
            else:
                i, v = t.split(':', 1)
                feats[int(i)] = v
        docs.append((label, qid, feats))
    return docs


def f32(tok):
    return struct.unpack('<f', struct.pack('<f', float(tok)))[0]


def exact(x):
    """A token that strtod and strtof both read as the float32 value x."""
    if math.isnan(x):
        return 'nan'
    if math.isinf(x):
        return 'inf' if x > 0 else '-inf'
    return repr(x)


def main(argv):
    fmt = argv[0]
    nf, absent, label, qid, header = None, 'missing', False, False, False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == '--features':
            nf = int(argv[i + 1])
            i += 1
        elif a == '--absent':
            absent = argv[i + 1]
            i += 1
        elif a == '--label':
            label = True
        elif a == '--qid':
            qid = True
        elif a == '--header':
            header = True
        else:
            sys.exit('letor2dense.py: unknown option ' + a)
        i += 1
    docs = parse(sys.stdin.read().splitlines())
    if nf is None:
        nf = max((max(f) for _, _, f in docs if f), default=-1) + 1
    if fmt == 'letor-f32':
        out = sys.stdout
        for lab, q, feats in docs:
            toks = [lab] + (['qid:' + q] if q is not None else [])
            toks += ['%d:%s' % (k, exact(f32(feats[k]))) for k in sorted(feats) if k < nf]
            out.write(' '.join(toks) + '\n')
        return
    if fmt == 'f32':
        out = sys.stdout.buffer
        miss = 0.0 if absent == 'zero' else float('nan')
        for _, _, feats in docs:
            row = [float(feats[k]) if k in feats else miss for k in range(nf)]
            out.write(struct.pack('<%df' % nf, *row))
        return
    sep = ',' if fmt == 'csv' else '\t'
    out = sys.stdout
    if header:
        names = (['label'] if label else []) + ['f%d' % k for k in range(nf)] + \
            (['query id'] if qid else [])
        if fmt == 'csv':
            names = ['"%s"' % n.replace('"', '""') for n in names]
        out.write(sep.join(names) + '\n')
    miss = '0' if absent == 'zero' else ''
    for lab, q, feats in docs:
        cells = ([lab] if label else []) + [feats.get(k, miss) for k in range(nf)] + \
            ([q or ''] if qid else [])
        out.write(sep.join(cells) + '\n')


if __name__ == '__main__':
    main(sys.argv[1:])
