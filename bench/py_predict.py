#!/usr/bin/env python3
"""bench/py_predict.py: the Python binding's predict() against the same call
in C (qs_score_matrix, through bench/qs-matrix) and against lleaves'
predict(), on one model and one dense float64 matrix, one thread.

    bench/py_predict.py [--model 1000x64] [--docs 50000] [--reps 7] [--rounds 3]
                        [--backend auto] [--dir DIR] [--site DIR] [--venv DIR]

The model is the LightGBM twin of bench/run.sh's workload (1,000 trees x 64
leaves: lgb-mq2008-t1000-l64-n50000-s1, made by bench/peers.sh), so that all
three score the same trees; the documents are that workload's 50,000 MQ2008
rows (50,039; absent = 0.0, LightGBM's rule), as a C-ordered float64 matrix
of the model's feature count.  DIR: $QS_BENCH_DIR or /tmp/qs-bench (its
workloads/ must hold the twin: `bench/peers.sh --models 1000x64` makes it).

Each round times, in turn: the binding (`Model.predict(X, threads=1)` in this
process, --reps calls after one untimed call), qs-matrix (a child process:
qs_score_matrix over the same matrix, --reps timed calls after one untimed
one), paired calls in this process (the binding's predict and, through
ctypes on build/libqs.so, qs_score_matrix on the same matrix, alternated
call by call, --reps pairs; the median of the pairs' ratios is the
overhead least moved by a busy machine), lleaves (a child process in the peers' virtual environment
(bench/setup-peers.sh), `predict(X, n_jobs=1)`, compiled as bench/peers.py
compiles it, the same reps).  The order rotates each round.  Reported: the
median of every timed call per method, the binding's overhead over the C call
((binding - C) / C), and whether the scores are the same bits (binding and C)
or the largest difference (lleaves).  One line of JSON on standard output,
a table on standard error.

The binding is built with pip from this checkout into --site (default
DIR/py-site) unless it is importable already.  Runs with Debian's python3
(numpy); the lleaves child with the venv's python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

LLEAVES_CHILD = r'''
import json, sys, time
import numpy as np
import lleaves
spec = json.load(open(sys.argv[1]))
m = lleaves.Model(model_file=spec["model"])
m.compile(cache=spec["cache"], raw_score=True, fblocksize=34, finline=True,
          fcodemodel="large", use_fp64=True)
X = np.load(spec["X"])
out = m.predict(X, n_jobs=1)
times = []
for _ in range(spec["reps"]):
    t0 = time.perf_counter()
    out = m.predict(X, n_jobs=1)
    times.append(time.perf_counter() - t0)
np.save(spec["out"], out)
print(json.dumps({"times_s": times, "lleaves": lleaves.__version__ if hasattr(lleaves, "__version__") else "?"}))
'''


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def import_binding(site, bench_dir):
    try:
        import qs_toolkit  # noqa: F401
        return qs_toolkit
    except ImportError:
        pass
    site = site or os.path.join(bench_dir, "py-site")
    if not os.path.exists(os.path.join(site, "qs_toolkit")):
        log("py_predict: building the binding into %s (pip, no build isolation)" % site)
        src = tempfile.mkdtemp(prefix="qs-py-src-")
        subprocess.run(["cp", "-r", os.path.join(ROOT, "python") + "/.", src], check=True)
        env = dict(os.environ, QS_SOURCE_DIR=ROOT, QS_BUILD_DIR=os.path.join(ROOT, "build"),
                   PIP_NO_INDEX="1")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                        "--no-deps", "--target", site, src], check=True, env=env)
        subprocess.run(["rm", "-rf", src], check=True)
    sys.path.insert(0, site)
    import qs_toolkit
    return qs_toolkit


def read_letor_dense(path, ncols, limit):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            r = np.zeros(ncols)
            for t in line[1:]:
                k, v = t.split(":", 1)
                if k != "qid" and int(k) < ncols:
                    r[int(k)] = float(v)
            rows.append(r)
            if len(rows) == limit:
                break
    return np.array(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="1000x64", help="TREESxLEAVES of the LightGBM twin")
    ap.add_argument("--docs", type=int, default=0, help="rows (default: all, 50,039)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--dir", default=os.environ.get("QS_BENCH_DIR", "/tmp/qs-bench"))
    ap.add_argument("--site", default=None)
    ap.add_argument("--venv", default=os.environ.get("QS_BENCH_VENV"))
    a = ap.parse_args()
    trees, leaves = (int(x) for x in a.model.split("x"))
    wl = os.path.join(a.dir, "workloads")
    twin = os.path.join(wl, "lgb-mq2008-t%d-l%d-n50000-s1" % (trees, leaves))
    docs = os.path.join(wl, "mq2008-t%d-l%d-n50000-s1" % (trees, leaves), "docs.txt")
    for p in (os.path.join(twin, "model.txt"), docs):
        if not os.path.exists(p):
            sys.exit("py_predict: %s is missing: make it with bench/peers.sh --models %s"
                     % (p, a.model))
    qs_matrix = os.path.join(ROOT, "build", "bench", "qs-matrix")
    if not os.access(qs_matrix, os.X_OK):
        sys.exit("py_predict: %s is missing: make" % qs_matrix)
    qs = import_binding(a.site, a.dir)

    model = qs.Model(os.path.join(twin, "model.txt"))
    nf = model.num_features
    X = np.ascontiguousarray(read_letor_dense(docs, nf, a.docs or 10**9))
    log("py_predict: %d x %d model, %d rows x %d features, back end %s (auto: %s), one thread"
        % (trees, leaves, X.shape[0], nf, a.backend, qs.build_info()["auto"]))
    work = tempfile.mkdtemp(prefix="qs-py-bench-")
    qsm = os.path.join(work, "model.qsm")
    with open(qsm, "wb") as f:
        f.write(model.to_qsm())
    xpath = os.path.join(work, "X.f64")
    X.tofile(xpath)
    np.save(os.path.join(work, "X.npy"), X)

    venv = a.venv or os.path.join(a.dir, "venv")
    vpy = os.path.join(venv, "bin", "python")
    have_lleaves = os.access(vpy, os.X_OK) and subprocess.run(
        [vpy, "-c", "import lleaves"], capture_output=True).returncode == 0
    if not have_lleaves:
        log("py_predict: no lleaves in %s (bench/setup-peers.sh): lleaves left out" % venv)

    times = {"binding": [], "c": [], "lleaves": []}
    outs = {}

    def run_binding():
        out = model.predict(X, threads=1, backend=a.backend)
        for _ in range(a.reps):
            t0 = time.perf_counter()
            out = model.predict(X, threads=1, backend=a.backend)
            times["binding"].append(time.perf_counter() - t0)
        outs["binding"] = out

    def run_c():
        opath = os.path.join(work, "c.f64")
        r = subprocess.run([qs_matrix, "--backend", a.backend, "--threads", "1", "--reps",
                            str(a.reps), qsm, xpath, str(X.shape[0]), str(nf), opath],
                           capture_output=True, text=True, check=True)
        times["c"] += json.loads(r.stdout)["times_s"]
        outs["c"] = np.fromfile(opath)

    def run_lleaves():
        spec = {"model": os.path.join(twin, "model.txt"), "X": os.path.join(work, "X.npy"),
                "reps": a.reps, "out": os.path.join(work, "lleaves.npy"),
                "cache": os.path.join(twin, "lleaves-bs34-inline-large.so")}
        sp = os.path.join(work, "lleaves.json")
        json.dump(spec, open(sp, "w"))
        r = subprocess.run([vpy, "-c", LLEAVES_CHILD, sp], capture_output=True, text=True,
                           check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        res = json.loads(r.stdout.strip().splitlines()[-1])
        times["lleaves"] += res["times_s"]
        outs["lleaves"] = np.load(spec["out"])

    # the C call in this process too (ctypes on build/libqs.so: one call of
    # qs_score_matrix, a few microseconds of ctypes around it), alternated
    # with the binding's call, so that both see the same machine state
    # (the load of a shared machine moves both alike)
    import ctypes
    sos = sorted(f for f in os.listdir(os.path.join(ROOT, "build")) if f.startswith("libqs.so."))
    lib = ctypes.CDLL(os.path.join(ROOT, "build", sos[-1]))
    lib.qs_scorer_load.restype = ctypes.c_void_p
    lib.qs_scorer_load.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.qs_score_matrix.restype = ctypes.c_int
    lib.qs_score_matrix.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p,
                                    ctypes.c_uint, ctypes.c_void_p]
    errbuf = ctypes.create_string_buffer(1024)
    image = model.to_qsm()
    cs = lib.qs_scorer_load(image, len(image), errbuf)
    if not cs:
        sys.exit("py_predict: qs_scorer_load failed")
    bnum = -1 if a.backend == "auto" else [b["name"] for b in qs.backends()].index(a.backend)
    if bnum >= 0:
        lib.qs_scorer_prepare.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        if lib.qs_scorer_prepare(cs, bnum, errbuf) != 0:
            sys.exit("py_predict: qs_scorer_prepare failed")
    cout = np.empty(X.shape[0])
    paired = []

    def run_paired():
        for i in range(a.reps):
            for first in ((0, 1) if i % 2 == 0 else (1, 0)):
                t0 = time.perf_counter()
                if first == 0:
                    model.predict(X, threads=1, backend=a.backend)
                    tb = time.perf_counter() - t0
                else:
                    if lib.qs_score_matrix(cs, bnum, X.ctypes.data, X.shape[0], nf,
                                           cout.ctypes.data, 1, errbuf) != 0:
                        sys.exit("py_predict: qs_score_matrix failed")
                    tc = time.perf_counter() - t0
            paired.append((tb, tc))
        outs["c_inproc"] = cout.copy()

    methods = [("binding", run_binding), ("c", run_c), ("paired", run_paired)]
    if have_lleaves:
        methods.append(("lleaves", run_lleaves))
    for r in range(a.rounds):
        order = methods[r % len(methods):] + methods[:r % len(methods)]
        for name, fn in order:
            fn()
        log("py_predict: round %d of %d done" % (r + 1, a.rounds))

    med = {k: statistics.median(v) for k, v in times.items() if v}
    same = bool(np.array_equal(outs["binding"], outs["c"]) and
                np.array_equal(outs["binding"], outs["c_inproc"]))
    ratios = [tb / tc - 1 for tb, tc in paired]
    res = {"model": a.model, "rows": int(X.shape[0]), "features": nf, "backend": a.backend,
           "auto": qs.build_info()["auto"], "reps": a.reps, "rounds": a.rounds,
           "median_s": med, "min_s": {k: min(v) for k, v in times.items() if v},
           "binding_overhead": (med["binding"] - med["c"]) / med["c"],
           "binding_equals_c": same,
           "paired": {"pairs": len(paired),
                      "median_binding_s": statistics.median(p[0] for p in paired),
                      "median_c_s": statistics.median(p[1] for p in paired),
                      "median_overhead": statistics.median(ratios)}}
    ref = os.path.join(twin, "ref.npy")   # LightGBM's own predict(raw_score=True)
    if os.path.exists(ref) and np.load(ref).shape == outs["binding"].shape:
        res["binding_equals_lightgbm"] = bool(np.array_equal(np.load(ref), outs["binding"]))
    if "lleaves" in outs:
        res["lleaves_max_abs_diff"] = float(np.max(np.abs(outs["lleaves"] - outs["binding"])))
    if "binding_equals_lightgbm" in res:
        log("binding == LightGBM's predict (ref.npy): %s" % res["binding_equals_lightgbm"])
    log("| method | median s | min s | ns/doc/tree |")
    log("|---|---|---|---|")
    for k in ("binding", "c", "lleaves"):
        if k in med:
            log("| %s | %.4f | %.4f | %.2f |" % (k, med[k], res["min_s"][k],
                                                 med[k] / X.shape[0] / trees * 1e9))
    log("binding overhead over the C call: %+.2f %% (medians of separate runs), %+.2f %% "
        "(median of %d paired calls in one process: %.4f s against %.4f s); target < 5 %%; "
        "binding == C: %s" % (100 * res["binding_overhead"], 100 * res["paired"]["median_overhead"],
                              len(paired), res["paired"]["median_binding_s"],
                              res["paired"]["median_c_s"], same))
    print(json.dumps(res))
    subprocess.run(["rm", "-rf", work])
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
