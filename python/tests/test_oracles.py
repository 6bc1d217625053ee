"""Every oracle file of the oracle data (the list the bats conformance
files score: tests/20-conformance.bats, 21-conformance-large.bats and
16-catboost.bats), scored
through the binding, dense and CSR, on every back end this machine runs:
the bytes of qs-score for the same documents, and the training library's own
values (the oracle file)."""
import fnmatch
import glob
import os
import re
import subprocess

import numpy as np
import pytest

import qs_toolkit as qs
from conftest import FIX, ROOT, Letor, digits_of, fmt_scores, run_tool, shared_dir, tool


def oracle_list():
    """(id, model, docs, oracle, qs-score options) of every conform line."""
    out = []
    sh = shared_dir() or "/nonexistent"
    subst = {"$ORACLE": sh, "$C": os.path.join(FIX, "catboost"),
             "$N": os.path.join(FIX, "catboost-nonsym"), "$FIX": FIX}
    conf = re.compile(r'^\s*(?:OBLIVIOUS=yes\s+)?conform\s+"([^"]+)"\s+"([^"]+)"\s+"([^"]+)"(.*)$')
    shared_re = re.compile(r'\bshared\s+(\w+)\s+(\S+?)(\s+--[^;}]*)?\s*;?\s*}?\s*$')
    for name in ("20-conformance.bats", "21-conformance-large.bats", "16-catboost.bats"):
        with open(os.path.join(ROOT, "tests", name)) as f:
            for line in f:
                m = conf.match(line)
                parts = None
                if m:
                    parts = list(m.group(1, 2, 3)) + [m.group(4).split()]
                else:
                    m = shared_re.search(line)
                    if m and not line.lstrip().startswith(("shared()", "#")):
                        d = "$ORACLE/catboost/models/" + m.group(1)
                        parts = [d + "/model.json", d + "/test.letor", d + "/" + m.group(2),
                                 (m.group(3) or "").split()]
                if not parts or "$d" in parts[0]:
                    continue
                for i in range(3):
                    for k in sorted(subst, key=len, reverse=True):
                        parts[i] = parts[i].replace(k, subst[k])
                if any("$" in x for x in parts[:3]):
                    continue   # a helper's own lines, not an oracle
                opts = parts[3]
                tid = os.path.relpath(parts[2], sh if parts[2].startswith(sh) else ROOT)
                if opts:
                    tid += " " + " ".join(opts)
                out.append(pytest.param(*parts[:3], opts, id=tid))
    return out


ORACLES = oracle_list()


def oracle_model_folders():
    """Every model folder the oracle data holds: those of tests/oracle
    (SHA256SUMS) and the larger ones made on demand (SHA256SUMS.large)."""
    pats = ("lightgbm/models/*/model.*", "quickrank/models/*/model.*",
            "xgboost/*/model.*", "catboost/models/*/model.*")
    out = set()
    for sums in ("SHA256SUMS", "SHA256SUMS.large"):
        with open(os.path.join(ROOT, "tests", "oracle", sums)) as f:
            for line in f:
                name = line.split()[1]
                if any(fnmatch.fnmatchcase(name, p) and name.count("/") == p.count("/")
                       for p in pats):
                    out.add(os.path.dirname(name))
    return out


def test_the_list_covers_every_oracle_model(shared):
    """Every model folder of the oracle data is among the oracles scored,
    the large ones included whether made or not, and no folder unpacked
    is unknown to the checksum lists."""
    listed = {os.path.relpath(os.path.dirname(p.values[0]), shared) for p in ORACLES}
    want = oracle_model_folders()
    missing = sorted(want - listed)
    assert not missing, "oracle models not scored: %s" % missing
    # 46 in the repository, 9 made by scripts/oracle.sh large
    assert len(want) >= 55
    on_disk = set()
    for pat in ("lightgbm/models/*/", "quickrank/models/*/", "xgboost/*/", "catboost/models/*/"):
        for d in glob.glob(os.path.join(shared, pat)):
            if glob.glob(d + "model.*"):
                on_disk.add(os.path.relpath(d, shared))
    unknown = sorted(on_disk - want)
    assert not unknown, "model folders of %s in no checksum list: %s" % (shared, unknown)


_letor_cache = {}


def letor(path, precision):
    key = (path, precision)
    if key not in _letor_cache:
        _letor_cache[key] = Letor(path, precision)
    return _letor_cache[key]


def oracle_values(path, ncols):
    rows = [l.split() for l in open(path) if l.strip()]
    return np.array([[float(v) for v in r] for r in rows]).reshape(len(rows), -1)


