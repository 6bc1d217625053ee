"""qs against the other tree-ensemble scorers ("peers"), two views each.

Normally started by bench/peers.sh, with the Python of the bench-only virtual
environment that bench/setup-peers.sh makes.  See bench/README.md, "Peers".

For each size TREES x LEAVES, three models of that size, trained on MQ2008:
  xgb  the XGBoost model of bench/run.sh (gen_workload.py, Debian's XGBoost 1.7.4)
  lgb  its LightGBM twin (lambdarank, num_leaves=LEAVES, trained here)
  cb   a CatBoost twin (oblivious trees of depth log2(LEAVES), trained here)
and every scorer that reads that model, in two views:
  text    LETOR text file -> scores: qs-score as a whole process (start, model
          load, parsing, scoring, printing); a peer in a fresh Python process,
          timed from after its model load: its own text reader where it has one
          (XGBoost's libsvm DMatrix, LightGBM's file predict, CatBoost's libsvm
          Pool), else scikit-learn's load_svmlight_file to a dense matrix,
          then predict, then writing the scores as text.
  matrix  a dense matrix already in memory -> scores in memory: only the
          predict call is timed (qs: qs_score_matrix, 1 thread, in
          bench/qs_matrix.c), median of --reps calls after one warm-up call.
Agreement: every output is compared with the training library's own scores
(bit-exact count, max |difference|).
"""
import argparse
import csv
import datetime
import hashlib
import io
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SYSTEM = 0, 1, 2, 4
GRID_TREES = (1000, 5000, 20000)
GRID_LEAVES = (8, 16, 32, 64)
QUICK = ('1000x64', '1000x8')
MQ2008_TRAIN = 'letor/mq2008/train.txt'
NCOLS = 47          # MQ2008: feature ids 1..46; column j of every matrix is feature id j
DEBIAN_PY = '/usr/bin/python3'
FAMILIES = ('xgb', 'lgb', 'cb')
FAMILY_LABEL = {'xgb': 'XGBoost model', 'lgb': 'LightGBM twin', 'cb': 'CatBoost twin (oblivious)'}
# method -> (families it scores, python ('venv' | 'debian' | None for qs))
PEERS = {
    'qs': (('xgb', 'lgb', 'cb'), None),
    'xgboost-1.7': (('xgb',), 'debian'),
    'xgboost-3': (('xgb',), 'venv'),
    'lightgbm': (('lgb',), 'venv'),
    'lleaves': (('lgb',), 'venv'),
    'tl2cgen': (('xgb', 'lgb'), 'venv'),
    'onnxruntime': (('xgb', 'lgb'), 'venv'),
    'catboost': (('cb',), 'venv'),
    'fastforest': (('xgb',), 'venv'),
}
PEER_MODULE = {'xgboost-3': 'xgboost', 'lightgbm': 'lightgbm', 'lleaves': 'lleaves',
               'tl2cgen': 'tl2cgen', 'onnxruntime': 'onnxruntime', 'catboost': 'catboost'}
PEER_LABEL = {'qs': 'qs', 'xgboost-1.7': 'XGBoost 1.7 (Debian)', 'xgboost-3': 'xgboost 3',
              'lightgbm': 'LightGBM', 'lleaves': 'lleaves', 'tl2cgen': 'TL2cgen',
              'onnxruntime': 'ONNX Runtime', 'catboost': 'CatBoost', 'fastforest': 'FastForest'}


def log(msg):
    print('peers: ' + msg, file=sys.stderr, flush=True)


def die(msg, code=EXIT_SYSTEM):
    print('peers: error: ' + msg, file=sys.stderr, flush=True)
    sys.exit(code)


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def fmt_num(x):
    if x is None:
        return '—'
    ax = abs(x)
    if ax >= 100:
        return '{:,.0f}'.format(x)
    if ax >= 10:
        return '%.1f' % x
    if ax >= 1:
        return '%.2f' % x
    return '%.3g' % x


# ============================================================================ child side
# Runs in a fresh process, under the venv's Python or Debian's (xgboost-1.7):
# imports only what its peer needs.

def read_letor_dense(path, fill, ncols):
    """scikit-learn's libsvm reader (correctly rounded strtod), then dense."""
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    X, _, _ = load_svmlight_file(path, n_features=ncols, zero_based=True, query_id=True,
                                 dtype=np.float64)
    X = X.tocsr()
    D = np.full(X.shape, fill, dtype=np.float64)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    D[rows, X.indices] = X.data
    return D


class Peer:
    """load(); predict_matrix(X) -> 1-d array; predict_text(path) -> 1-d array."""
    in_dtype = 'float64'
    reader = 'sklearn'   # the text view's reader when the peer has none of its own:
    # scikit-learn's load_svmlight_file, to a dense matrix

    def __init__(self, spec):
        self.spec = spec
        self.fam = spec['family']
        self.model = spec['model']

    def text_matrix(self, path):
        import numpy as np
        fill = float('nan') if self.fam == 'xgb' else 0.0
        X = read_letor_dense(path, fill, NCOLS)
        if self.fam == 'cb':
            X = X[:, 1:]
        return np.ascontiguousarray(X, dtype=self.in_dtype)

    def predict_text(self, path):
        X = self.text_matrix(path)
        if hasattr(self, 'wrap'):
            X = self.wrap(X)
        return self.predict_matrix(X)


class XGBPeer(Peer):
    in_dtype = 'float32'
    reader = 'libsvm DMatrix'

    def load(self):
        import xgboost as xgb
        self.xgb = xgb
        self.bst = xgb.Booster(model_file=self.model)
        self.bst.set_param({'nthread': 1})

    def predict_matrix(self, X):
        return self.bst.inplace_predict(X, predict_type='margin')

    def predict_text(self, path):
        dm = self.xgb.DMatrix(path + '?format=libsvm', nthread=1, silent=True)
        return self.bst.predict(dm, output_margin=True)


