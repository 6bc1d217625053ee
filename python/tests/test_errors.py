"""Bad input: a clear exception carrying the library's message, never a
crash (this file also runs under AddressSanitizer: make python-asan)."""
import os
import threading

import numpy as np
import pytest

import qs_toolkit as qs
from conftest import FIX

LGB = os.path.join(FIX, "lgb-l8", "model.txt.zst")


@pytest.fixture
def m():
    return qs.Model(LGB)


def test_wrong_dtype(m):
    X = np.zeros((3, m.num_features))
    for dt in (np.int64, np.int32, np.bool_, np.complex128, np.float16, object):
        with pytest.raises(TypeError, match="float64 or float32"):
            m.predict(X.astype(dt))
    with pytest.raises(TypeError, match="byte order"):
        m.predict(X.astype(">f8"))
    with pytest.raises(TypeError, match="NumPy array or a SciPy CSR"):
        m.predict(X.tolist())
    with pytest.raises(TypeError, match="float64 or float32"):
        import scipy.sparse
        m.predict(scipy.sparse.csr_matrix(X.astype(np.int64)))


def test_wrong_shape(m):
    nf = m.num_features
    with pytest.raises(ValueError, match="X has %d columns, the model has %d features" % (nf - 1, nf)):
        m.predict(np.zeros((3, nf - 1)))
    with pytest.raises(ValueError, match="training data's count"):
        m.predict(np.zeros((3, nf + 1)))      # LightGBM and XGBoost: as their predict
    with pytest.raises(ValueError, match="2-D"):
        m.predict(np.zeros(nf))
    with pytest.raises(ValueError, match="2-D"):
        m.predict(np.zeros((2, 3, nf)))
    with pytest.raises(ValueError, match="columns"):
        m.predict(np.zeros((0, 0)))
    # a model whose feature count is the features its trees use (QuickRank):
    # more columns are ignored
    q = qs.Model(os.path.join(FIX, "quickrank", "tiny.xml"))
    X = np.ones((2, q.num_features))
    assert np.array_equal(q.predict(np.hstack([X, np.ones((2, 5))])), q.predict(X))


def test_non_contiguous_views_are_read_not_refused(m):
    X = np.random.default_rng(0).normal(size=(50, 3 * m.num_features))
    V = X[::2, ::3]
    assert not V.flags.c_contiguous
    assert np.array_equal(m.predict(V), m.predict(np.ascontiguousarray(V)))


def test_bad_arguments(m):
    X = np.zeros((2, m.num_features))
    with pytest.raises(ValueError, match="unknown back end 'nope'"):
        m.predict(X, backend="nope")
    with pytest.raises(qs.UnsupportedError, match="oblivious"):
        m.predict(X, backend="oblivious")
    with pytest.raises(ValueError, match="trees must be at least 1"):
        m.predict(X, trees=0)
    with pytest.raises(TypeError):
        m.predict(X, trees=1.5)
    with pytest.raises(ValueError, match="threads"):
        m.predict(X, threads=0)
    # huge counts: a message naming the argument (no bare OverflowError);
    # more iterations than the model has score the whole model
    for t in (2**64, 2**63, 10**30):
        with pytest.raises(ValueError, match=r"threads must be 1 \.\.\. 4096, not %d" % t):
            m.predict(X, threads=t)
        assert np.array_equal(m.predict(X, trees=t), m.predict(X))
    for t in (-1, -2**64):
        with pytest.raises(ValueError, match="trees must be at least 1, not %d" % t):
            m.predict(X, trees=t)
        with pytest.raises(ValueError, match="threads must be"):
            m.predict(X, threads=t)
    with pytest.raises(ValueError, match="digits must be 1 ... 17"):
        qs.format_score(1.0, 2**64)
    with pytest.raises(ValueError, match="bad cutoff"):
        qs.eval.ndcg([1, 0], [0.5, 0.25], k=2**64)
    with pytest.raises(ValueError):
        m.predict(X, transform="no-such-function")
    with pytest.raises(qs.UnsupportedError):
        m.predict(X, transform="exp")         # not this model's: would not be exact
    with pytest.raises(ValueError, match="absent"):
        m.predict(X, absent="zero")           # dense: no absent entries
    import scipy.sparse
    with pytest.raises(ValueError, match="absent must be"):
        m.predict(scipy.sparse.csr_matrix(X), absent="sometimes")
    with pytest.raises(TypeError, match="CSR"):
        m.predict(scipy.sparse.csc_matrix(X))
    cuda = [b for b in qs.backends() if b["name"] == "cuda"]
    if cuda and not cuda[0]["available"]:
        with pytest.raises((qs.UnsupportedError, qs.DeviceError)):
            m.predict(X, backend="cuda")


def test_malformed_csr(m):
    import scipy.sparse
    C = scipy.sparse.csr_matrix(np.ones((2, m.num_features)))
    C.indices[0] = 10**6
    with pytest.raises(ValueError, match="malformed CSR|column index"):
        m.predict(C)
    C = scipy.sparse.csr_matrix(np.ones((2, m.num_features)))
    C.indptr[1] = 10**6
    with pytest.raises(ValueError, match="malformed CSR"):
        m.predict(C)
    # the arrays as given to the C part, a shape SciPy would not make: the
    # largest row count (rows + 1 would overflow), a negative one
    nf = m.num_features
    ip, ix, dv = np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0)
    with pytest.raises(ValueError, match="indptr must have rows \\+ 1 entries"):
        m._predict_csr((2**63 - 1, nf), ip, ix, dv)
    with pytest.raises(ValueError, match="negative shape"):
        m._predict_csr((-1, nf), ip, ix, dv)
    assert m._predict_csr((0, nf), ip, ix, dv).shape == (0,)