@pytest.mark.parametrize("model_path,docs,oracle,opts", ORACLES)
def test_oracle(model_path, docs, oracle, opts, tmp_path):
    if model_path.startswith("/nonexistent") or not os.path.exists(model_path):
        if shared_dir() is None:
            pytest.fail("the oracle data is not unpacked in build/oracle (make oracle)")
        rel = os.path.relpath(model_path, shared_dir())
        with open(os.path.join(ROOT, "tests", "oracle", "SHA256SUMS.large")) as f:
            if any(line.split()[1] == rel for line in f if line.strip()):
                pytest.skip("%s is not in the repository: scripts/oracle.sh large makes it" % rel)
        pytest.fail("missing %s (the oracle data is incomplete)" % model_path)
    model = qs.Model(model_path)
    qsm = tmp_path / "m.qsm"
    run_tool("qs-compile", "-o", str(qsm), model_path)
    # the binding's in-memory compile is qs-compile's file, byte for byte
    assert model.to_qsm() == qsm.read_bytes()

    absent, transform = "default", False
    i = 0
    while i < len(opts):
        if opts[i] == "--absent":
            absent = opts[i + 1]
            i += 2
        elif opts[i] == "--transform":
            if i + 1 < len(opts) and not opts[i + 1].startswith("-"):
                transform = opts[i + 1]
                i += 2
            else:
                transform = True
                i += 1
        else:
            raise AssertionError("option %s not handled" % opts[i])

    info = model.info
    L = letor(docs, info["precision"])
    # CatBoost models take CatBoost's numbering: LETOR feature j + 1 is column j
    lead = model._lead
    nf = model.num_features + lead
    csr = L.csr(nf)[:, lead:]
    missing = (absent == "missing") or (absent == "default" and info["absent"] == "missing")
    dense = L.dense(nf, np.nan if missing else 0.0)[:, lead:]
    want = run_tool("qs-score", *opts, str(qsm), docs)
    want_dense = want
    if info["source"] == "lightgbm":
        # a dense matrix is read as LightGBM's dense input: its zero band
        want_dense = run_tool("qs-score", "--lightgbm-dense", *opts, str(qsm), docs)
    digits = digits_of(model)

    # The reference walk, the baselines and the emulated device are 10 to
    # 50 times slower than QuickScorer: on the large models they score
    # every k-th document (k so that documents x trees stays near 500,000;
    # the CSR and dense paths and the fast back ends score every one).
    n = csr.shape[0]
    step = max(1, -(-n * model.num_trees // 500_000))
    rows = np.arange(0, n, step)
    want_lines = want.splitlines(keepends=True)
    want_dense_lines = want_dense.splitlines(keepends=True)
    want_cut = b"".join(want_lines[i] for i in rows)
    want_dense_cut = b"".join(want_dense_lines[i] for i in rows)
    csr_cut, dense_cut = csr[rows], dense[rows]
    slow = {"walk", "struct", "walk-batch", "cuda-emu"}

    ran = []
    for b in qs.backends():
        if not b["available"]:
            continue
        name = b["name"]
        if name == "oblivious" and not info["oblivious"]:
            with pytest.raises(qs.UnsupportedError, match="oblivious"):
                model.predict(dense, backend=name)
            continue
        kw = dict(backend=name, transform=transform, threads=1)
        c, d, w, wd = (csr_cut, dense_cut, want_cut, want_dense_cut) if name in slow else \
            (csr, dense, want, want_dense)
        got = fmt_scores(model.predict(c, absent=absent, **kw), digits)
        assert got == w, "CSR, back end %s: differs from qs-score %s" % (name, " ".join(opts))
        got = fmt_scores(model.predict(d, **kw), digits)
        assert got == wd, "dense, back end %s: differs from qs-score" % name
        ran.append(name)
    assert "walk" in ran and "qs" in ran
    # auto with two threads and the float32 matrix: the same bytes
    got = fmt_scores(model.predict(dense, transform=transform, threads=2), digits)
    assert got == want_dense
    if info["precision"] == "float":
        got = fmt_scores(model.predict(dense.astype(np.float32), transform=transform), digits)
        assert got == want_dense

    # the training library's own values (LightGBM, XGBoost, QuickRank,
    # CatBoost predict()): equal bit for bit (float32 models: as float32)
    S = model.predict(csr, absent=absent, transform=transform)
    S = S.reshape(len(S), -1)
    O = oracle_values(oracle, S.shape[1])
    assert O.shape == S.shape
    if digits == 9:
        assert np.array_equal(O.astype(np.float32), S.astype(np.float32), equal_nan=True)
    else:
        assert np.array_equal(O, S, equal_nan=True)