class LGBPeer(Peer):
    # LightGBM's LibSVM reader refuses 'qid:' tokens: it reads a copy of the
    # documents without them (the same text otherwise).
    reader = 'file predict, qid: removed'

    def load(self):
        import lightgbm as lgb
        self.bst = lgb.Booster(model_file=self.model)

    def predict_matrix(self, X):
        return self.bst.predict(X, raw_score=True, num_threads=1)

    def predict_text(self, path):
        return self.bst.predict(self.spec['docs_noqid'], raw_score=True, num_threads=1)


class LleavesPeer(Peer):
    def load(self):
        import lleaves
        self.m = lleaves.Model(model_file=self.model)
        self.m.compile(cache=self.spec['cache'], **self.spec.get('options', {}))

    def predict_matrix(self, X):
        return self.m.predict(X, n_jobs=1)


class TL2cgenPeer(Peer):
    def load(self):
        import tl2cgen
        self.tl2cgen = tl2cgen
        self.in_dtype = 'float32' if self.fam == 'xgb' else 'float64'
        self.p = tl2cgen.Predictor(self.spec['cache'], nthread=1)

    def wrap(self, X):
        return self.tl2cgen.DMatrix(X, dtype=self.in_dtype)

    def predict_matrix(self, X):
        return self.p.predict(X, pred_margin=True, verbose=False)


class ONNXPeer(Peer):
    in_dtype = 'float32'

    def load(self):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.sess = ort.InferenceSession(self.spec['cache'], so, providers=['CPUExecutionProvider'])
        self.iname = self.sess.get_inputs()[0].name
        self.oname = self.sess.get_outputs()[0].name

    def predict_matrix(self, X):
        return self.sess.run([self.oname], {self.iname: X})[0]


class CatBoostPeer(Peer):
    reader = 'libsvm Pool'

    def load(self):
        import catboost
        self.cb = catboost
        self.m = catboost.CatBoost()
        self.m.load_model(self.model)

    def predict_matrix(self, X):
        return self.m.predict(X, prediction_type='RawFormulaVal', thread_count=1)

    def predict_text(self, path):
        pool = self.cb.Pool('libsvm://' + path, thread_count=1)
        return self.m.predict(pool, prediction_type='RawFormulaVal', thread_count=1)


CHILD_PEERS = {'xgboost-1.7': XGBPeer, 'xgboost-3': XGBPeer, 'lightgbm': LGBPeer,
               'lleaves': LleavesPeer, 'tl2cgen': TL2cgenPeer, 'onnxruntime': ONNXPeer,
               'catboost': CatBoostPeer}


def child_main(spec_path):
    """One run of one peer in one view; writes spec['result'] (JSON) and spec['out'] (.npy)."""
    with open(spec_path) as f:
        spec = json.load(f)
    import numpy as np
    peer = CHILD_PEERS[spec['peer']](spec)
    t0 = time.perf_counter()
    peer.load()
    if spec['view'] == 'text' and peer.reader == 'sklearn':
        import sklearn.datasets  # noqa: F401  (the import is not timed)
    load_s = time.perf_counter() - t0
    res = {'load_s': load_s, 'times_s': []}
    if spec['view'] == 'text':
        t0 = time.perf_counter()
        pred = np.asarray(peer.predict_text(spec['docs'])).reshape(-1)
        t1 = time.perf_counter()
        digits = 9 if pred.dtype == np.float32 else 17
        with open(spec['out_text'], 'w', encoding='ascii', newline='\n') as f:
            f.write(''.join(['%.*g\n' % (digits, v) for v in pred.tolist()]))
        t2 = time.perf_counter()
        res['times_s'] = [t2 - t0]
        res['predict_s'] = t1 - t0
        res['write_s'] = t2 - t1
    else:
        X = np.load(spec['matrix'])
        if spec['family'] == 'cb':
            X = X[:, 1:]
        X = np.ascontiguousarray(X, dtype=peer.in_dtype)
        if hasattr(peer, 'wrap'):
            X = peer.wrap(X)
        pred = np.asarray(peer.predict_matrix(X)).reshape(-1)     # warm-up
        for _ in range(spec['reps']):
            t0 = time.perf_counter()
            pred = peer.predict_matrix(X)
            res['times_s'].append(time.perf_counter() - t0)
        pred = np.asarray(pred).reshape(-1)
    np.save(spec['out'], pred)
    res['out_dtype'] = str(pred.dtype)
    res['threads'] = len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else 0
    with open(spec['result'], 'w') as f:
        json.dump(res, f)


# ============================================================================ parent side

