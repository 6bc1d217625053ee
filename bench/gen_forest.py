#!/usr/bin/env python3
"""gen_forest.py: a synthetic forest for benchmarks, as qs canonical text.

    gen_forest.py [--max-depth D | --oblivious] TREES LEAVES DOCS.letor [SEED] > model.txt

TREES trees of exactly LEAVES leaves each (grown by splitting a random leaf;
--max-depth D: only leaves above depth D are split, as XGBoost's max_depth
grows a tree, so a tree has at most 2^D leaves; --oblivious: trees of
log2(LEAVES) levels, every node of a level testing the same feature and
threshold with the same NaN side, as CatBoost's),
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
    args = sys.argv[1:]
    max_depth, oblivious = None, False
    while args and args[0].startswith("--"):
        if args[0] == "--max-depth" and len(args) > 1:
            max_depth = int(args[1])
            args = args[2:]
        elif args[0] == "--oblivious":
            oblivious = True
            args = args[1:]
        else:
            sys.exit(__doc__)
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    trees, leaves, docs = int(args[0]), int(args[1]), args[2]
    if oblivious and (leaves < 2 or leaves & (leaves - 1)):
        sys.exit("gen_forest.py: --oblivious wants LEAVES a power of two")
    rng = random.Random(int(args[3]) if len(args) == 4 else 1)
    values = {}
    nf = 0
    with open(docs) as fh:
        for n, line in enumerate(fh):
            if n >= 5000:
                break
            for tok in line.split("#", 1)[0].split()[2:]:
                k, _, v = tok.partition(":")
                f = int(k)  # the LETOR id is the feature index (qs-score reads id k as feature k)
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
        if oblivious:
            level = [0]
            for _ in range(leaves.bit_length() - 1):
                f = rng.choice(feats)
                thr = rng.choice(vals[f][1:])
                nan = rng.choice(("left", "right"))
                nxt = []
                for i in level:
                    a, b = len(nodes), len(nodes) + 1
                    nodes[i] = (f, thr, a, b, nan)
                    nodes.extend([None, None])
                    nxt += [a, b]
                level = nxt
        else:
            open_leaves = [(0, 0)]  # (node, depth)
            while len(open_leaves) < leaves:
                can = [k for k, (_, d) in enumerate(open_leaves)
                       if max_depth is None or d < max_depth]
                if not can:
                    break
                i, d = open_leaves.pop(rng.choice(can))
                f = rng.choice(feats)
                thr = rng.choice(vals[f][1:])
                a, b = len(nodes), len(nodes) + 1
                nodes[i] = (f, thr, a, b, None)  # (its NaN side drawn when written)
                nodes.extend([None, None])
                open_leaves += [(a, d + 1), (b, d + 1)]
        out.write("tree %d class 0 weight 0x1p+0 nodes %d\n" % (t, len(nodes)))
        for j, nd in enumerate(nodes):
            if nd is None:
                out.write("%d leaf %s\n" % (j, f32(rng.uniform(-0.05, 0.05)).hex()))
            else:
                f, thr, a, b, nan = nd
                if nan is None:
                    nan = rng.choice(("left", "right"))
                out.write("%d num %d %s nan %s %d %d\n" % (j, f, thr.hex(), nan, a, b))
    out.write("end\n")


if __name__ == "__main__":
    main()
