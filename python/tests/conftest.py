"""Shared set-up of the binding's tests: where the checkout's tools and the
reference data are, and a LETOR reader that keeps every value as qs-score
reads it (strtod for models that read doubles, strtof for float32 ones)."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))          # the checkout
FIX = os.path.join(ROOT, "tests", "fixtures")


def shared_dir():
    """The oracle data: the repository's tests/oracle, unpacked by make into
    build/oracle (or QS_ORACLE_DATA)."""
    d = os.environ.get("QS_ORACLE_DATA") or os.path.join(ROOT, "build", "oracle")
    return d if os.path.isdir(d) else None


def tool(name):
    """A qs tool: the checkout's bin/ first (as the bats suite), then PATH."""
    p = os.path.join(ROOT, "bin", name)
    if os.access(p, os.X_OK):
        return p
    p = shutil.which(name)
    if not p:
        pytest.skip("%s not found (build the checkout: make)" % name)
    return p


def run_tool(name, *args, input=None):
    r = subprocess.run([tool(name), *args], input=input, capture_output=True)
    if r.returncode != 0:
        raise AssertionError("%s %s failed (%d): %s" % (name, " ".join(args), r.returncode,
                                                       r.stderr.decode(errors="replace")))
    return r.stdout


@pytest.fixture
def shared():
    d = shared_dir()
    if d is None:
        pytest.fail("the oracle data is not unpacked in build/oracle (make oracle)")
    return d


_libc = ctypes.CDLL(None)
_libc.strtof.restype = ctypes.c_float
_libc.strtof.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]


def strtof(tok):
    return float(_libc.strtof(tok.encode(), None))


class Letor:
    """A LETOR/SVMLight file as rows of (id, value) pairs, labels and qids."""

    def __init__(self, path, precision):
        conv = strtof if precision == "float" else float
        self.labels, self.qids, self.rows = [], [], []
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                toks = line.split()
                self.labels.append(toks[0])
                qid = None
                pairs = []
                for t in toks[1:]:
                    k, v = t.split(":", 1)
                    if k == "qid":
                        qid = v
                    else:
                        pairs.append((int(k), conv(v)))
                self.qids.append(qid)
                self.rows.append(pairs)

    def csr(self, ncols, dtype=np.float64):
        import scipy.sparse
        indptr = [0]
        indices, data = [], []
        for pairs in self.rows:
            for j, v in pairs:
                indices.append(j)
                data.append(v)
            indptr.append(len(indices))
        width = max([ncols] + [j + 1 for j in indices])
        return scipy.sparse.csr_matrix((np.array(data, dtype=dtype), np.array(indices, np.int32),
                                        np.array(indptr, np.int64)), shape=(len(self.rows), width))

    def dense(self, ncols, fill, dtype=np.float64):
        X = np.full((len(self.rows), ncols), fill, dtype=dtype)
        for i, pairs in enumerate(self.rows):
            for j, v in pairs:
                if j < ncols:
                    X[i, j] = v
        return X


def fmt_scores(S, digits):
    """Scores as qs-score prints them: %.{digits}g, tab-separated columns."""
    S = np.asarray(S)
    if S.ndim == 1:
        S = S.reshape(-1, 1)
    def one(v):
        if v != v:
            return "-nan" if np.signbit(v) else "nan"   # as glibc's printf
        return "%.*g" % (digits, v)
    return "".join("\t".join(one(v) for v in row) + "\n" for row in S).encode()


def digits_of(model):
    return 17 if model.info["accumulate"] == "double" else 9