def venv_has(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def peer_status(venv):
    """peer -> reason it cannot run (None: it can)."""
    recorded = {}
    try:
        with open(os.path.join(venv, 'peers-status.tsv')) as f:
            for line in f:
                p = line.rstrip('\n').split('\t')
                if len(p) == 3:
                    recorded[p[0]] = p[2] if p[1] != 'ok' else None
    except OSError:
        pass
    why = {}
    for peer, (_, py) in PEERS.items():
        if peer == 'qs':
            why[peer] = None
        elif peer == 'fastforest':
            why[peer] = recorded.get('fastforest') or \
                'not pip-installable (XGBoost-FastForest is a C++ library with no PyPI package)'
        elif peer == 'xgboost-1.7':
            r = subprocess.run([DEBIAN_PY, '-c', 'import xgboost, numpy; print(xgboost.__version__)'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            why[peer] = None if r.returncode == 0 else \
                "Debian's python3-xgboost is missing (apt-get install python3-xgboost)"
        else:
            mod = PEER_MODULE[peer]
            if venv_has(mod):
                why[peer] = None
            else:
                why[peer] = 'not installed in the bench venv' + \
                    (': ' + recorded[peer] if recorded.get(peer) else
                     ' (run bench/setup-peers.sh)')
    if why.get('onnxruntime') is None and not venv_has('onnxmltools'):
        why['onnxruntime'] = 'onnxmltools (the converter) is not installed in the bench venv'
    if why.get('tl2cgen') is None and not venv_has('treelite'):
        why['tl2cgen'] = 'treelite (its model loader) is not installed in the bench venv'
    return why


def read_train(shared):
    """MQ2008 train as a CSR matrix (column = feature id), labels, group sizes."""
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    path = os.path.join(shared, MQ2008_TRAIN)
    with open(path, 'rb') as f:
        raw = f.read()
    X, y, qid = load_svmlight_file(io.BytesIO(raw), n_features=NCOLS, zero_based=True,
                                   query_id=True, dtype=np.float64)
    _, first, counts = np.unique(qid, return_index=True, return_counts=True)
    groups = counts[np.argsort(first)]
    return X, y, qid, groups


def cached(path, meta_want):
    try:
        with open(os.path.join(path, 'meta.json')) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    if meta.get('want') != meta_want:
        return False
    return all(os.path.isfile(os.path.join(path, fn)) and sha256(os.path.join(path, fn)) == h
               for fn, h in meta.get('sha256', {}).items())


def finish_cache(tmp, path, want, extra):
    meta = dict(extra, want=want,
                sha256={fn: sha256(os.path.join(tmp, fn)) for fn in sorted(os.listdir(tmp))})
    with open(os.path.join(tmp, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.rename(tmp, path)


def train_lgb(a, shared, wl_root, trees, leaves, X64, train_cache, docs_sha):
    import lightgbm as lgb
    import numpy as np
    params = {'objective': 'lambdarank', 'num_leaves': leaves, 'learning_rate': 0.02,
              'min_data_in_leaf': 1, 'min_sum_hessian_in_leaf': 0.01, 'max_bin': 255,
              'seed': a.seed, 'deterministic': True, 'force_row_wise': True,
              'num_threads': 1, 'verbose': -1}
    # The reference scores are of these documents: their sha256 is part of the key.
    want = {'params': params, 'trees': trees, 'lightgbm': lgb.__version__, 'docs_sha256': docs_sha}
    path = os.path.join(wl_root, 'lgb-mq2008-t%d-l%d-n%d-s%d' % (trees, leaves, a.docs, a.seed))
    if not cached(path, want):
        if train_cache.get('train') is None:
            train_cache['train'] = read_train(shared)
        X, y, _, groups = train_cache['train']
        tmp = '%s.tmp-%d' % (path, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        log('LightGBM twin %dx%d: training (lightgbm %s, one thread)' % (trees, leaves, lgb.__version__))
        t0 = time.perf_counter()
        bst = lgb.train(params, lgb.Dataset(X, y, group=groups), num_boost_round=trees)
        train_s = time.perf_counter() - t0
        bst.save_model(os.path.join(tmp, 'model.txt'))
        bst = lgb.Booster(model_file=os.path.join(tmp, 'model.txt'))
        ref = bst.predict(X64, raw_score=True, num_threads=1).astype(np.float64)
        np.save(os.path.join(tmp, 'ref.npy'), ref)
        finish_cache(tmp, path, want, {'train_s': round(train_s, 1), 'trees_built': bst.num_trees()})
        log('LightGBM twin %dx%d: trained in %.0f s' % (trees, leaves, train_s))
    return path


def train_cb(a, shared, wl_root, trees, leaves, X64, train_cache, docs_sha):
    import catboost
    import numpy as np
    depth = int(round(math.log2(leaves)))
    params = {'loss_function': 'QueryRMSE', 'iterations': trees, 'depth': depth,
              'learning_rate': 0.02, 'random_seed': a.seed, 'thread_count': 1,
              'verbose': False, 'allow_writing_files': False}
    want = {'params': params, 'catboost': catboost.__version__, 'docs_sha256': docs_sha}
    path = os.path.join(wl_root, 'cb-mq2008-t%d-d%d-n%d-s%d' % (trees, depth, a.docs, a.seed))
    if not cached(path, want):
        if train_cache.get('train') is None:
            train_cache['train'] = read_train(shared)
        X, y, qid, _ = train_cache['train']
        tmp = '%s.tmp-%d' % (path, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        log('CatBoost twin %dx%d (depth %d): training (catboost %s, one thread)'
            % (trees, 2 ** depth, depth, catboost.__version__))
        t0 = time.perf_counter()
        pool = catboost.Pool(X[:, 1:].toarray(), y, group_id=qid)
        m = catboost.CatBoost(params)
        m.fit(pool)
        train_s = time.perf_counter() - t0
        m.save_model(os.path.join(tmp, 'model.cbm'))
        m.save_model(os.path.join(tmp, 'model.json'), format='json')
        ref = np.asarray(m.predict(X64[:, 1:], prediction_type='RawFormulaVal', thread_count=1),
                         dtype=np.float64)
        np.save(os.path.join(tmp, 'ref.npy'), ref)
        finish_cache(tmp, path, want, {'train_s': round(train_s, 1), 'depth': depth})
        log('CatBoost twin %dx%d: trained in %.0f s' % (trees, leaves, train_s))
    return path


def build_tl2cgen(model_path, fam, so_path):
    import treelite
    import tl2cgen
    if os.path.isfile(so_path):
        return None
    t0 = time.perf_counter()
    if fam == 'xgb':
        model = treelite.frontend.load_xgboost_model(model_path)
    else:
        model = treelite.frontend.load_lightgbm_model(model_path)
    tmp = so_path + '.tmp-%d.so' % os.getpid()
    # Its compiler's chatter goes to standard output: send it to standard
    # error, standard output holds only the table.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        tl2cgen.export_lib(model, toolchain='gcc', libpath=tmp,
                           params={'parallel_comp': max(1, min(64, model.num_tree // 250))},
                           nthread=os.cpu_count(), verbose=False)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    os.rename(tmp, so_path)
    log('tl2cgen: compiled %s in %.0f s (not timed)' % (so_path, time.perf_counter() - t0))
    return None


def build_onnx(model_path, fam, onnx_path):
    if os.path.isfile(onnx_path):
        return None
    import onnxmltools
    from onnxmltools.convert.common.data_types import FloatTensorType
    types = [('input', FloatTensorType([None, NCOLS]))]
    if fam == 'xgb':
        # Through the regressor wrapper: onnxmltools takes a bare Booster with a
        # ranking objective for a binary classifier (a logistic on the scores).
        import xgboost as xgb
        reg = xgb.XGBRegressor()
        reg.load_model(model_path)
        onx = onnxmltools.convert_xgboost(reg, initial_types=types)
    else:
        import lightgbm as lgb
        bst = lgb.Booster(model_file=model_path)
        onx = onnxmltools.convert_lightgbm(bst, initial_types=types, zipmap=False)
    tmp = onnx_path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(onx.SerializeToString())
    os.rename(tmp, onnx_path)
    return None


class Method:
    def __init__(self, fam, peer, view, variant=None):
        self.fam, self.peer, self.view = fam, peer, view
        self.variant = variant   # lleaves: (fblocksize, fcodemodel, finline)
        self.times, self.loads = [], []
        self.status = 'ok'
        self.agree = ''
        self.reader = ''
        self.out = None

    @property
    def key(self):
        return '%s/%s/%s%s' % (self.fam, self.peer, self.view, self.vtag)

    @property
    def vtag(self):
        if not self.variant:
            return ''
        bs, cm, inl = self.variant
        return '-bs%d-%s-%s' % (bs, cm, 'inline' if inl else 'noinline')

    @property
    def vlabel(self):
        if not self.variant:
            return ''
        bs, cm, inl = self.variant
        return ' (fblocksize %d, %s code model%s)' % (bs, cm, '' if inl else ', no inlining')


def load_output(path):
    import numpy as np
    if path.endswith('.npy'):
        return np.load(path).reshape(-1).astype(np.float64)
    if path.endswith('.f64'):
        return np.fromfile(path, dtype=np.float64)
    with open(path) as f:
        return np.array([float(l.split('\t')[0]) for l in f if l.strip()], dtype=np.float64)


def agreement(path, ref, ref_dtype):
    """'N/M bit-exact, max |d| D' in the reference's precision."""
    import numpy as np
    got = load_output(path)
    if got.shape != ref.shape:
        return '%d scores, expected %d' % (got.size, ref.size), False
    if ref_dtype == 'float32':
        g, r, it = got.astype(np.float32), ref.astype(np.float32), np.uint32
    else:
        g, r, it = got, ref, np.uint64
    same = int(np.count_nonzero(g.view(it) == r.view(it)))
    d = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64)))) if g.size else 0.0
    if same == ref.size:
        return 'exact (%d/%d)' % (same, ref.size), True
    return '%d/%d bit-exact, max |d| %.3g' % (same, ref.size, d), False


def run_child(py, spec, spec_path):
    with open(spec_path, 'w') as f:
        json.dump(spec, f)
    env = dict(os.environ, OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', MKL_NUM_THREADS='1')
    r = subprocess.run([py, os.path.abspath(__file__), '--child', spec_path], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        return None, 'failed (exit %d): %s' % (r.returncode, r.stdout.strip().splitlines()[-1:]
                                               and r.stdout.strip().splitlines()[-1][:200])
    with open(spec['result']) as f:
        return json.load(f), None


def machine_line(repo, qs_score):
    cpu = '?'
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    ver = subprocess.run([qs_score, '--version'], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.strip().splitlines()[:1]
    commit = subprocess.run(['git', '-C', repo, 'rev-parse', '--short=10', 'HEAD'],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            universal_newlines=True).stdout.strip()
    dirty = subprocess.run(['git', '--no-optional-locks', '-C', repo, 'status', '--porcelain',
                            '--untracked-files=no'], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, universal_newlines=True).stdout.strip()
    vm = ' (VM)' if 'hypervisor' in open('/proc/cpuinfo').read() else ''
    return '%s, %d cores%s; %s (commit %s%s); load average %s' % (
        cpu, os.cpu_count(), vm, ver[0] if ver else 'qs ?', commit, '+dirty' if dirty else '',
        ' '.join(open('/proc/loadavg').read().split()[:3]))


def versions(venv_py):
    code = ('import importlib\n'
            'import importlib.metadata as md\n'
            'for m in ("numpy","xgboost","lightgbm","lleaves","llvmlite","onnxruntime","onnxmltools",'
            '"treelite","tl2cgen","catboost","scikit-learn"):\n'
            '    try: print(m, md.version(m))\n'
            '    except Exception: print(m, "-")\n')
    out = subprocess.run([venv_py, '-c', code], stdout=subprocess.PIPE, universal_newlines=True).stdout
    v = dict(l.split(' ', 1) for l in out.split('\n') if ' ' in l)
    r = subprocess.run([DEBIAN_PY, '-c', 'import xgboost; print(xgboost.__version__)'],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    v['xgboost (Debian)'] = r.stdout.strip() or '-'
    return v


def parse_sizes(a):
    if a.grid:
        return [(t, l) for t in GRID_TREES for l in GRID_LEAVES]
    keys = a.models.split(',') if a.models else list(QUICK)
    out = []
    for k in keys:
        k = k.strip().lower()
        try:
            t, l = (int(x) for x in k.split('x'))
        except ValueError:
            die("bad size '%s' in --models (expected TREESxLEAVES, e.g. 1000x64)" % k, EXIT_USAGE)
        if t < 1 or l < 2:
            die("bad size '%s' in --models" % k, EXIT_USAGE)
        out.append((t, l))
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--child':
        child_main(sys.argv[2])
        return EXIT_OK
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(prog='bench/peers.sh', description=__doc__.split('\n')[0])
    sel = ap.add_mutually_exclusive_group()
    sel.add_argument('--quick', action='store_true', help='1000x64 and 1000x8 (the default)')
    sel.add_argument('--grid', action='store_true',
                     help='the paper\'s grid: {1000,5000,20000} trees x {8,16,32,64} leaves (hours)')
    sel.add_argument('--models', metavar='LIST', help='comma-separated TREESxLEAVES, e.g. 1000x64,5000x8')
    ap.add_argument('--docs', type=int, default=50000, help='minimum documents per size (50000)')
    ap.add_argument('--reps', type=int, default=3, help='timed repetitions per method and view (3)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--peers', metavar='LIST', help='only these methods (%s)' % ','.join(PEERS))
    ap.add_argument('--families', default='xgb,lgb,cb', help='models: xgb,lgb,cb (default all)')
    ap.add_argument('--views', default='text,matrix', help='text,matrix (default both)')
    ap.add_argument('--qs-backend', default='auto', help="qs's back end in both views (auto)")
    ap.add_argument('--lleaves-grid', default='34:large:inline,34:small:inline,10:large:inline,10:small:inline',
                    help="lleaves compile settings, each its own row: FBLOCKSIZE:CODEMODEL:inline|noinline,...")
    ap.add_argument('--dir', default=os.environ.get('QS_BENCH_DIR') or '/tmp/qs-bench')
    ap.add_argument('--shared', default=os.environ.get('QS_ORACLE_DATA'))
    ap.add_argument('--venv', help=argparse.SUPPRESS)
    ap.add_argument('--repo', default=os.path.dirname(here), help=argparse.SUPPRESS)
    ap.add_argument('--no-build', action='store_true', help="peers.sh: don't run make first")
    a = ap.parse_args()
    if a.reps < 1 or a.docs < 1:
        ap.error('--reps and --docs must be >= 1')
    import numpy as np
    t_start = time.perf_counter()
    repo = os.path.realpath(a.repo)
    shared = os.path.realpath(a.shared or os.path.join(repo, 'build', 'oracle'))
    if not os.path.isfile(os.path.join(shared, MQ2008_TRAIN)):
        die('%s not found (the oracle data: make oracle; --shared or QS_ORACLE_DATA)'
            % os.path.join(shared, MQ2008_TRAIN))
    bench_dir = os.path.realpath(a.dir)
    if bench_dir == repo or bench_dir.startswith(repo + os.sep):
        die('scratch folder %s is inside the repository; choose another (--dir)' % bench_dir, EXIT_USAGE)
    venv = a.venv or os.path.dirname(os.path.dirname(sys.executable))
    sizes = parse_sizes(a)
    fams = [f.strip() for f in a.families.split(',') if f.strip()]
    views = [v.strip() for v in a.views.split(',') if v.strip()]
    for f in fams:
        if f not in FAMILIES:
            die("--families: unknown '%s' (xgb, lgb, cb)" % f, EXIT_USAGE)
    for v in views:
        if v not in ('text', 'matrix'):
            die("--views: unknown '%s' (text, matrix)" % v, EXIT_USAGE)
    want_peers = [p.strip() for p in a.peers.split(',')] if a.peers else list(PEERS)
    lleaves_grid = []
    for item in a.lleaves_grid.split(','):
        try:
            bs, cm, inl = item.strip().split(':')
            if cm not in ('small', 'large', 'medium', 'kernel') or inl not in ('inline', 'noinline'):
                raise ValueError
            lleaves_grid.append((int(bs), cm, inl == 'inline'))
        except ValueError:
            die("--lleaves-grid: '%s' is not FBLOCKSIZE:CODEMODEL:inline|noinline" % item, 2)
    for p in want_peers:
        if p not in PEERS:
            die("--peers: unknown '%s' (%s)" % (p, ', '.join(PEERS)), EXIT_USAGE)

    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    run_dir = os.path.join(bench_dir, 'peers-results', stamp)
    n = 1
    while os.path.exists(run_dir):
        n += 1
        run_dir = os.path.join(bench_dir, 'peers-results', '%s-%d' % (stamp, n))
    wl_root = os.path.join(bench_dir, 'workloads')
    os.makedirs(os.path.join(run_dir, 'bin'))
    os.makedirs(wl_root, exist_ok=True)
    tools = {}
    for t, src in (('qs-score', 'bin/qs-score'), ('qs-convert', 'bin/qs-convert'),
                   ('qs-compile', 'bin/qs-compile'), ('qs-matrix', 'build/bench/qs-matrix')):
        src = os.path.join(repo, src)
        if not os.access(src, os.X_OK):
            die('%s not found: build qs first (make), or run bench/peers.sh without --no-build' % src)
        tools[t] = os.path.join(run_dir, 'bin', t)
        shutil.copy2(os.path.realpath(src), tools[t])

    why = peer_status(venv)
    for p in want_peers:
        if why.get(p):
            log('%s: skipped: %s' % (PEER_LABEL[p], why[p]))
    if 'xgb' in fams and why.get('xgboost-1.7'):
        die("the XGBoost workloads need Debian's python3-xgboost (gen_workload.py): "
            'apt-get install python3-xgboost python3-numpy python3-scipy zstd')
    if 'lgb' in fams and why.get('lightgbm'):
        log('LightGBM twin: skipped (lightgbm, which trains it, is not installed in the bench venv)')
        fams.remove('lgb')
    if 'cb' in fams and why.get('catboost'):
        log('CatBoost twin: skipped (catboost, which trains it, is not installed in the bench venv)')
        fams.remove('cb')

    # ---------------------------------------------------------------- workloads
    models_arg = ','.join('%dx%d' % s for s in sizes)
    log('XGBoost workloads (bench/bench.py --prepare-only --models %s --docs %d)' % (models_arg, a.docs))
    r = subprocess.run([DEBIAN_PY, os.path.join(here, 'bench.py'), '--repo', repo, '--prepare-only',
                        '--models', models_arg, '--docs', str(a.docs), '--seed', str(a.seed),
                        '--dir', bench_dir, '--shared', shared])
    if r.returncode != 0:
        die('building the XGBoost workloads failed (exit %d)' % r.returncode)

    machine = machine_line(repo, tools['qs-score'])
    vers = versions(sys.executable)
    methods_by_size = []
    train_cache = {}
    ok_all = True
    for trees, leaves in sizes:
        xdir = os.path.join(wl_root, 'mq2008-t%d-l%d-n%d-s%d' % (trees, leaves, a.docs, a.seed))
        docs = os.path.join(xdir, 'docs.txt')
        wdir = os.path.join(run_dir, 'work', '%dx%d' % (trees, leaves))
        os.makedirs(wdir)
        # The dense matrices, read once with a correctly rounded reader: column j = feature id j.
        X64 = read_letor_dense(docs, 0.0, NCOLS)                 # LightGBM, CatBoost: absent = 0
        ndocs = X64.shape[0]
        X32m = X64.astype(np.float32).astype(np.float64)          # XGBoost: float32 values,
        X32m[:, 0] = np.nan                                       # absent (id 0) = missing
        mats = {'xgb': os.path.join(wdir, 'X.xgb.npy'), 'lgb': os.path.join(wdir, 'X.f64.npy')}
        np.save(mats['xgb'], X32m)
        np.save(mats['lgb'], X64)
        mats['cb'] = mats['lgb']
        raw = {'xgb': mats['xgb'][:-4] + '.f64', 'lgb': mats['lgb'][:-4] + '.f64'}
        X32m.tofile(raw['xgb'])
        X64.tofile(raw['lgb'])
        raw['cb'] = raw['lgb']
        noqid = os.path.join(wdir, 'X.docs-noqid.txt')
        with open(docs) as fin, open(noqid, 'w') as fout:
            for line in fin:
                fout.write(' '.join(t for t in line.split() if not t.startswith('qid:')) + '\n')
        del X32m
        fam_info = {}
        with open(os.path.join(xdir, 'meta.json')) as f:
            docs_sha = json.load(f).get('sha256', {}).get('docs.txt') or sha256(docs)
        if 'xgb' in fams:
            ref = load_output(os.path.join(xdir, 'pred.missing.txt'))
            with open(os.path.join(xdir, 'meta.json')) as f:
                st = json.load(f).get('model_stats', {})
            fam_info['xgb'] = {'model': os.path.join(xdir, 'model.json'), 'ref': ref,
                               'ref_dtype': 'float32', 'trees': st.get('trees', trees),
                               'leaves': '%s-%s' % (st.get('leaves_min'), st.get('leaves_max')),
                               'cache': xdir}
        if 'lgb' in fams:
            ldir = train_lgb(a, shared, wl_root, trees, leaves, X64, train_cache, docs_sha)
            with open(os.path.join(ldir, 'meta.json')) as f:
                built = json.load(f).get('trees_built', trees)
            fam_info['lgb'] = {'model': os.path.join(ldir, 'model.txt'), 'trees': built,
                               'ref': np.load(os.path.join(ldir, 'ref.npy')), 'ref_dtype': 'float64',
                               'cache': ldir}
        if 'cb' in fams:
            if 2 ** int(round(math.log2(leaves))) != leaves:
                log('CatBoost twin %dx%d: skipped (oblivious trees have a power of 2 leaves)'
                    % (trees, leaves))
            else:
                cdir = train_cb(a, shared, wl_root, trees, leaves, X64, train_cache, docs_sha)
                fam_info['cb'] = {'model': os.path.join(cdir, 'model.cbm'), 'trees': trees,
                                  'qs_model': os.path.join(cdir, 'model.json'),
                                  'ref': np.load(os.path.join(cdir, 'ref.npy')),
                                  'ref_dtype': 'float64', 'cache': cdir}
        del X64
        methods = []
        for fam, fi in fam_info.items():
            # qs: convert and compile once (not timed); its model facts.
            qsm = os.path.join(wdir, '%s.qsm' % fam)
            src = fi.get('qs_model', fi['model'])
            r = subprocess.run('"%s" "%s" | "%s" -o "%s"' % (tools['qs-convert'], src,
                                                              tools['qs-compile'], qsm),
                               shell=True, stderr=subprocess.PIPE, universal_newlines=True)
            if r.returncode != 0:
                die('qs-convert | qs-compile failed on %s: %s' % (src, r.stderr.strip()), EXIT_FAIL)
            fi['qsm'] = qsm
            fi.setdefault('trees', trees)
            for peer in want_peers:
                fams_of, _ = PEERS[peer]
                if fam not in fams_of:
                    continue
                for view in views:
                  for variant in (lleaves_grid if peer == 'lleaves' else [None]):
                    m = Method(fam, peer, view, variant)
                    methods.append(m)
                    if why.get(peer):
                        m.status = 'skipped: ' + why[peer]
                        continue
                    try:
                        if peer == 'tl2cgen':
                            fi['tl2cgen_so'] = os.path.join(fi['cache'], 'tl2cgen-%s.so'
                                                            % vers.get('tl2cgen', ''))
                            build_tl2cgen(fi['model'], fam, fi['tl2cgen_so'])
                        if peer == 'onnxruntime':
                            fi['onnx'] = os.path.join(fi['cache'], 'model-onnxmltools-%s.onnx'
                                                      % vers.get('onnxmltools', ''))
                            build_onnx(fi['model'], fam, fi['onnx'])
                    except Exception as e:  # a converter that refuses this model
                        m.status = 'unsupported: %s' % str(e).strip().splitlines()[0][:160]
                        log('%s %s on %dx%d %s' % (PEER_LABEL[peer], m.status, trees, leaves, fam))
        # ------------------------------------------------------------ runs
        for m in methods:
            if m.status != 'ok':
                continue
            fi = fam_info[m.fam]
            tag = '%s.%s.%s%s' % (m.fam, m.peer, m.view, m.vtag)
            if m.peer == 'qs':
                m.reader = 'own'
                if m.view == 'matrix':
                    out = os.path.join(wdir, tag + '.f64')
                    r = subprocess.run([tools['qs-matrix'], '--backend', a.qs_backend, '--reps',
                                        str(a.reps), fi['qsm'], raw[m.fam], str(ndocs), str(NCOLS),
                                        out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       universal_newlines=True)
                    if r.returncode != 0:
                        m.status = 'failed (exit %d): %s' % (r.returncode, r.stderr.strip()[:200])
                        ok_all = False
                        continue
                    res = json.loads(r.stdout)
                    m.times, m.loads, m.out = res['times_s'], [res['load_s']], out
                    m.ran_as = res.get('ran_as')
                else:
                    out = os.path.join(wdir, tag + '.txt')
                    for rep in range(a.reps + 1):      # the first run is an untimed warm-up
                        with open(docs, 'rb') as fin, open(out, 'wb') as fout:
                            t0 = time.perf_counter()
                            r = subprocess.run([tools['qs-score'], '--backend', a.qs_backend,
                                                '--threads', '1', fi['qsm']], stdin=fin, stdout=fout,
                                               stderr=subprocess.PIPE)
                            t = time.perf_counter() - t0
                        if r.returncode != 0:
                            m.status = 'failed (exit %d): %s' % (r.returncode, r.stderr.decode()[:200])
                            ok_all = False
                            break
                        if rep:
                            m.times.append(t)
                    m.out = out
            else:
                py = DEBIAN_PY if PEERS[m.peer][1] == 'debian' else sys.executable
                spec = {'peer': m.peer, 'family': m.fam, 'model': fi['model'], 'view': m.view,
                        'docs': docs, 'docs_noqid': noqid, 'matrix': mats[m.fam], 'reps': a.reps,
                        'out': os.path.join(wdir, tag + '.npy'),
                        'out_text': os.path.join(wdir, tag + '.txt'),
                        'result': os.path.join(wdir, tag + '.json')}
                if m.peer == 'lleaves':
                    # lleaves' own tuning knobs (its documentation): trees per
                    # cache block (fblocksize), the code model, inlining; code
                    # for this host's CPU (its default target), float64, raw
                    # scores compiled in.  Each setting of --lleaves-grid is
                    # its own row, so the best is seen.
                    bs, cm, inl = m.variant
                    spec['options'] = {'raw_score': True, 'fblocksize': bs, 'finline': inl,
                                       'fcodemodel': cm, 'use_fp64': True}
                    spec['cache'] = os.path.join(fi['cache'], 'lleaves%s.so' % m.vtag)
                elif m.peer == 'tl2cgen':
                    spec['cache'] = fi['tl2cgen_so']
                elif m.peer == 'onnxruntime':
                    spec['cache'] = fi['onnx']
                runs = a.reps + 1 if m.view == 'text' else 1
                for rep in range(runs):
                    t0 = time.perf_counter()
                    res, err = run_child(py, spec, os.path.join(wdir, tag + '.spec.json'))
                    if res is None:
                        m.status = err
                        ok_all = False
                        log('%s %s %s: %s' % (PEER_LABEL[m.peer], m.fam, m.view, err))
                        break
                    if m.view == 'matrix' or rep:
                        m.times += res['times_s']
                        m.loads.append(res['load_s'])
                    if rep == 0 and m.view == 'text':
                        m.first_wall = time.perf_counter() - t0
                m.out = spec['out'] if m.view == 'matrix' else spec['out_text']
                m.reader = CHILD_PEERS[m.peer].reader if m.view == 'text' else ''
            if m.status == 'ok' and m.out:
                m.agree, exact = agreement(m.out, fi['ref'], fi['ref_dtype'])
            if m.status == 'ok':
                log('%dx%d %s %s %s: median %.3f s; %s' % (trees, leaves, FAMILY_LABEL[m.fam],
                                                           PEER_LABEL[m.peer] + m.vlabel, m.view,
                                                           statistics.median(m.times), m.agree))
        methods_by_size.append(((trees, leaves), ndocs, fam_info, methods))
        for fn in os.listdir(wdir):   # the matrices are large; keep the scores
            if fn.startswith('X.'):
                os.unlink(os.path.join(wdir, fn))

    table = report(methods_by_size, machine, vers, a, time.perf_counter() - t_start)
    with open(os.path.join(run_dir, 'table.md'), 'w') as f:
        f.write(table)
    write_csv(os.path.join(run_dir, 'summary.csv'), methods_by_size)
    sys.stdout.write(table)
    log('table: %s' % os.path.join(run_dir, 'table.md'))
    log('csv:   %s' % os.path.join(run_dir, 'summary.csv'))
    return EXIT_OK if ok_all else EXIT_FAIL


def summarize(methods_by_size):
    """Per method: median, µs/doc, ns/doc/tree, × XGBoost text."""
    rows = []
    for (trees, leaves), ndocs, fam_info, methods in methods_by_size:
        base = next((statistics.median(m.times) for m in methods
                     if m.fam == 'xgb' and m.peer == 'xgboost-1.7' and m.view == 'text'
                     and m.status == 'ok' and m.times), None)
        for m in methods:
            med = statistics.median(m.times) if m.status == 'ok' and m.times else None
            nt = fam_info[m.fam].get('trees', trees)
            rows.append({
                'size': '%dx%d' % (trees, leaves), 'trees_nominal': trees, 'leaves': leaves,
                'family': m.fam, 'trees': nt, 'docs': ndocs, 'method': m.peer, 'view': m.view,
                'variant': m.vlabel,
                'status': m.status, 'median_s': med,
                'us_doc': med / ndocs * 1e6 if med else None,
                'ns_doc_tree': med / ndocs / nt * 1e9 if med else None,
                'x_xgb_text': base / med if med and base else None,
                'spread': (max(m.times) - min(m.times)) / med * 100 if med else None,
                'load_s': statistics.median(m.loads) if m.loads else None,
                'agreement': m.agree, 'reader': m.reader,
                'ran_as': getattr(m, 'ran_as', '')})
    return rows


def report(methods_by_size, machine, vers, a, elapsed):
    rows = summarize(methods_by_size)
    out = ['Machine: %s. One thread everywhere; %d repetitions, medians.' % (machine, a.reps), '',
           'Versions: ' + ', '.join('%s %s' % (k, v) for k, v in vers.items() if v != '-') + '.', '']
    out.append('| model | method | view | µs/doc | ns/doc/tree | × XGBoost text | spread | load ms | agreement |')
    out.append('|---|---|---|---:|---:|---:|---:|---:|---|')
    last = None
    for r in rows:
        label = '%s %s × %d (%s trees)' % (FAMILY_LABEL[r['family']], '{:,}'.format(r['trees_nominal']),
                                           r['leaves'], '{:,}'.format(r['trees']))
        name = PEER_LABEL[r['method']] + r.get('variant', '')
        if r['method'] == 'qs' and r['ran_as']:
            name += ' (%s)' % r['ran_as']
        view = r['view']
        if view == 'text' and r['reader'] and r['reader'] != 'own':
            view += ' (%s)' % r['reader']
        if r['status'].startswith('skipped') and r['view'] != 'text':
            continue        # said once, on the text row
        if r['status'] != 'ok':
            if r['status'].startswith('skipped'):
                view = '—'
            cells = ['—'] * 5 + [r['status']]
        else:
            cells = [fmt_num(r['us_doc']), fmt_num(r['ns_doc_tree']),
                     '%.2f' % r['x_xgb_text'] if r['x_xgb_text'] else '—',
                     '%.0f%%' % r['spread'],
                     fmt_num(r['load_s'] * 1e3) if r['load_s'] else
                     ('in µs/doc' if r['method'] == 'qs' else '—'),
                     r['agreement']]
        out.append('| %s | %s | %s | %s |' % (label if label != last else '', name, view,
                                              ' | '.join(cells)))
        last = label
    # The grid: ns/doc/tree of the matrix view (and qs's text view), one row per size.
    sizes = []
    for r in rows:
        if r['size'] not in sizes:
            sizes.append(r['size'])
    if len(sizes) > 1:
        cols = []
        for r in rows:
            k = (r['family'], r['method'], r['view'])
            if r['status'] == 'ok' and k not in cols:
                cols.append(k)
        out += ['', 'Grid, ns/doc/tree (xgb: XGBoost model, lgb: LightGBM twin, cb: CatBoost twin):', '']
        out.append('| trees × leaves | ' + ' | '.join('%s %s %s' % (f, PEER_LABEL[p], v)
                                                      for f, p, v in cols) + ' |')
        out.append('|---|' + '---:|' * len(cols))
        for s in sizes:
            cells = []
            for k in cols:
                r = next((r for r in rows if r['size'] == s and (r['family'], r['method'], r['view']) == k),
                         None)
                cells.append(fmt_num(r['ns_doc_tree']) if r and r['ns_doc_tree'] else '—')
            out.append('| %s | %s |' % (s.replace('x', ' × '), ' | '.join(cells)))
    out += ['', 'text: LETOR text file to scores. qs: qs-score as a whole process (start, model load, '
            'parsing, scoring, printing). Peers: in a fresh process, from after the model load: '
            'reading the text (their own reader, or the one named), predicting, writing the scores; '
            'the load (and any compilation) is not timed (load ms). matrix: a dense matrix already in '
            'memory (float64; float32 for XGBoost, ONNX Runtime and TL2cgen on the XGBoost model), '
            'only the predict call timed, after one warm-up call. × XGBoost text: XGBoost 1.7\'s text '
            'time on the XGBoost model of the same size divided by this time. agreement: against the '
            'training library\'s own scores (XGBoost 1.7 on a CSR matrix; LightGBM and CatBoost on the '
            'float64 matrix), compared as float32 for the XGBoost model and float64 otherwise. '
            'Bench wall time: %.0f s.' % elapsed]
    return '\n'.join(out) + '\n'


def write_csv(path, methods_by_size):
    rows = summarize(methods_by_size)
    fields = ['size', 'trees_nominal', 'leaves', 'family', 'trees', 'docs', 'method', 'variant',
              'view', 'status',
              'median_s', 'us_doc', 'ns_doc_tree', 'x_xgb_text', 'spread', 'load_s', 'agreement',
              'reader', 'ran_as']
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: ('%.6g' % v if isinstance(v, float) else v) for k, v in r.items()})


if __name__ == '__main__':
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        die('interrupted', 130)
