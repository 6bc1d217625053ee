#!/usr/bin/env python3
"""bench/catmodel.py: qs against lleaves and LightGBM on a categorical-heavy
LightGBM model: lleaves' own test model `mtpl2` (1,000 trees, 8,190
categorical splits, from lleaves' repository at a fixed commit; never
committed here), rows drawn from its features' listed categories and ranges.

    bench/setup-peers.sh                       # once: the bench venv
    $QS_BENCH_DIR/venv/bin/python bench/catmodel.py [--rows 20000] [--reps 5]
        [--model FILE] [--lleaves-grid quick|full|none] [--backends LIST]

Run it with the bench venv's Python (lleaves, lightgbm, numpy); qs comes
from this checkout's build (`make` first, or --qs DIR with bin/ and
build/bench/).  The model is downloaded once into $QS_BENCH_DIR/workloads/
mtpl2/ (sha256 checked), or taken from --model.

One thread everywhere.  Matrix view: a float64 matrix in memory, only the
predict call timed (qs: build/bench/qs-matrix, qs_score_matrix with each back
end; lleaves: Model.predict(n_jobs=1) for each compile setting of the grid,
compiled once and cached, the compile not timed; LightGBM:
Booster.predict(raw_score=True, num_threads=1)).  Text view (qs only): the
LETOR file to scores, qs-score as a whole process.  One warm-up, then
--reps timed calls; medians.  Exactness: every method against LightGBM's own
predict on the same float64 matrix, bit for bit.  Standard output: a
markdown table; progress on standard error.
"""
import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

LLEAVES_COMMIT = 'ced9b7003c5adfb9c855002b5b384c78d2bf8394'
MODEL_URL = ('https://raw.githubusercontent.com/siboehm/lleaves/%s/tests/models/mtpl2/model.txt'
             % LLEAVES_COMMIT)
MODEL_SHA256 = '5fc14bb5a1b221a698bce03477aace78985ad3f9fd265b2cbe1ad1e2b65b71bc'


def log(msg):
    print('catmodel: ' + msg, file=sys.stderr, flush=True)


def fetch_model(dest):
    path = os.path.join(dest, 'model.txt')
    if os.path.exists(path):
        return path
    os.makedirs(dest, exist_ok=True)
    log('downloading %s' % MODEL_URL)
    try:
        data = urllib.request.urlopen(MODEL_URL, timeout=60).read()
    except OSError as e:
        raise SystemExit('catmodel: cannot download %s (%s); fetch lleaves\' '
                         'tests/models/mtpl2/model.txt at commit %s some other way and pass '
                         '--model FILE' % (MODEL_URL, e, LLEAVES_COMMIT))
    if hashlib.sha256(data).hexdigest() != MODEL_SHA256:
        raise SystemExit('catmodel: %s: sha256 differs from the pinned one' % MODEL_URL)
    tmp = path + '.part'
    with open(tmp, 'wb') as fh:
        fh.write(data)
    os.replace(tmp, path)
    return path


def feature_infos(model_path):
    for line in open(model_path):
        if line.startswith('feature_infos='):
            return line.strip().split('=', 1)[1].split(' ')
    raise SystemExit('catmodel: %s: no feature_infos line' % model_path)


def make_rows(model_path, n, seed):
    """Rows of the model's features: a listed category for a categorical
    feature (its feature_infos is a ':'-list), else a value in [lo, hi],
    integers where the range is integral; 1% NaN everywhere."""
    rng = np.random.default_rng(seed)
    infos = feature_infos(model_path)
    X = np.empty((n, len(infos)))
    for j, info in enumerate(infos):
        if info.startswith('['):
            lo, hi = (float(v) for v in info[1:-1].split(':'))
            if lo == int(lo) and hi == int(hi):
                X[:, j] = rng.integers(int(lo), int(hi) + 1, n)
            else:
                X[:, j] = rng.uniform(lo, hi, n)
        elif info == 'none':
            X[:, j] = 0.0
        else:
            cats = [int(v) for v in info.split(':') if int(v) >= 0]
            X[:, j] = rng.choice(cats, n)
    X[rng.random(X.shape) < 0.01] = np.nan
    return X


def write_letor(path, X):
    with open(path, 'w') as fh:
        for row in X:
            fh.write('0 ' + ' '.join('%d:%s' % (j, 'nan' if np.isnan(v) else repr(float(v)))
                                     for j, v in enumerate(row)) + '\n')


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])


