#!/usr/bin/env python3
"""gen_block_models.py OUTDIR: synthetic models in the canonical ensemble text
that give the QuickScorer layout every block kind the SIMD kernels take, and
documents for them (tests/24-simd-blocks.bats).

  wide-*.txt  trees of 65 to 2100 leaves (multi-word leaf masks), random
              shapes, beside narrow trees; categorical nodes; every compare,
              precision and accumulation mode; one and three classes
  obl-*.txt   oblivious trees of depth 1 to 12 (QS-Omega blocks, leaf
              indexes past 8 bits) and lone leaves; NaN rules
  oblr-*.txt  the same, each feature's splits under one missing rule and
              one default side (the AVX2 kernel's QS-Omega by ranks); every
              compare and accumulation mode, one to three classes; groups of
              hundreds of distinct thresholds
  lin-*.txt   linear leaves (format version 3) on wide and oblivious trees
  many-*.txt  700 features, most of them in one block (more than the SIMD
              kernels' rows of feature values hold at once)
  long-*.txt  540 trees of 64 leaves on one feature: a group of over
              32,767 entries in one block
  docs.letor  130 documents: values on and beside the thresholds, NaN, zero,
              absent features (many-docs.letor: the same for 700 features)

Deterministic (fixed seed); the scores are compared across back ends, the
reference being `walk`, so no oracle is stored.
"""
import os
import random
import struct
import sys

NF = 8
THR = [-2.5, -1.0, -1e-36, 0.0, 0.25, 0.5, 1.0, 3.0, 7.5]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def hx(x):
    return float(x).hex()


class Model:
    def __init__(self, cmp="le", prec="double", acc="double", absent="missing",
                 classes=1, version=1, nf=NF):
        self.cmp, self.prec, self.acc, self.absent = cmp, prec, acc, absent
        self.nf = nf
        self.split_feats = nf  # splits test features 0 .. split_feats - 1
        self.miss = ["none", "zero", "nan"]  # missing-value rules of the splits
        self.classes, self.version = classes, version
        self.thrs = THR  # the thresholds splits draw from
        self.trees = []  # (class, weight, [node lines])

    def text(self):
        out = ["qs-ensemble %d" % self.version, "source unknown", "objective synthetic",
               "compare " + self.cmp, "precision " + self.prec, "accumulate " + self.acc,
               "absent " + self.absent, "features %d" % self.nf, "classes %d" % self.classes,
               "transform none 0x0p+0"]
        for c in range(self.classes):
            out.append("base %d %s" % (c, hx(self.val(0.125 * (c + 1)))))
        out.append("trees %d" % len(self.trees))
        for i, (c, w, nodes) in enumerate(self.trees):
            nn = sum(1 for x in nodes if not x.startswith("term "))
            out.append("tree %d class %d weight %s nodes %d" % (i, c, hx(w), nn))
            out.extend(nodes)
        out.append("end")
        return "\n".join(out) + "\n"

    def val(self, x):
        return f32(x) if self.acc != "double" else x

    def thr(self, x):
        return f32(x) if self.prec == "float" else x

    def weight(self, rng):
        if self.acc == "float":
            return 1.0
        if self.acc == "float-double":
            return f32(rng.choice([1.0, 0.5, 0.3, 1.7]))
        return rng.choice([1.0, 0.1, 0.75])


def leaf_line(m, rng, j, linear):
    v = m.val(rng.uniform(-1, 1))
    if linear and rng.random() < 0.8:
        terms = rng.randint(0, 3)
        lines = ["%d linear %s %s %d" % (j, hx(v), hx(rng.uniform(-1, 1)), terms)]
        for _ in range(terms):
            lines.append("term %d %s" % (rng.randrange(m.nf), hx(rng.uniform(-2, 2))))
        return lines
    return ["%d leaf %s" % (j, hx(v))]


