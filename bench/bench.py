#!/usr/bin/python3
"""qs benchmark driver: every qs-score back end against XGBoost's own predictor.

Normally started by bench/run.sh (which builds qs first); see bench/README.md.

Builds (or reuses) workloads in a scratch folder with the shared reference
data's gen_workload.py, times `qs-score --backend B model.qsm < docs.txt >
scores` for every back end that `qs-score --list-backends` lists, and XGBoost's
text -> scores path in one thread (fresh process per repetition), interleaved,
checks that every score is exact, and prints a markdown table (medians).

Standard library + numpy + xgboost only (Debian: python3-numpy python3-xgboost).
"""
import argparse
import csv
import datetime
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SYSTEM = 0, 1, 2, 4

GRID_TREES = (1000, 5000, 20000)
GRID_LEAVES = (8, 16, 32, 64)
QUICK = ('1000x8', '1000x64', 'oblivious')
OBLIVIOUS_MODEL = 'quickrank/models/qr_oblivious_d6_t1000'
OBLIVIOUS_DOCS = 'lightgbm/data/rank.test.letor'
MQ2008_TRAIN = 'letor/mq2008/train.txt'
GEN_WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'workload', 'gen_workload.py')
# Arguments of gen_workload.py that must match for a cached workload to be reused
# (besides --trees, --leaves, --docs, --seed, which come from the selection).
GEN_FIXED = {'depth': 0, 'eta': 0.02, 'objective': 'rank:ndcg', 'min_child_weight': 0.01,
             'noise': 0.01, 'keep': 0.5, 'nthread': 1, 'pred': 'missing',
             'skip_model': False, 'zstd': False, 'source': None}
PARSE_ONLY_NAMES = ('parse', 'parse-only', 'null', 'none', 'noop')


# ----------------------------------------------------------------------------- helpers

def log(msg):
    print('bench: ' + msg, file=sys.stderr, flush=True)


def die(msg, code=EXIT_SYSTEM):
    print('bench: error: ' + msg, file=sys.stderr, flush=True)
    sys.exit(code)


def sha256(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def read_text(path, default=''):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def cmd_output(argv, **kw):
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, **kw)
        return r.stdout.strip()
    except OSError as e:
        return '(%s: %s)' % (argv[0], e)


def fmt_int(n):
    return '{:,}'.format(n)


def fmt_num(x, digits=3):
    """Three significant digits, no exponent for the usual ranges."""
    if x is None:
        return '—'
    if x == 0:
        return '0'
    ax = abs(x)
    if ax >= 100:
        return '{:,.0f}'.format(x)
    if ax >= 10:
        return '%.1f' % x
    if ax >= 1:
        return '%.2f' % x
    return '%.3g' % x


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# ----------------------------------------------------------------------------- xgboost child

