"""binding.py MODEL DOCS [load|predict]: the Python binding's load and
predict paths, for the fault sweeps (tests/faults/sweep.sh with
QS_FAULT_OBJECT=_core., tests/70-python.bats).  load: the model read from
its path (and from its bytes, and its .qsm image again) and its facts;
predict: then dense (float64, float32 at an odd offset, Fortran order), CSR
and leaves, raw and transformed, one library thread.  Prints what it
computed, once all is done; a fault surfaces as MemoryError (out of memory)
or OSError (a read error), written as one line on standard error and exit
4, nothing on standard output, as the tools do; any other exception is a
failure of the sweep (its traceback, exit 1)."""
import ctypes
import errno
import sys

import numpy as np
import qs_toolkit as qs
import scipy.sparse

# the injector counts from here (the imports' own constructors are not
# the binding's)
try:
    ctypes.CDLL(None).qs_fault_arm()
except AttributeError:
    pass                      # (run without the injector)

model, docs, what = sys.argv[1], sys.argv[2], sys.argv[3]


def rows(path, nf):
    X = np.zeros((0, nf))
    out = []
    for line in open(path):
        r = np.zeros(nf)
        for t in line.split()[1:]:
            if ":" in t and not t.startswith("qid:"):
                j, v = t.split(":")
                if int(j) < nf:
                    r[int(j)] = float(v)
        out.append(r)
    return np.array(out) if out else X


out = []


def say(*words):
    out.append(" ".join(str(w) for w in words))


def show(name, a):
    a = np.asarray(a)
    say(name, a.shape, " ".join(qs.format_score(float(v), 17) for v in a.ravel()[:64]))


try:
    m = qs.Model(model)
    say(m.num_trees, m.num_features, m.num_classes, m.source, m.transform)
    info = m.info
    say(info["trees"], info["leaves"], len(info["layout"]["blocks"]))
    with open(model, "rb") as f:
        m2 = qs.Model(f.read())
    m3 = qs.Model(m2.to_qsm())
    say(m3.num_trees == m.num_trees, len(m3.to_qsm()))
    if what == "predict":
        X = rows(docs, m.num_features)
        show("dense", m.predict(X, threads=1))
        raw = np.asfortranarray(X.astype(np.float32))
        buf = bytearray(raw.nbytes + 1)
        buf[1:] = raw.tobytes(order="A")
        V = np.frombuffer(buf, dtype=np.float32, offset=1).reshape(X.shape, order="F")
        show("f32-odd-fortran", m.predict(V, threads=1))
        show("csr", m.predict(scipy.sparse.csr_matrix(X), threads=1))
        show("trees", m.predict(X, threads=1, trees=1))
        if m.transform != "unsupported":
            show("transform", m.predict(X, threads=1, transform=True))
        show("leaves", m.predict_leaves(X[:8]))
        show("backend-qs", m.predict(X, threads=1, backend="qs"))
    m.close()
    print("\n".join(out))
except MemoryError:
    print("binding.py: out of memory", file=sys.stderr)
    sys.exit(4)
except OSError as e:
    if e.errno != errno.EIO:
        raise
    print("binding.py: %s" % e, file=sys.stderr)
    sys.exit(4)
