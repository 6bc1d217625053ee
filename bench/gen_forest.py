#!/usr/bin/env python3
"""gen_forest.py: a synthetic forest for benchmarks, as qs canonical text.

    gen_forest.py TREES LEAVES DOCS.letor [SEED] > model.txt

TREES trees of exactly LEAVES leaves each (grown by splitting a random leaf),
XGBoost-like (compare lt, float32 thresholds and sums, absent = missing),
over the features of DOCS.letor: each split's threshold is a value that
feature takes in the documents (so documents spread over the leaves as a
trained model's do), its NaN side random.  For timing only: the scores
mean nothing, but every back end must still agree on them bit for bit.
Deterministic for a given SEED (default 1).
"""
import random
import struct
import sys


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    trees, leaves, docs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) == 5 else 1)
    values = {}
    nf = 0
    with open(docs) as fh:
        for n, line in enumerate(fh):
            if n >= 5000:
                break
            for tok in line.split("#", 1)[0].split()[2:]:
                k, _, v = tok.partition(":")
                f = int(k) - 1
                nf = max(nf, f + 1)
                s = values.setdefault(f, set())
                if len(s) < 256:
                    s.add(f32(float(v)))
    feats = sorted(f for f in values if len(values[f]) > 1)
    if not feats:
        sys.exit("gen_forest.py: no feature takes two values in " + docs)
    vals = {f: sorted(values[f]) for f in feats}
    out = sys.stdout
    out.write("qs-ensemble 1\nsource xgboost\nobjective synthetic\ncompare lt\n"
              "precision float\naccumulate float\nabsent missing\n")
    out.write("features %d\nclasses 1\ntransform none 0x1p+0\nbase 0 0x1p-1\ntrees %d\n"
              % (nf, trees))
    for t in range(trees):
        # nodes: [kind, feature, thr, left, right, leafval]
        nodes = [None]
        open_leaves = [0]
        while len(open_leaves) < leaves:
            i = open_leaves.pop(rng.randrange(len(open_leaves)))
            f = rng.choice(feats)
            thr = rng.choice(vals[f][1:])
            a, b = len(nodes), len(nodes) + 1
            nodes[i] = (f, thr, a, b)
            nodes.extend([None, None])
            open_leaves += [a, b]
        out.write("tree %d class 0 weight 0x1p+0 nodes %d\n" % (t, len(nodes)))
        for j, nd in enumerate(nodes):
            if nd is None:
                out.write("%d leaf %s\n" % (j, f32(rng.uniform(-0.05, 0.05)).hex()))
            else:
                f, thr, a, b = nd
                out.write("%d num %d %s nan %s %d %d\n"
                          % (j, f, thr.hex(), rng.choice(("left", "right")), a, b))
    out.write("end\n")


if __name__ == "__main__":
    main()