def test_not_a_model(tmp_path):
    with pytest.raises(qs.FormatError):
        qs.Model(b"this is not a model\n")
    with pytest.raises(qs.FormatError):
        qs.Model(b"")
    with pytest.raises(qs.FormatError):
        qs.Model(os.path.join(FIX, "quickrank", "bad_garbage.bin"))
    with pytest.raises(qs.FormatError, match="zstd"):
        qs.Model(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    with pytest.raises(FileNotFoundError):
        qs.Model(str(tmp_path / "absent.txt"))
    with pytest.raises(TypeError):
        qs.Model(42)
    with pytest.raises(ValueError, match="unknown model format"):
        qs.Model(LGB, format="sklearn")
    # a .qsm cut short, and one with a byte changed: the checksums say so
    img = qs.Model(LGB).to_qsm()
    for bad in (img[:100], img[:-1], img[:70] + bytes([img[70] ^ 1]) + img[71:]):
        with pytest.raises(qs.Error) as e:
            qs.Model(bad)
        assert str(e.value)
    # refused, not approximated: a RankLib random forest
    with pytest.raises(qs.UnsupportedError) as e:
        qs.Model(os.path.join(FIX, "quickrank", "bad_random_forest.txt"))
    assert e.value.code == 2


def test_model_files_read_bounded(tmp_path, monkeypatch):
    """A path is read as the tools read it: the read stops at a first byte
    that starts no model (/dev/zero), at QS_MAX_INPUT, and at the size a
    .qsm header records."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(qs.FormatError, match="unrecognised model format"):
        qs.Model("/dev/zero")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 256 * 1024
    monkeypatch.setenv("QS_MAX_INPUT", "1K")
    with pytest.raises(qs.LimitError, match="larger than the limit of 1024 bytes"):
        qs.Model(LGB)
    with pytest.raises(qs.LimitError, match="larger than the limit of 1024 bytes"):
        qs.Model("/dev/zero", format="lightgbm")   # (forced: no early stop)
    monkeypatch.setenv("QS_MAX_INPUT", "-1")
    with pytest.raises(ValueError, match="bad QS_MAX_INPUT '-1'"):
        qs.Model(LGB)
    monkeypatch.delenv("QS_MAX_INPUT")
    img = qs.Model(LGB).to_qsm()
    (tmp_path / "m.qsm").write_bytes(img)
    assert qs.Model(str(tmp_path / "m.qsm")).num_trees == qs.Model(LGB).num_trees
    (tmp_path / "padded.qsm").write_bytes(img + b"\0" * 1000000)
    with pytest.raises(qs.FormatError, match="longer than the %d bytes its header records" % len(img)):
        qs.Model(str(tmp_path / "padded.qsm"))


def test_misaligned_and_fortran_arrays(m):
    """float64 and float32 values at odd byte offsets, C and Fortran order:
    read as they are (no misaligned load), the same scores as a copy."""
    rng = np.random.default_rng(3)
    nf = m.num_features
    X = rng.normal(size=(37, nf))
    for dt in (np.float64, np.float32):
        Y = X.astype(dt)
        for order in ("C", "F"):
            raw = np.ascontiguousarray(Y) if order == "C" else np.asfortranarray(Y)
            buf = bytearray(raw.nbytes + 1)
            buf[1:] = raw.tobytes(order="A")
            V = np.frombuffer(buf, dtype=dt, offset=1).reshape(Y.shape, order=order)
            assert not V.flags.aligned
            assert np.array_equal(m.predict(V), m.predict(np.array(Y)))
            assert np.array_equal(m.predict(V, transform=True), m.predict(np.array(Y), transform=True))
            assert np.array_equal(m.predict_leaves(V), m.predict_leaves(np.array(Y)))


def test_close_while_checking_csr():
    """close() from another thread while predict(csr) checks its arguments:
    never a read of the freed scorer (AddressSanitizer in the sanitizer
    pass); each call scores or raises 'closed'."""
    import scipy.sparse
    rng = np.random.default_rng(5)
    for _ in range(60):
        m = qs.Model(LGB)
        C = scipy.sparse.random(64, m.num_features, density=0.3, format="csr", random_state=rng)
        outcomes = []

        def work():
            for _ in range(40):
                try:
                    m.predict(C, threads=1)
                    outcomes.append(1)
                except ValueError as e:
                    assert "closed" in str(e)
                    outcomes.append(0)

        ts = [threading.Thread(target=work) for _ in range(3)]
        for t in ts:
            t.start()
        m.close()
        for t in ts:
            t.join()
        assert len(outcomes) == 120


def test_closed_model(m):
    X = np.zeros((2, m.num_features))
    m.predict(X)
    m.close()
    assert m.closed
    for call in (lambda: m.predict(X), lambda: m.predict_leaves(X), lambda: m.info,
                 lambda: m.to_qsm()):
        with pytest.raises(ValueError, match="closed"):
            call()
    m.close()                         # twice is fine
    with qs.Model(LGB) as m2:
        m2.predict(X)
    assert m2.closed


def test_close_while_scoring():
    """close() waits for the calls in flight; later calls raise."""
    m = qs.Model(LGB)
    X = np.broadcast_to(np.random.default_rng(1).normal(size=(1, m.num_features)),
                        (200000, m.num_features))
    errors, results = [], []

    def work():
        for _ in range(5):
            try:
                results.append(m.predict(X, threads=1))
            except ValueError as e:
                errors.append(str(e))

    t = threading.Thread(target=work)
    t.start()
    m.close()
    t.join()
    assert all("closed" in e for e in errors)
    assert len(errors) + len(results) == 5


def test_uninitialised_model():
    m = qs.Model.__new__(qs.Model)
    with pytest.raises(ValueError, match="not loaded"):
        m.predict(np.zeros((1, 1)))