def split_line(m, rng, j, left, right, cat_ok):
    miss = rng.choice(m.miss)
    side = rng.choice(["left", "right"])
    if cat_ok and rng.random() < 0.1:
        cats = sorted(rng.sample(range(12), rng.randint(1, 4)))
        return "%d cat %d %s %s %s %s %d %d %s" % (
            j, rng.randrange(m.nf), rng.choice(["left", "right"]),
            rng.choice(["trunc", "strict"]), miss, side, left, right,
            ",".join(map(str, cats)))
    return "%d num %d %s %s %s %d %d" % (j, rng.randrange(m.split_feats),
                                         hx(m.thr(rng.choice(m.thrs))),
                                         miss, side, left, right)


def random_tree(m, rng, leaves, cat_ok=True, linear=False):
    """A random binary tree with `leaves` leaves, nodes numbered preorder."""
    # shape: split a random leaf until there are enough
    kids = {0: None}
    n = 1
    open_leaves = [0]
    while len(open_leaves) < leaves:
        k = open_leaves.pop(rng.randrange(len(open_leaves)))
        kids[k] = (n, n + 1)
        kids[n] = kids[n + 1] = None
        open_leaves += [n, n + 1]
        n += 2
    # renumber preorder
    order, stack = [], [0]
    while stack:
        k = stack.pop()
        order.append(k)
        if kids[k]:
            stack.append(kids[k][1])
            stack.append(kids[k][0])
    num = {k: i for i, k in enumerate(order)}
    lines = []
    for k in order:
        if kids[k]:
            lines.append(split_line(m, rng, num[k], num[kids[k][0]], num[kids[k][1]], cat_ok))
        else:
            lines.extend(leaf_line(m, rng, num[k], linear))
    return lines


def oblivious_tree(m, rng, depth, linear=False, thr=THR):
    tests = []
    for _ in range(depth):
        tests.append((rng.randrange(m.nf), hx(m.thr(rng.choice(thr))),
                      rng.choice(["none", "zero", "nan"]), rng.choice(["left", "right"])))
    lines = []
    # preorder numbering of a complete tree
    count = [0]

    def emit(level):
        j = count[0]
        count[0] += 1
        if level == depth:
            lines.extend(leaf_line(m, rng, j, linear))
            return
        idx = len(lines)
        lines.append(None)
        left = count[0]
        emit(level + 1)
        right = count[0]
        emit(level + 1)
        f, t, miss, side = tests[level]
        lines[idx] = "%d num %d %s %s %s %d %d" % (j, f, t, miss, side, left, right)

    emit(0)
    return lines


def oblivious_tree_ranks(m, rng, depth, rules, thr=THR):
    """An oblivious tree whose splits on a feature all take that feature's
    missing rule and default side (rules[f]), so the special values of a
    feature's group send all of its nodes one way."""
    lines = oblivious_tree(m, rng, depth, thr=thr)
    out = []
    for ln in lines:
        w = ln.split()
        if len(w) == 8 and w[1] == "num":
            w[4], w[5] = rules[int(w[2])]
            ln = " ".join(w)
        out.append(ln)
    return out


def lone_leaf(m, rng):
    return ["0 leaf %s" % hx(m.val(rng.uniform(-1, 1)))]