def xgb_child(model, docs, out, result):
    """One repetition of XGBoost's own text -> scores path, in a fresh process."""
    t0 = time.perf_counter()
    import numpy as np  # noqa: F401
    import xgboost as xgb
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    bst = xgb.Booster(model_file=model)
    bst.set_param({'nthread': 1})
    t_load = time.perf_counter() - t0
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    dm = xgb.DMatrix(docs + '?format=libsvm', nthread=1, silent=True)
    t1 = time.perf_counter()
    pred = bst.predict(dm, output_margin=True)
    t2 = time.perf_counter()
    with open(out, 'w', encoding='ascii', newline='\n') as f:
        f.write(''.join(['%.9g\n' % v for v in pred.tolist()]))
    t3 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    threads = len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else 0
    res = {'import_s': t_import, 'load_s': t_load, 'parse_s': t1 - t0, 'predict_s': t2 - t1,
           'write_s': t3 - t2, 'total_s': t3 - t0,
           'cpu_s': (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
           'threads': threads, 'rows': int(dm.num_row()), 'xgboost': xgb.__version__}
    with open(result, 'w') as f:
        json.dump(res, f)


# ----------------------------------------------------------------------------- score files

def load_scores(path, dtype):
    import numpy as np
    with open(path) as f:
        vals = [float(line.split('\t')[0]) for line in f if line.strip()]
    return np.array(vals, dtype=np.float64).astype(dtype)


def compare_scores(path, expected, dtype):
    """(mismatching documents, first bad index, message); bitwise as dtype."""
    import numpy as np
    got = load_scores(path, dtype)
    if got.shape != expected.shape:
        return (max(len(got), len(expected)), 0,
                '%d scores, expected %d' % (len(got), len(expected)))
    itype = np.uint32 if dtype == np.float32 else np.uint64
    bad = np.nonzero(got.view(itype) != expected.view(itype))[0]
    if len(bad) == 0:
        return 0, None, 'exact'
    i = int(bad[0])
    return len(bad), i, '%d of %d differ (first: doc %d, %r vs %r)' % (
        len(bad), len(expected), i + 1, float(got[i]), float(expected[i]))


# ----------------------------------------------------------------------------- workloads

class Workload:
    def __init__(self, key, label, kind, path):
        self.key, self.label, self.kind, self.path = key, label, kind, path
        self.model = self.docs = self.expected = None
        self.expected_dtype = None
        self.trees = self.leaves = self.ndocs = None
        self.leaves_desc = ''
        self.qsm = None


def parse_selection(a):
    if a.all:
        keys = ['%dx%d' % (t, l) for t in GRID_TREES for l in GRID_LEAVES] + ['oblivious']
    elif a.models:
        keys = [k.strip().lower() for k in a.models.split(',') if k.strip()]
    else:
        keys = list(QUICK)
    out = []
    for k in keys:
        if k in ('oblivious', 'obl', 'qr-oblivious'):
            k = 'oblivious'
        else:
            m = re.fullmatch(r'(\d+)k?x(\d+)', k)
            if not m:
                die("bad model '%s' in --models (expected TREESxLEAVES, e.g. 1000x64, or "
                    "'oblivious')" % k, EXIT_USAGE)
            t = int(m.group(1)) * (1000 if 'k' in k else 1)
            k = '%dx%d' % (t, int(m.group(2)))
            if t < 1 or int(m.group(2)) < 2:
                die("bad model '%s' in --models" % k, EXIT_USAGE)
        if k not in out:
            out.append(k)
    return out


def meta_matches(meta, want, train_tail):
    args = meta.get('args', {})
    for k, v in want.items():
        if args.get(k) != v:
            return 'argument %s is %r, want %r' % (k, args.get(k), v)
    if not str(args.get('train', '')).endswith(train_tail):
        return 'trained on %r, want .../%s' % (args.get('train'), train_tail)
    return None


def verify_hashes(path, meta, files):
    sums = meta.get('sha256', {})
    for fn in files:
        p = os.path.join(path, fn)
        if not os.path.isfile(p):
            return '%s is missing' % fn
        if fn in sums and sha256(p) != sums[fn]:
            return '%s does not match the sha256 in meta.json' % fn
    return None


def prepare_mq2008(a, key, shared, wl_root):
    import numpy as np
    trees, leaves = (int(x) for x in key.split('x'))
    name = 'mq2008-t%d-l%d-n%d-s%d' % (trees, leaves, a.docs, a.seed)
    path = os.path.join(wl_root, name)
    want = dict(GEN_FIXED, trees=trees, leaves=leaves, docs=a.docs, seed=a.seed)
    files = ('model.json', 'docs.txt', 'pred.missing.txt')
    reason = 'not built yet'
    if os.path.isfile(os.path.join(path, 'meta.json')):
        try:
            with open(os.path.join(path, 'meta.json')) as f:
                meta = json.load(f)
            reason = meta_matches(meta, want, MQ2008_TRAIN) or verify_hashes(path, meta, files)
        except (OSError, ValueError) as e:
            reason = 'meta.json unreadable (%s)' % e
    if reason:
        if a.no_train:
            die('workload %s: %s, and --no-train was given' % (name, reason))
        tmp = '%s.tmp-%d' % (path, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        log('workload %s: %s; building it (training %d trees: roughly %.0f-%.0f s on one core)'
            % (name, reason, trees, trees * 0.02, trees * 0.05))
        argv = [sys.executable, GEN_WORKLOAD,
                '--train', os.path.join(shared, MQ2008_TRAIN), '--out', tmp,
                '--trees', str(trees), '--leaves', str(leaves), '--docs', str(a.docs),
                '--seed', str(a.seed), '--pred', 'missing']
        env = dict(os.environ, OMP_NUM_THREADS='1')
        t0 = time.perf_counter()
        r = subprocess.run(argv, cwd=os.path.dirname(GEN_WORKLOAD), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout)
            die('gen_workload.py failed (exit %d) for %s; partial output left in %s'
                % (r.returncode, name, tmp), EXIT_FAIL)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
        log('workload %s: built in %.0f s' % (name, time.perf_counter() - t0))
    else:
        log('workload %s: reusing (meta.json and sha256 match)' % name)
    with open(os.path.join(path, 'meta.json')) as f:
        meta = json.load(f)
    st = meta.get('model_stats', {})
    w = Workload(key, 'MQ2008 %s × %d' % (fmt_int(trees), leaves), 'xgboost', path)
    w.model = os.path.join(path, 'model.json')
    w.docs = os.path.join(path, 'docs.txt')
    w.expected_path = os.path.join(path, 'pred.missing.txt')
    w.expected_dtype = np.float32
    w.trees = st.get('trees', trees)
    w.leaves = leaves
    w.leaves_desc = '%s-%s' % (st.get('leaves_min', '?'), st.get('leaves_max', '?'))
    w.ndocs = meta.get('docs', {}).get('docs')
    return w


def prepare_oblivious(a, shared, wl_root):
    import numpy as np
    src_model = os.path.join(shared, OBLIVIOUS_MODEL, 'model.xml')
    src_scores = os.path.join(shared, OBLIVIOUS_MODEL, 'scores.txt')
    src_docs = os.path.join(shared, OBLIVIOUS_DOCS)
    for p in (src_model, src_scores, src_docs):
        if not os.path.isfile(p):
            die('%s is missing (the oracle data is incomplete)' % p)
    with open(src_docs, 'rb') as f:
        doc_bytes = f.read()
    if not doc_bytes.endswith(b'\n'):
        doc_bytes += b'\n'
    with open(src_scores, 'rb') as f:
        score_bytes = f.read()
    if not score_bytes.endswith(b'\n'):
        score_bytes += b'\n'
    n_src = sum(1 for line in doc_bytes.splitlines() if line.strip() and not line.startswith(b'#'))
    n_scores = sum(1 for line in score_bytes.splitlines() if line.strip())
    if n_src != n_scores or n_src == 0:
        die('%s has %d documents but %s has %d scores' % (src_docs, n_src, src_scores, n_scores))
    copies = -(-a.docs // n_src)
    name = 'quickrank-oblivious-d6-t1000-n%d' % a.docs
    path = os.path.join(wl_root, name)
    want = {'model_sha256': sha256(src_model), 'docs_sha256': hashlib.sha256(doc_bytes).hexdigest(),
            'scores_sha256': hashlib.sha256(score_bytes).hexdigest(), 'copies': copies,
            'docs': n_src * copies}
    meta = None
    try:
        with open(os.path.join(path, 'meta.json')) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        pass
    ok = meta is not None and all(meta.get(k) == v for k, v in want.items()) and \
        verify_hashes(path, meta, ('docs.txt', 'expected.txt')) is None
    if not ok:
        tmp = '%s.tmp-%d' % (path, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        with open(os.path.join(tmp, 'docs.txt'), 'wb') as f:
            for _ in range(copies):
                f.write(doc_bytes)
        with open(os.path.join(tmp, 'expected.txt'), 'wb') as f:
            for _ in range(copies):
                f.write(score_bytes)
        meta = dict(want, source_model=src_model, source_docs=src_docs, source_scores=src_scores,
                    sha256={fn: sha256(os.path.join(tmp, fn)) for fn in ('docs.txt', 'expected.txt')})
        with open(os.path.join(tmp, 'meta.json'), 'w') as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
        log('workload %s: built (%s repeated %d times)' % (name, OBLIVIOUS_DOCS, copies))
    else:
        log('workload %s: reusing' % name)
    w = Workload('oblivious', 'QuickRank oblivious 1,000 × ≤64 (d6)', 'quickrank', path)
    w.model = src_model
    w.docs = os.path.join(path, 'docs.txt')
    w.expected_path = os.path.join(path, 'expected.txt')
    w.expected_dtype = np.float64
    w.trees = 1000
    w.leaves = 64
    w.leaves_desc = '4-64'
    w.ndocs = want['docs']
    return w


# ----------------------------------------------------------------------------- qs

BACKEND_FLAGS = {}


def list_backends(qs_score):
    """The back ends qs-score runs on this machine, from --list-backends
    (name, available, flags, summary; tab-separated), and --version -v for
    the machine record."""
    r = subprocess.run([qs_score, '--list-backends'], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode != 0:
        die('%s --list-backends failed (exit %d): %s' % (qs_score, r.returncode, r.stdout.strip()))
    out = []
    for line in r.stdout.splitlines():
        f = line.split('\t')
        if len(f) != 4:
            die('%s --list-backends: unexpected line %r' % (qs_score, line))
        if f[1] != 'yes':
            log('back end %s skipped: %s' % (f[0], f[1]))
            continue
        BACKEND_FLAGS[f[0]] = set(f[2].split(','))
        out.append((f[0], f[3]))
    if not out:
        die('%s --list-backends lists no back end this machine runs:\n%s' % (qs_score, r.stdout))
    v = subprocess.run([qs_score, '--version', '-v'], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return out, v.stdout


def backend_role(name, desc):
    d = desc.lower()
    if name in PARSE_ONLY_NAMES or d.startswith('parse'):
        return 'parse-only'
    if BACKEND_FLAGS.get(name, set()) & {'reference', 'baseline'}:
        return 'baseline'
    return 'qs'


def machine_info(repo, qs_score, version_text):
    lines = []
    cpu = ''
    for line in read_text('/proc/cpuinfo').splitlines():
        if line.startswith('model name'):
            cpu = line.split(':', 1)[1].strip()
            break
    if not cpu:
        m = re.search(r'Model name:\s*(.*)', cmd_output(['lscpu']))
        cpu = m.group(1).strip() if m else platform.processor() or '?'
    caches = []
    base = '/sys/devices/system/cpu/cpu0/cache'
    try:
        idx = sorted(d for d in os.listdir(base) if d.startswith('index'))
    except OSError:
        idx = []
    for d in idx:
        p = os.path.join(base, d)
        lvl, typ, size = (read_text(os.path.join(p, f), '?') for f in ('level', 'type', 'size'))
        shared = read_text(os.path.join(p, 'shared_cpu_list'), '?')
        caches.append('L%s %s %s (shared by cpus %s)' % (lvl, typ, size, shared))
    def pretty(c):
        lvl, typ, size = c.split(' (')[0].split(' ')
        m = re.fullmatch(r'(\d+)K', size)
        if m and int(m.group(1)) >= 1024 and int(m.group(1)) % 1024 == 0:
            size = '%dM' % (int(m.group(1)) // 1024)
        return '%s%s %s' % (lvl, {'Data': 'd', 'Instruction': 'i'}.get(typ, ''), size)
    short_caches = ', '.join(pretty(c) for c in caches)
    ncpu = os.cpu_count()
    try:
        aff = len(os.sched_getaffinity(0))
    except AttributeError:
        aff = ncpu
    flags_file = os.path.join(repo, 'build', '.flags')
    build_flags = read_text(flags_file, '(no build/.flags)')
    cc = build_flags.split()[0] if build_flags and not build_flags.startswith('(') else 'cc'
    cc_version = cmd_output([cc, '--version']).splitlines()[0] if shutil.which(cc) else '?'
    commit = cmd_output(['git', '-C', repo, 'rev-parse', 'HEAD'])
    dirty = cmd_output(['git', '--no-optional-locks', '-C', repo, 'status', '--porcelain',
                        '--untracked-files=no'])
    hyper = 'yes' if 'hypervisor' in read_text('/proc/cpuinfo') else 'no'
    try:
        import numpy
        npv = numpy.__version__
    except ImportError:
        npv = '(missing)'
    try:
        import xgboost
        xv = xgboost.__version__
    except ImportError:
        xv = '(missing)'
    lines += [
        'date: %s' % datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
        'host: %s' % platform.node(),
        'kernel: %s' % ' '.join(platform.uname()[2:5]),
        'cpu: %s' % cpu,
        'virtualised: %s' % hyper,
        'cpus: %d online, %d usable by this process' % (ncpu, aff),
        'caches (cpu0): %s' % ('; '.join(caches) or '?'),
        'memory: %s' % next((l.split(':', 1)[1].strip() for l in read_text('/proc/meminfo').splitlines()
                            if l.startswith('MemTotal')), '?'),
        'load average at start: %s' % read_text('/proc/loadavg'),
        'compiler: %s' % cc_version,
        'build flags (build/.flags): %s' % build_flags,
        'qs commit: %s%s' % (commit, ' (working tree has uncommitted changes)' if dirty else ''),
        'qs-score binary sha256: %s' % sha256(qs_score),
        'python: %s (%s)' % (platform.python_version(), sys.executable),
        'numpy: %s' % npv,
        'xgboost: %s' % xv,
        '', 'qs-score --version -v:', version_text.rstrip(),
    ]
    short = '%s, %d cores%s; %s; %s; qs %s%s' % (
        cpu, ncpu, ' (VM)' if hyper == 'yes' else '', short_caches, cc_version,
        commit[:10], '+dirty' if dirty else '')
    return '\n'.join(lines) + '\n', short, {'commit': commit, 'dirty': bool(dirty)}


# ----------------------------------------------------------------------------- runs

def split_method(name):
    """'vqs' -> ('vqs', 1); 'auto x2' -> ('auto', 2): a back end and a thread count."""
    if ' x' in name:
        b, t = name.split(' x', 1)
        return b, int(t)
    return name, 1


def run_qs(qs_score, backend, qsm, docs, out, empty=False):
    """Wall time of one qs-score run (monotonic clock), child CPU time, exit code, stderr.
    `backend` may carry a thread count ('auto x2'); otherwise one thread."""
    b, threads = split_method(backend)
    argv = [qs_score, '--backend', b, '--threads', str(threads), qsm]
    c0 = cpu_children()
    with open(os.devnull if empty else docs, 'rb') as fin, open(out, 'wb') as fout:
        t0 = time.perf_counter()
        r = subprocess.run(argv, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
        t = time.perf_counter() - t0
    return t, cpu_children() - c0, r.returncode, r.stderr.decode(errors='replace').strip()


def run_xgb(model, docs, out, result):
    env = dict(os.environ, OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', MKL_NUM_THREADS='1')
    argv = [sys.executable, os.path.abspath(__file__), '--xgb-child', model, docs, out, result]
    c0 = cpu_children()
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    t = time.perf_counter() - t0
    cpu = cpu_children() - c0
    if r.returncode != 0:
        return None, r.returncode, r.stdout.strip()
    with open(result) as f:
        res = json.load(f)
    res['process_wall_s'] = t
    res['process_cpu_s'] = cpu
    return res, 0, r.stdout.strip()


def same_file(a, b):
    return os.path.getsize(a) == os.path.getsize(b) and sha256(a) == sha256(b)


def bench_workload(a, w, backends, qs_bin, run_dir, rows, do_xgb):
    """Returns the summary entries for one workload."""
    import numpy as np
    log('%s: %s documents, %d trees; compiling' % (w.label, fmt_int(w.ndocs), w.trees))
    mdir = os.path.join(run_dir, 'work', w.key)
    os.makedirs(mdir, exist_ok=True)
    w.qsm = os.path.join(mdir, 'model.qsm')
    t0 = time.perf_counter()
    r = subprocess.run('"%s" "%s" | "%s" -o "%s"' % (qs_bin['qs-convert'], w.model,
                                                      qs_bin['qs-compile'], w.qsm),
                       shell=True, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0 or not os.path.isfile(w.qsm):
        log('%s: qs-convert | qs-compile failed (exit %d): %s' % (w.label, r.returncode, r.stderr.strip()))
        return [{'workload': w, 'method': m, 'role': backend_role(m, d), 'status': 'compile failed'}
                for m, d in backends], False
    log('%s: converted and compiled in %.1f s (not timed)' % (w.label, time.perf_counter() - t0))
    expected = load_scores(w.expected_path, w.expected_dtype)
    if len(expected) != w.ndocs:
        die('%s: %s has %d scores for %d documents' % (w.label, w.expected_path, len(expected), w.ndocs))

    methods = []   # dicts: name, role, kind
    ok = True
    # --- warm-up run of each back end: correctness, support.
    for name, desc in backends:
        role = backend_role(name, desc)
        m = {'workload': w, 'method': name, 'role': role, 'desc': desc, 'times': [], 'startup': [],
             'cpu': []}
        out = os.path.join(mdir, 'scores.%s.txt' % name)
        t, cpu, rc, err = run_qs(qs_bin['qs-score'], name, w.qsm, w.docs, out)
        if rc == 3:
            m['status'] = 'unsupported'
            log('%s: back end %s: unsupported for this model (exit 3): %s' % (w.label, name, err))
        elif rc != 0:
            m['status'] = 'failed (exit %d)' % rc
            log('%s: back end %s FAILED (exit %d): %s' % (w.label, name, rc, err))
            ok = False
        elif role == 'parse-only':
            m['status'] = 'ok'
            m['check'] = 'n/a (parse only)'
        else:
            nbad, _, msg = compare_scores(out, expected, w.expected_dtype)
            m['check'] = msg
            m['mismatch'] = nbad
            m['status'] = 'ok'
            if nbad:
                ok = False
                log('%s: back end %s: SCORES DIFFER: %s' % (w.label, name, msg))
            else:
                log('%s: back end %s: warm-up %.2f s, scores exact' % (w.label, name, t))
        m['reference_out'] = out
        methods.append(m)
    if do_xgb:
        m = {'workload': w, 'method': 'xgboost', 'role': 'xgboost', 'desc': "XGBoost's own predictor",
             'times': [], 'startup': [], 'cpu': [], 'xgb': []}
        out = os.path.join(mdir, 'scores.xgboost.txt')
        res, rc, err = run_xgb(w.model, w.docs, out, os.path.join(mdir, 'xgb.json'))
        if res is None:
            m['status'] = 'failed (exit %d)' % rc
            log('%s: XGBoost FAILED (exit %d): %s' % (w.label, rc, err[-2000:]))
            ok = False
        else:
            nbad, _, msg = compare_scores(out, expected, w.expected_dtype)
            m['status'] = 'ok'
            m['mismatch'] = nbad
            m['check'] = 'exact' if not nbad else 'own parser: %s' % msg
            log('%s: xgboost: warm-up %.2f s (parse %.2f, predict %.2f), %s'
                % (w.label, res['total_s'], res['parse_s'], res['predict_s'],
                   'scores = pred.missing.txt' if not nbad else
                   'its text parser gives other scores than pred.missing.txt on %d docs' % nbad))
        m['reference_out'] = out
        methods.append(m)

    timed = [m for m in methods if m['status'] == 'ok']
    # --- timed repetitions, interleaved: every method once per round, the order rotated per round.
    for rep in range(a.reps):
        k = rep % max(1, len(timed))
        order = timed[k:] + timed[:k]
        line = []
        for pos, m in enumerate(order):
            out = os.path.join(mdir, 'rep.%s.txt' % m['method'])
            row = {'model': w.key, 'label': w.label, 'trees': w.trees, 'leaves': w.leaves,
                   'docs': w.ndocs, 'method': m['method'], 'role': m['role'], 'rep': rep + 1,
                   'position': pos + 1}
            if m['role'] == 'xgboost':
                res, rc, err = run_xgb(w.model, w.docs, out, os.path.join(mdir, 'xgb.json'))
                if res is None:
                    log('%s: XGBoost failed in repetition %d (exit %d): %s'
                        % (w.label, rep + 1, rc, err[-2000:]))
                    m['status'] = 'failed in repetition %d' % (rep + 1)
                    ok = False
                    continue
                m['times'].append(res['total_s'])
                m['xgb'].append(res)
                m['cpu'].append(res['cpu_s'])
                m['startup'].append(res['load_s'])
                row.update(wall_s=res['total_s'], cpu_s=res['cpu_s'], startup_s=res['load_s'],
                           xgb_parse_s=res['parse_s'], xgb_predict_s=res['predict_s'],
                           xgb_write_s=res['write_s'], xgb_threads=res['threads'],
                           process_wall_s=res['process_wall_s'])
                line.append('xgboost %.2f' % res['total_s'])
            else:
                t, cpu, rc, err = run_qs(qs_bin['qs-score'], m['method'], w.qsm, w.docs, out)
                if rc != 0:
                    log('%s: %s failed in repetition %d (exit %d): %s'
                        % (w.label, m['method'], rep + 1, rc, err))
                    m['status'] = 'failed in repetition %d' % (rep + 1)
                    ok = False
                    continue
                ts, _, rc2, _ = run_qs(qs_bin['qs-score'], m['method'], w.qsm, w.docs,
                                       out + '.empty', empty=True)
                m['times'].append(t)
                m['cpu'].append(cpu)
                if rc2 == 0:
                    m['startup'].append(ts)
                row.update(wall_s=t, cpu_s=cpu, startup_s=ts if rc2 == 0 else '',
                           process_wall_s=t)
                line.append('%s %.2f' % (m['method'], t))
            same = same_file(out, m['reference_out'])
            row['same_as_checked'] = int(same)
            if not same:
                log('%s: %s: repetition %d wrote other scores than the checked warm-up run'
                    % (w.label, m['method'], rep + 1))
                m['status'] = 'unstable output'
                ok = False
            rows.append(row)
        log('%s: round %d/%d: %s' % (w.label, rep + 1, a.reps, ', '.join(line)))
    return methods, ok


# ----------------------------------------------------------------------------- report

def summarize(methods_by_w):
    summary = []
    for w, methods in methods_by_w:
        med = {}
        for m in methods:
            if m.get('times') and m['status'] == 'ok':
                med[m['method']] = statistics.median(m['times'])
        xgb_t = med.get('xgboost')
        base = {m['method']: med[m['method']] for m in methods
                if m['role'] == 'baseline' and m['method'] in med}
        best = min(base, key=base.get) if base else None
        for m in methods:
            s = {'w': w, 'm': m, 'median': med.get(m['method'])}
            t = s['median']
            if t is not None:
                s['us_doc'] = t / w.ndocs * 1e6
                s['ns_doc_tree'] = t / w.ndocs / w.trees * 1e9
                s['x_xgb'] = xgb_t / t if xgb_t else None
                s['x_best'] = base[best] / t if best else None
                s['best'] = best
                s['min'], s['max'] = min(m['times']), max(m['times'])
                s['spread'] = (s['max'] - s['min']) / t * 100
                s['startup'] = statistics.median(m['startup']) if m['startup'] else None
                if m['role'] == 'xgboost':
                    for k in ('parse_s', 'predict_s', 'write_s', 'load_s', 'cpu_s', 'process_wall_s'):
                        s['xgb_' + k] = statistics.median(r[k] for r in m['xgb'])
                    s['xgb_threads'] = max(r['threads'] for r in m['xgb'])
            summary.append(s)
    return summary


def check_cell(s):
    m = s['m']
    if m['status'] != 'ok':
        return m['status']
    return m.get('check', '')


def markdown(summary, machine_short, a, elapsed):
    out = []
    out.append('Machine: %s. One thread; %d interleaved repetitions, medians; %s.'
               % (machine_short, a.reps, 'text on stdin to scores on stdout, parsing included'))
    out.append('')
    out.append('| model (trees × leaves) | docs | method | µs/doc | ns/doc/tree | × XGBoost | '
               '× best baseline | spread | startup ms | scores |')
    out.append('|---|---:|---|---:|---:|---:|---:|---:|---:|---|')
    order = {'qs': 0, 'parse-only': 1, 'baseline': 2, 'xgboost': 3}
    by_w = []
    for s in summary:
        if not by_w or by_w[-1][0] is not s['w']:
            by_w.append((s['w'], []))
        by_w[-1][1].append(s)
    for w, ss in by_w:
        ss.sort(key=lambda s: (order.get(s['m']['role'], 9),
                               s['median'] if s['median'] is not None else 1e99))
        first = True
        for s in ss:
            m = s['m']
            name = m['method'] if m['role'] != 'baseline' else m['method'] + ' (baseline)'
            if s['median'] is None:
                cells = ['—'] * 6
            else:
                best = s.get('best')
                cells = [fmt_num(s['us_doc']), fmt_num(s['ns_doc_tree']),
                         '%.2f' % s['x_xgb'] if s['x_xgb'] else '—',
                         ('%.2f' % s['x_best'] + ('' if m['method'] != best else ' (best)'))
                         if s['x_best'] else '—',
                         '%.0f%%' % s['spread'],
                         fmt_num(s['startup'] * 1e3) if s['startup'] is not None else '—']
            out.append('| %s | %s | %s | %s | %s |' % (
                w.label if first else '', fmt_int(w.ndocs) if first else '', name,
                ' | '.join(cells), check_cell(s)))
            first = False
    xs = [s for s in summary if s['m']['role'] == 'xgboost' and s['median'] is not None]
    if xs:
        out.append('')
        out.append("XGBoost's time, split (medians, µs/doc): DMatrix from the text file, predict, "
                   'writing the scores; the model load is not in its total.')
        out.append('')
        out.append('| model | parse | predict | write | total | predict ns/doc/tree | load ms | '
                   'CPU/wall | threads |')
        out.append('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
        for s in xs:
            w = s['w']
            n = w.ndocs
            out.append('| %s | %s | %s | %s | %s | %s | %s | %.2f | %d |' % (
                w.label, fmt_num(s['xgb_parse_s'] / n * 1e6), fmt_num(s['xgb_predict_s'] / n * 1e6),
                fmt_num(s['xgb_write_s'] / n * 1e6), fmt_num(s['us_doc']),
                fmt_num(s['xgb_predict_s'] / n / w.trees * 1e9), fmt_num(s['xgb_load_s'] * 1e3),
                s['xgb_cpu_s'] / s['median'] if s['median'] else 0, s['xgb_threads']))
    out.append('')
    out.append('µs/doc and ns/doc/tree: median wall time of the whole run / documents (/ trees). '
               '× XGBoost, × best baseline: that time divided into XGBoost\'s, and into the fastest '
               'baseline back end\'s (walk and the STRUCT+/VPRED-style baselines of qs-score); '
               '> 1 is faster. spread: (max − min) / median. startup ms: qs-score on empty input '
               '(process start and model load, included in µs/doc); for XGBoost the Booster load, '
               'not included. Bench wall time: %.0f s.' % elapsed)
    return '\n'.join(out) + '\n'


RUN_FIELDS = ['model', 'label', 'trees', 'leaves', 'docs', 'method', 'role', 'rep', 'position',
              'wall_s', 'cpu_s', 'startup_s', 'process_wall_s', 'xgb_parse_s', 'xgb_predict_s',
              'xgb_write_s', 'xgb_threads', 'same_as_checked', 'commit']
SUMMARY_FIELDS = ['model', 'label', 'trees', 'leaves', 'leaves_range', 'docs', 'method', 'role',
                  'status', 'scores', 'reps', 'median_s', 'min_s', 'max_s', 'us_per_doc',
                  'ns_per_doc_tree', 'speedup_vs_xgboost', 'speedup_vs_best_baseline',
                  'best_baseline', 'startup_s', 'xgb_parse_s', 'xgb_predict_s', 'xgb_write_s',
                  'xgb_load_s', 'cpu_s', 'commit']


def write_csvs(run_dir, rows, summary, commit):
    runs = os.path.join(run_dir, 'runs.csv')
    with open(runs, 'w', newline='') as f:
        wr = csv.DictWriter(f, fieldnames=RUN_FIELDS, extrasaction='ignore')
        wr.writeheader()
        for r in rows:
            wr.writerow(dict(r, commit=commit))
    summ = os.path.join(run_dir, 'summary.csv')

    def g(x, fmt='%.6g'):
        return '' if x is None else fmt % x
    with open(summ, 'w', newline='') as f:
        wr = csv.DictWriter(f, fieldnames=SUMMARY_FIELDS)
        wr.writeheader()
        for s in summary:
            w, m = s['w'], s['m']
            ok = s['median'] is not None
            wr.writerow({
                'model': w.key, 'label': w.label, 'trees': w.trees, 'leaves': w.leaves,
                'leaves_range': w.leaves_desc, 'docs': w.ndocs, 'method': m['method'],
                'role': m['role'], 'status': m['status'], 'scores': m.get('check', ''),
                'reps': len(m.get('times', [])),
                'median_s': g(s['median']), 'min_s': g(s.get('min')), 'max_s': g(s.get('max')),
                'us_per_doc': g(s.get('us_doc')), 'ns_per_doc_tree': g(s.get('ns_doc_tree')),
                'speedup_vs_xgboost': g(s.get('x_xgb'), '%.4g'),
                'speedup_vs_best_baseline': g(s.get('x_best'), '%.4g'),
                'best_baseline': s.get('best') or '' if ok else '',
                'startup_s': g(s.get('startup')),
                'xgb_parse_s': g(s.get('xgb_parse_s')), 'xgb_predict_s': g(s.get('xgb_predict_s')),
                'xgb_write_s': g(s.get('xgb_write_s')), 'xgb_load_s': g(s.get('xgb_load_s')),
                'cpu_s': g(statistics.median(m['cpu'])) if m.get('cpu') else '',
                'commit': commit})
    return runs, summ


# ----------------------------------------------------------------------------- main

def main():
    if len(sys.argv) == 6 and sys.argv[1] == '--xgb-child':
        xgb_child(*sys.argv[2:])
        return EXIT_OK
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(
        prog='bench/run.sh',
        description='Time every qs-score back end and XGBoost on the same models and documents; '
                    'check the scores; print a markdown table.  Default selection: --quick.')
    sel = ap.add_mutually_exclusive_group()
    sel.add_argument('--quick', action='store_true',
                     help='1000x8, 1000x64 and the oblivious model (the default)')
    sel.add_argument('--all', action='store_true',
                     help='the whole grid {1000,5000,20000} trees x {8,16,32,64} leaves + oblivious '
                          '(the first time, training takes up to an hour on one core, and '
                          'the timing itself an hour or more)')
    sel.add_argument('--models', metavar='LIST',
                     help="comma-separated TREESxLEAVES (MQ2008; e.g. 1000x64,5000x64) and/or "
                          "'oblivious'")
    ap.add_argument('--reps', type=int, default=5, help='timed repetitions per method (default 5)')
    ap.add_argument('--docs', type=int, default=50000, help='minimum documents per model (default 50000)')
    ap.add_argument('--seed', type=int, default=1, help='gen_workload.py seed (default 1)')
    ap.add_argument('--backends', metavar='LIST',
                    help='only these qs-score back ends (default: all that qs-score --list-backends lists as available)')
    ap.add_argument('--threads', default='2', metavar='LIST',
                    help="also time qs-score's auto back end with these thread counts (default 2; "
                         "every other method runs one thread)")
    ap.add_argument('--no-xgboost', action='store_true', help='do not time XGBoost')
    ap.add_argument('--no-train', action='store_true',
                    help='fail instead of training a missing workload')
    ap.add_argument('--prepare-only', action='store_true',
                    help='build the workloads (train the models) and stop')
    ap.add_argument('--pin', type=int, metavar='CPU',
                    help='run everything on this CPU only (sched_setaffinity)')
    ap.add_argument('--dir', default=os.environ.get('QS_BENCH_DIR') or '/tmp/qs-bench',
                    help='scratch folder (default: $QS_BENCH_DIR or /tmp/qs-bench)')
    ap.add_argument('--shared', default=os.environ.get('QS_ORACLE_DATA'),
                    help='the oracle data (default: $QS_ORACLE_DATA or build/oracle, which make '
                         'unpacks from tests/oracle)')
    ap.add_argument('--repo', default=os.path.dirname(here), help=argparse.SUPPRESS)
    ap.add_argument('--no-build', action='store_true', help="run.sh: don't run make first")
    a = ap.parse_args()
    t_start = time.perf_counter()
    if a.reps < 1:
        ap.error('--reps must be >= 1')
    if a.docs < 1:
        ap.error('--docs must be >= 1')

    repo = os.path.realpath(a.repo)
    shared = os.path.realpath(a.shared or os.path.join(repo, 'build', 'oracle'))
    if not os.path.isdir(shared):
        die('oracle data not found at %s (make oracle unpacks it; or set QS_ORACLE_DATA or --shared)'
            % shared)
    bench_dir = os.path.realpath(a.dir)
    if bench_dir == repo or bench_dir.startswith(repo + os.sep):
        die('scratch folder %s is inside the repository %s; choose another (--dir or QS_BENCH_DIR)'
            % (bench_dir, repo), EXIT_USAGE)
    keys = parse_selection(a)
    need_xgb = any(k != 'oblivious' for k in keys)
    try:
        import numpy  # noqa: F401
    except ImportError:
        die('python3 numpy is missing: apt-get install python3-xgboost python3-numpy (and run '
            'with /usr/bin/python3)')
    if need_xgb:
        try:
            import xgboost  # noqa: F401
        except ImportError:
            die('python3 xgboost is missing: apt-get install python3-xgboost python3-numpy (and run '
                'with /usr/bin/python3)')
    if any(k != 'oblivious' for k in keys):
        for p in (GEN_WORKLOAD, os.path.join(shared, MQ2008_TRAIN)):
            if not os.path.isfile(p):
                die('%s is missing (the oracle data is incomplete)' % p)
        if not shutil.which('zstd'):
            die('the zstd program is missing (gen_workload.py reads .zst files): apt-get install zstd')

    # Private copies of the tools: other people may rebuild bin/ while this runs.
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    run_dir = os.path.join(bench_dir, 'results', stamp)
    n = 1
    while os.path.exists(run_dir):
        n += 1
        run_dir = os.path.join(bench_dir, 'results', '%s-%d' % (stamp, n))
    wl_root = os.path.join(bench_dir, 'workloads')
    try:
        os.makedirs(wl_root, exist_ok=True)
        os.makedirs(os.path.join(run_dir, 'bin'))
    except OSError as e:
        die('cannot create the scratch folder %s: %s' % (bench_dir, e))
    qs_bin = {}
    for t in ('qs-score', 'qs-convert', 'qs-compile'):
        src = os.path.join(repo, 'bin', t)
        if not os.access(src, os.X_OK):
            die('%s not found or not executable: build qs first (make -C %s, or bench/run.sh without '
                '--no-build)' % (src, repo))
        dst = os.path.join(run_dir, 'bin', t)
        shutil.copy2(os.path.realpath(src), dst)
        qs_bin[t] = dst
    if a.pin is not None:
        try:
            os.sched_setaffinity(0, {a.pin})
        except (OSError, AttributeError) as e:
            die('--pin %d: %s' % (a.pin, e), EXIT_USAGE)

    backends, version_text = list_backends(qs_bin['qs-score'])
    if a.backends:
        want = [b.strip() for b in a.backends.split(',') if b.strip()]
        names = [n for n, _ in backends]
        for b in want:
            if b not in names:
                shutil.rmtree(run_dir, ignore_errors=True)
                die("--backends: qs-score has no back end '%s' (it lists: %s)" % (b, ', '.join(names)),
                    EXIT_USAGE)
        backends = [(n, d) for n, d in backends if n in want]
    for t in (int(x) for x in a.threads.split(',') if x.strip()):
        if t > 1:
            backends.append(('auto x%d' % t, 'auto with %d threads' % t))
    log('back ends: %s' % ', '.join('%s [%s]' % (n, backend_role(n, d)) for n, d in backends))

    machine_txt, machine_short, git = machine_info(repo, qs_bin['qs-score'], version_text)
    machine_path = os.path.join(run_dir, 'machine.txt')
    with open(machine_path, 'w') as f:
        f.write(machine_txt)

    workloads = []
    for k in keys:
        if k == 'oblivious':
            workloads.append(prepare_oblivious(a, shared, wl_root))
        else:
            workloads.append(prepare_mq2008(a, k, shared, wl_root))
    if a.prepare_only:
        log('workloads ready in %s' % wl_root)
        shutil.rmtree(run_dir, ignore_errors=True)
        return EXIT_OK

    rows, per_w, all_ok = [], [], True
    for w in workloads:
        methods, ok = bench_workload(a, w, backends, qs_bin, run_dir, rows,
                                     do_xgb=(w.kind == 'xgboost' and not a.no_xgboost))
        per_w.append((w, methods))
        all_ok = all_ok and ok
    with open(machine_path, 'a') as f:
        f.write('\nload average at end: %s\n' % read_text('/proc/loadavg'))
    summary = summarize(per_w)
    commit = git['commit'] + ('+dirty' if git['dirty'] else '')
    runs_csv, summary_csv = write_csvs(run_dir, rows, summary, commit)
    table = markdown(summary, machine_short, a, time.perf_counter() - t_start)
    table_path = os.path.join(run_dir, 'table.md')
    with open(table_path, 'w') as f:
        f.write(table)
    # The scores of the last repetitions are large and not needed any more.
    for w in workloads:
        d = os.path.join(run_dir, 'work', w.key)
        for fn in os.listdir(d) if os.path.isdir(d) else []:
            if fn.startswith('rep.'):
                os.unlink(os.path.join(d, fn))
    sys.stdout.write(table)
    sys.stdout.flush()
    log('table:   %s' % table_path)
    log('csv:     %s (medians), %s (every repetition)' % (summary_csv, runs_csv))
    log('machine: %s' % machine_path)
    if not all_ok:
        log('FAILED: some back end failed or gave other scores than the reference (see above)')
        return EXIT_FAIL
    return EXIT_OK


if __name__ == '__main__':
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        die('interrupted', 130)