def agree(got, ref):
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    same = int(np.sum(got.view(np.uint64) == ref.view(np.uint64)))
    if same == len(ref):
        return 'exact (%d/%d)' % (same, len(ref))
    return '%d/%d bit-exact, max |d| %.3g' % (same, len(ref), float(np.max(np.abs(got - ref))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rows', type=int, default=20000)
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--model')
    ap.add_argument('--dir', default=os.environ.get('QS_BENCH_DIR') or '/tmp/qs-bench')
    ap.add_argument('--qs', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument('--backends', default='auto,vqs-avx2,vqs-avx512,qs,walk,vpred')
    ap.add_argument('--lleaves-grid', default='quick', choices=('quick', 'full', 'none'))
    a = ap.parse_args()

    work = os.path.join(a.dir, 'workloads', 'mtpl2')
    model = a.model or fetch_model(work)
    with open(model, 'rb') as fh:
        if hashlib.sha256(fh.read()).hexdigest() != MODEL_SHA256:
            log('%s is not lleaves\' mtpl2 at %s (sha256 differs): timing it anyway' % (model, LLEAVES_COMMIT[:10]))
    os.makedirs(work, exist_ok=True)
    qsbin = os.path.join(a.qs, 'bin')
    qsm = os.path.join(work, 'model.qsm')
    subprocess.run('"%s" "%s" | "%s" -o "%s" -' % (os.path.join(qsbin, 'qs-convert'), model,
                                                    os.path.join(qsbin, 'qs-compile'), qsm),
                   shell=True, check=True)
    X = make_rows(model, a.rows, a.seed)
    xf = os.path.join(work, 'X-%d-%d.f64' % (a.rows, a.seed))
    X.tofile(xf)
    docs = os.path.join(work, 'docs-%d-%d.letor' % (a.rows, a.seed))
    write_letor(docs, X)

    import lightgbm as lgb
    bst = lgb.Booster(model_file=model)
    ref = bst.predict(X, raw_score=True, num_threads=1)
    rows = []

    # LightGBM's own predict
    bst.predict(X, raw_score=True, num_threads=1)
    ts = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        bst.predict(X, raw_score=True, num_threads=1)
        ts.append(time.perf_counter() - t0)
    rows.append(('LightGBM %s' % lgb.__version__, 'matrix', median(ts), 'exact (reference)'))
    log('LightGBM: %.4f s' % median(ts))

    # lleaves, each compile setting of the grid
    if a.lleaves_grid != 'none':
        import lleaves
        from importlib.metadata import version
        ll_version = version('lleaves')
        grid = [(34, 'large', True), (10, 'small', True), (10, 'large', True), (34, 'small', True)]
        if a.lleaves_grid == 'full':
            grid = [(bs, cm, inl) for bs in (1, 5, 10, 20, 34, 100) for cm in ('small', 'large')
                    for inl in (True, False)]
        for bs, cm, inl in grid:
            cache = os.path.join(work, 'lleaves-bs%d-%s-%s.so' % (bs, cm, 'inline' if inl else 'noinline'))
            m = lleaves.Model(model_file=model)
            t0 = time.perf_counter()
            m.compile(cache=cache, raw_score=True, fblocksize=bs, fcodemodel=cm, finline=inl)
            log('lleaves bs=%d %s inline=%s: compiled/loaded in %.1f s' % (bs, cm, inl, time.perf_counter() - t0))
            out = m.predict(X, n_jobs=1)
            ts = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                out = m.predict(X, n_jobs=1)
                ts.append(time.perf_counter() - t0)
            rows.append(('lleaves %s (fblocksize %d, fcodemodel %s, finline %s)'
                         % (ll_version, bs, cm, inl),
                         'matrix', median(ts), agree(out, ref)))
            log('%s: %.4f s' % (rows[-1][0], median(ts)))

    # qs: the matrix view per back end, and the text path
    qm = os.path.join(a.qs, 'build', 'bench', 'qs-matrix')
    for b in a.backends.split(','):
        out = os.path.join(work, 'qs-%s.f64' % b)
        r = subprocess.run([qm, '--backend', b, '--threads', '1', '--reps', str(a.reps), qsm, xf,
                            str(a.rows), str(X.shape[1]), out], capture_output=True, text=True)
        if r.returncode != 0:
            rows.append(('qs %s' % b, 'matrix', None, 'failed: ' + r.stderr.strip()[:80]))
            continue
        j = json.loads(r.stdout)
        got = np.fromfile(out, dtype=np.float64)
        rows.append(('qs %s' % (b if j['ran_as'] == b else '%s (%s)' % (b, j['ran_as'])), 'matrix',
                     j['median_s'], agree(got, ref)))
        log('%s: %.4f s' % (rows[-1][0], j['median_s']))
    qscore = os.path.join(qsbin, 'qs-score')
    for b in ('auto',):
        ts = []
        for rep in range(a.reps + 1):
            with tempfile.TemporaryFile() as fo:
                t0 = time.perf_counter()
                subprocess.run([qscore, '--threads', '1', '--backend', b, qsm, docs], stdout=fo, check=True)
                t = time.perf_counter() - t0
                if rep:
                    ts.append(t)
                fo.seek(0)
                got = np.array([float(v) for v in fo.read().split()])
        rows.append(('qs-score %s' % b, 'text', median(ts), agree(got, ref)))
        log('%s: %.4f s' % (rows[-1][0], median(ts)))

    best_ll = min((r[2] for r in rows if r[0].startswith('lleaves') and r[2]), default=None)
    cpu = 'unknown CPU'
    for line in open('/proc/cpuinfo'):
        if line.startswith('model name'):
            cpu = line.split(':', 1)[1].strip()
            break
    print('Model: lleaves mtpl2 (LightGBM, 1,000 trees, 8,190 categorical splits), %d rows, '
          'one thread, %d repetitions, medians. Machine: %s, %d CPUs, %s.\n'
          % (a.rows, a.reps, cpu, os.cpu_count(), platform.machine()))
    print('| method | view | seconds | µs/row | × best lleaves | agreement with LightGBM |')
    print('|---|---|---:|---:|---:|---|')
    for name, view, t, ag in rows:
        if t is None:
            print('| %s | %s | — | — | — | %s |' % (name, view, ag))
            continue
        print('| %s | %s | %.4f | %.2f | %s | %s |' % (
            name, view, t, t / a.rows * 1e6, '%.2f' % (best_ll / t) if best_ll else '—', ag))


if __name__ == '__main__':
    main()