def add(m, rng, lines, c=None):
    m.trees.append((rng.randrange(m.classes) if c is None else c, m.weight(rng), lines))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20261123)
    models = {}

    # multi-word blocks beside narrow ones: 256 leaves, odd counts, the
    # 2048-leaf edge of the byte planes and past it (scalar)
    sizes = [256, 256, 8, 100, 65, 300, 256, 40, 2048, 2100, 256, 129, 512]
    for name, kw in [("wide-le-double", dict(cmp="le", acc="double")),
                     ("wide-lt-float", dict(cmp="lt", prec="float", acc="float", classes=3)),
                     ("wide-le-fd", dict(cmp="le", prec="float", acc="float-double",
                                         absent="zero", classes=2))]:
        m = Model(**kw)
        for rep in range(2):
            for L in sizes:
                add(m, rng, random_tree(m, rng, L) if L > 1 else lone_leaf(m, rng))
            add(m, rng, lone_leaf(m, rng))
        models[name] = m

    # oblivious blocks: depths 1..12, lone leaves inside the blocks
    for name, kw in [("obl-le-double", dict(cmp="le", acc="double")),
                     ("obl-lt-float", dict(cmp="lt", prec="float", acc="float", classes=3)),
                     ("obl-le-fd", dict(cmp="le", acc="float-double", absent="zero", classes=2))]:
        m = Model(**kw)
        for rep in range(3):
            for d in [6, 6, 1, 3, 8, 9, 12, 2, 0, 6, 10, 4, 5, 7, 11]:
                add(m, rng, oblivious_tree(m, rng, d) if d else lone_leaf(m, rng))
        models[name] = m

    # oblivious blocks the AVX2 kernel reads by ranks: a missing rule and
    # default side per feature, one to three classes (their own generator:
    # the documents below stay as they were)
    orng = random.Random(64)
    for name, kw in [("oblr-le-double", dict(cmp="le", acc="double")),
                     ("oblr-lt-float", dict(cmp="lt", prec="float", acc="float", classes=3)),
                     ("oblr-le-fd", dict(cmp="le", acc="float-double", absent="zero", classes=2))]:
        m = Model(**kw)
        rules = [(orng.choice(["none", "zero", "nan"]), orng.choice(["left", "right"]))
                 for _ in range(m.nf)]
        for rep in range(3):
            for d in [6, 6, 1, 3, 8, 9, 12, 2, 0, 6, 10, 4, 5, 7, 11]:
                add(m, orng, oblivious_tree_ranks(m, orng, d, rules) if d else lone_leaf(m, orng))
        models[name] = m
    # and groups of many distinct thresholds (the kernel's bisection): THR
    # and 300 more between them, 2 features
    m = Model(cmp="lt", acc="double")
    m.nf = 2
    many = THR + [orng.uniform(-3.0, 8.0) for _ in range(300)]
    rules = [("nan", "right"), ("zero", "left")]
    for _ in range(120):
        add(m, orng, oblivious_tree_ranks(m, orng, orng.randrange(1, 9), rules, many))
    models["oblr-many-lt-double"] = m

    # linear leaves (LightGBM linear trees: weight 1, accumulate double)
    m = Model(version=3, absent="missing")
    m.weight = lambda rng: 1.0
    for L in [256, 8, 100, 300, 64]:
        add(m, rng, random_tree(m, rng, L, cat_ok=False, linear=True))
    for d in [6, 9, 3]:
        add(m, rng, oblivious_tree(m, rng, d, linear=True))
    models["lin-double"] = m
    m = Model(version=3, absent="zero", classes=2)
    m.weight = lambda rng: 1.0
    for d in [6, 9, 3, 6, 12, 1]:
        add(m, rng, oblivious_tree(m, rng, d, linear=True))
    models["lin-obl"] = m

    # many features: one multi-word block and one Ω block reading ~700
    for name, kw in [("many-le-double", dict(cmp="le", acc="double", nf=700)),
                     ("many-lt-float", dict(cmp="lt", prec="float", acc="float", nf=700,
                                            classes=2))]:
        m = Model(**kw)
        for _ in range(12):
            add(m, rng, random_tree(m, rng, 256))
        for _ in range(60):
            add(m, rng, oblivious_tree(m, rng, 8))
        for _ in range(20):
            add(m, rng, random_tree(m, rng, 40))
        models[name] = m

    # long groups: 540 trees of 64 leaves splitting on one feature, so that
    # one block's group holds over 32,767 entries (34,020; the AVX2
    # kernel's longest run ends take 32 bits)
    lrng = random.Random(32767)  # its own: the documents below stay as they were
    # (a group holds one feature's splits of one missing-value rule)
    for name, kw, miss in [("long-le-float", dict(cmp="le", prec="float", acc="float"), "nan"),
                           ("long-lt-double", dict(cmp="lt", acc="double", absent="zero"),
                            "none")]:
        m = Model(**kw)
        m.split_feats = 1
        m.miss = [miss]
        for _ in range(540):
            add(m, lrng, random_tree(m, lrng, 64, cat_ok=False))
        models[name] = m

    # narrow trees (up to 64 leaves) that the vQS kernels read by ranks:
    # every missing rule (special lists), every accumulation mode, one to
    # three classes; then one feature of exactly 255 distinct thresholds
    # (the most a byte's counts take) and of 256 (the whole planes
    # instead); their own generator, so the documents below stay as they
    # were
    krng = random.Random(255)
    for name, kw in [("rank-le-double", dict(cmp="le", acc="double")),
                     ("rank-lt-float", dict(cmp="lt", prec="float", acc="float", classes=3)),
                     ("rank-le-fd", dict(cmp="le", acc="float-double", absent="zero", classes=2))]:
        m = Model(**kw)
        for L in [64, 8, 16, 33, 64, 2, 1, 40, 64, 17, 64, 5, 64]:
            add(m, krng, random_tree(m, krng, L, cat_ok=False) if L > 1 else lone_leaf(m, krng))
        models[name] = m
    for n, name in [(255, "rank-255-le-double"), (256, "rank-256-le-double")]:
        m = Model(cmp="le", acc="double")
        m.split_feats = 1
        m.miss = ["none"]
        m.thrs = sorted(set(THR + [round(krng.uniform(-3.0, 8.0), 6) for _ in range(n + 40)]))[:n]
        assert len(m.thrs) == n
        for _ in range(90):
            add(m, krng, random_tree(m, krng, 64, cat_ok=False))
        used = set()
        for _, _, nodes in m.trees:
            used.update(x.split()[3] for x in nodes if " num " in x)
        assert len(used) == n, (name, len(used))
        models[name] = m
    # a block whose groups hold more distinct thresholds in all than the
    # AVX-512 kernel's table of masks takes (8,192: vqs_plan.h,
    # QS_VQS_RK_TABLE), so it compares instead: 40 features of up to 255
    # each (documents: many-docs.letor)
    m = Model(cmp="le", acc="double", nf=40)
    m.miss = ["none"]
    m.thrs = sorted(set(round(krng.uniform(-3.0, 8.0), 6) for _ in range(400)))[:255]
    for _ in range(330):
        add(m, krng, random_tree(m, krng, 64, cat_ok=False))
    per = {}
    for _, _, nodes in m.trees:
        for x in nodes:
            if " num " in x:
                per.setdefault(x.split()[2], set()).add(x.split()[3])
    assert sum(len(v) + 1 for v in per.values()) > 8192, sum(len(v) + 1 for v in per.values())
    models["rank-bigtable-le-double"] = m

    for name, m in models.items():
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write(m.text())

    vals = THR + [f32(t) for t in THR] + [t + 1e-9 for t in THR] + [t - 1e-9 for t in THR]
    vals += [0.0, -0.0, 1e-40, 5.0, -5.0, 11.0, 3.7]
    with open(os.path.join(out, "docs.letor"), "w") as f:
        for i in range(130):
            feats = []
            for j in range(NF):
                r = rng.random()
                if r < 0.15:
                    continue  # absent
                if r < 0.25:
                    v = "nan"
                else:
                    v = repr(rng.choice(vals))
                feats.append("%d:%s" % (j, v))
            f.write("%d qid:%d %s\n" % (i % 3, i // 10, " ".join(feats)))
    with open(os.path.join(out, "many-docs.letor"), "w") as f:
        for i in range(130):
            feats = []
            for j in range(700):
                r = rng.random()
                if r < 0.3:
                    continue  # absent
                feats.append("%d:%s" % (j, "nan" if r < 0.35 else repr(rng.choice(vals))))
            f.write("%d qid:%d %s\n" % (i % 3, i // 10, " ".join(feats)))


if __name__ == "__main__":
    main()
