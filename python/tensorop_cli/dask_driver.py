"""tensorop-dask: run tensorop over many file pairs on a Dask cluster.

    tensorop-dask sub|sqdiff A B -o OUTDIR [--scheduler ADDRESS] [--connect-timeout SECONDS]
                  [--workers N] [--threads T] [-f LEVEL] [--retries R] [--split-above BYTES]
                  [--parts N] [--skip-unpaired] [--report PATH] [--tensorop PATH] [--quiet]

A and B are two directories (files paired by relative path: *.npy, *.npz, *.safetensors; a
sharded checkpoint's shards pair by file name, and its *.safetensors.index.json files must
agree), two quoted glob patterns (paired by the path below the pattern's fixed directory), or two
files. Each pair is one unit: one Dask task that runs the tensorop binary on a worker, or, for a
.npy pair whose output is larger than --split-above, one task per part (`tensorop --part K/N`).
Exit 1 of tensorop (a runtime error) raises, so Dask retries the task; exits 2, 3 and 5 are
deterministic and come back as failed units at once. At the end the successful units' reports
are merged with `tensorop merge-stats --by-dtype` and one JSON report is written atomically.

Exit status: 0 every unit succeeded; 1 a unit failed (each is named), a runtime error, or a
--scheduler not reached within --connect-timeout; 2 usage (OUTDIR equal to, inside or containing
an input directory included: nothing written); 5 files only one side holds (without
--skip-unpaired) or checkpoint indexes that disagree, nothing run. docs/dask.md describes it
all; :func:`run` is the Python API.
"""

import argparse
import ctypes
import glob
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tensorop_cli import __version__, binary

__all__ = ["run", "plan", "execute", "run_task", "PlanError", "TensoropError", "main"]

EXTENSIONS = (".npy", ".npz", ".safetensors")
DEFAULT_SPLIT_ABOVE = 1 << 30
MAX_PARTS = 1 << 20  # tensorop's limit on --part K/N
REPORT_NAME = "tensorop-dask-report.json"
DTYPE_BYTES = {
    "float16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
    "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
}
# tensorop exits that retrying cannot change: usage (2), a failed check (3), unpaired members (5).
DETERMINISTIC = {0: "ok", 2: "usage", 3: "invalid", 5: "unpaired"}


class PlanError(Exception):
    """The inputs cannot be paired into units; ``exit_code`` is the driver's exit status."""

    def __init__(self, message, exit_code=1, unpaired=None):
        super().__init__(message, exit_code, unpaired)
        self.exit_code = exit_code
        self.unpaired = unpaired

    def __str__(self):
        return self.args[0]


class TensoropError(RuntimeError):
    """A tensorop run that a retry may fix (exit 1, a signal, no report): raised in the task so
    that Dask retries it. ``result`` holds what the run left (exit code, report, stderr)."""

    def __init__(self, message, result):
        # Only the message in ``args``: Dask shows them when a task fails, and the result (a
        # whole report) is no message. It travels between processes through __reduce__.
        super().__init__(message)
        self.result = result

    def __reduce__(self):
        return (TensoropError, (self.args[0], self.result))

    def __str__(self):
        return self.args[0]


# ------------------------------------------------------------------------------------------
# On the worker
# ------------------------------------------------------------------------------------------

_prctl = None


def _die_with_parent():
    """A preexec_fn that makes the child get SIGKILL when the thread that started it dies
    (PR_SET_PDEATHSIG), so that a killed worker leaves no tensorop writing after the fact.
    None off Linux. prctl is looked up before the fork: the child only calls it."""
    global _prctl
    if not sys.platform.startswith("linux"):
        return None
    if _prctl is None:
        fn = ctypes.CDLL(None, use_errno=True).prctl
        fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _prctl = fn
    prctl, parent = _prctl, os.getpid()

    def preexec():
        prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the worker died before prctl took effect
            os._exit(1)

    return preexec


def _worker_address():
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


def run_task(op, a, b, output, part=None, threads=1, tensorop=None, extra=()):
    """Runs ``tensorop OP A B -o OUTPUT --stats --report - --quiet --threads THREADS [--part K/N]``
    and returns ``{"exit_code", "report", "stderr", "worker", "seconds"}``. Exits 0, 2, 3 and 5
    are returned; anything else (exit 1, a signal, an unreadable report) raises
    :class:`TensoropError`. The report comes on standard output, so a killed run leaves no file."""
    cmd = [tensorop or binary(), op, a, b, "-o", output, "--stats", "--report", "-", "--quiet",
           "--threads", str(threads)]
    if part:
        cmd += ["--part", f"{part[0]}/{part[1]}"]
    cmd += list(extra)
    start = time.monotonic()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, preexec_fn=_die_with_parent())
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    result = {
        "exit_code": proc.returncode,
        "report": report,
        "stderr": proc.stderr.decode("utf-8", "replace")[-4000:],
        "worker": _worker_address(),
        "seconds": round(time.monotonic() - start, 3),
    }
    if proc.returncode in DETERMINISTIC and (report is not None or proc.returncode == 2):
        return result
    what = os.path.basename(output) + (f" part {part[0]}/{part[1]}" if part else "")
    raise TensoropError(f"{what}: {_exit_words(proc.returncode)}: {_said(result)}", result)


def _exit_words(code):
    """``exit 1``, or ``killed by SIGKILL`` for a run a signal ended (a negative returncode)."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def _said(result):
    """What a tensorop run said about its failure: its report's ``error``, else its standard
    error, else that it left no report."""
    return ((result.get("report") or {}).get("error") or result.get("stderr", "").strip()
            or f"tensorop ended with {_exit_words(result.get('exit_code'))} and left no report")


def _one_line(text, limit=300):
    """``text`` on one line (its lines joined by '; '), at most ``limit`` characters."""
    text = "; ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


# ------------------------------------------------------------------------------------------
# Planning: pairs, units, parts
# ------------------------------------------------------------------------------------------

def _n(count, noun, plural=None):
    """``count`` and ``noun``, plural unless count is 1: ``1 unit``, ``3 units``."""
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"


def _magic(s):
    return any(c in s for c in "*?[")


def _absolute(path):
    """``path`` made absolute without changing the file it names: ``.`` and doubled separators
    dropped, and ``name/..`` dropped only where ``name`` is no symbolic link (after a link,
    ``..`` is the link target's parent, which os.path.abspath would get wrong), so the paths
    handed to the workers name what the given ones name. On Windows, which resolves ``..`` by
    name, os.path.abspath."""
    if os.name == "nt":
        return os.path.abspath(path)
    parts = []
    for name in os.path.join(os.getcwd(), path).split("/"):
        if name in ("", "."):
            continue
        if name == ".." and (not parts or (parts[-1] != ".."
                                           and not os.path.islink("/" + "/".join(parts)))):
            parts = parts[:-1]
        else:
            parts.append(name)
    return "/" + "/".join(parts)


def _canonical(path):
    """``path`` absolute, resolved one component at a time as the kernel would: a symbolic link
    of its existing part is followed before the ``..`` after it is applied (``link/..`` is the
    link target's parent, not the link's), ``/proc/self/cwd`` included; the part not made yet
    is appended (its ``..`` taken by name: a directory that does not exist is no link)."""
    return os.path.realpath(path)


def _identity(path):
    """What ``path`` names: its device and inode where it exists (the same file however
    spelt, bind mounts included), else its canonical spelling."""
    try:
        st = os.stat(path)
        return ("file", st.st_dev, st.st_ino)
    except OSError:
        return ("name", os.path.normcase(_canonical(path)))


def _is_within(inner, outer):
    """Whether ``inner`` is the directory ``outer`` or lies inside it, compared as the files
    they name, never as strings."""
    target = _identity(outer)
    at = _canonical(inner)
    while True:
        if _identity(at) == target:
            return True
        up = os.path.dirname(at)
        if up == at:
            return False
        at = up


def _input_dir(spec):
    """The directory an input names: itself, or a glob pattern's fixed leading part."""
    base = spec
    while _magic(base):
        base = os.path.dirname(base)
    return base or "."


def _refuse_outdir_among_inputs(outdir, inputs, files=False):
    """Exit 2, before any work: OUTDIR equal to, inside, or containing an input directory, where
    outputs and the report would land among the inputs, or inputs be read back as outputs. For
    two files (``files``), OUTDIR may not be either file's directory: the result and the report
    would land beside the inputs (inside or above it is fine, nothing there is read)."""
    for spec in inputs:
        where = (os.path.dirname(spec) or ".") if files else _input_dir(spec)
        inside, contains = _is_within(outdir, where), _is_within(where, outdir)
        if inside and contains:
            how = "is"
        elif files:
            continue
        elif inside:
            how = "lies inside"
        elif contains:
            how = "contains"
        else:
            continue
        what = f"the directory of the input {spec}" if files else "the input directory"
        raise PlanError(f"OUTDIR {outdir} {how} {what} {where}: the results and the report would "
                        "be written among the inputs; choose an OUTDIR outside every input "
                        "directory (nothing was written)", 2)


def _side(spec):
    """{relative name: absolute path} of the inputs a directory or a glob pattern names (OUTDIR
    lies outside it: :func:`_refuse_outdir_among_inputs`)."""
    found = {}
    if os.path.isdir(spec):
        base = _absolute(spec)
        for root, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for f in files:
                if f.endswith(EXTENSIONS) and not f.startswith("."):
                    path = os.path.join(root, f)
                    found[os.path.relpath(path, base).replace(os.sep, "/")] = path
        return found
    base = spec
    while _magic(base):
        base = os.path.dirname(base)
    base = _absolute(base or ".")
    for path in glob.glob(spec, recursive=True):
        path = _absolute(path)
        if os.path.isfile(path):
            found[os.path.relpath(path, base).replace(os.sep, "/")] = path
    if not found:
        raise PlanError(f"{spec}: the pattern matches no file", 1)
    return found


def _check_indexes(a, b):
    """Compares the weight maps of two sharded checkpoints' *.safetensors.index.json files; None
    when either directory has none. Raises PlanError (exit 5) when they disagree."""
    ia = sorted(glob.glob(os.path.join(glob.escape(a), "*.safetensors.index.json")))
    ib = sorted(glob.glob(os.path.join(glob.escape(b), "*.safetensors.index.json")))
    if not ia or not ib:
        return None
    names_a = {os.path.basename(p): p for p in ia}
    names_b = {os.path.basename(p): p for p in ib}
    if len(ia) == 1 and len(ib) == 1:
        pairs = [(ia[0], ib[0])]
    elif set(names_a) == set(names_b):
        pairs = [(names_a[n], names_b[n]) for n in sorted(names_a)]
    else:
        raise PlanError(f"the checkpoints' index files differ: {sorted(names_a)} in {a}, "
                        f"{sorted(names_b)} in {b}", 5)
    checked = []
    for pa, pb in pairs:
        maps = []
        for p in (pa, pb):
            try:
                with open(p, encoding="utf-8") as f:
                    maps.append(json.load(f)["weight_map"])
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise PlanError(f"{p}: not a readable safetensors index ({e})", 1)
        wa, wb = maps
        only_a, only_b = sorted(set(wa) - set(wb)), sorted(set(wb) - set(wa))
        moved = sorted(t for t in set(wa) & set(wb) if wa[t] != wb[t])
        if only_a or only_b or moved:
            def few(names, show=lambda t: t):
                more = f" and {len(names) - 5} more" if len(names) > 5 else ""
                return ", ".join(show(t) for t in names[:5]) + more
            def count(names):
                return _n(len(names), "tensor")
            problems = []
            if only_a:
                problems.append(f"{count(only_a)} only in A ({few(only_a)})")
            if only_b:
                problems.append(f"{count(only_b)} only in B ({few(only_b)})")
            if moved:
                problems.append(f"{count(moved)} in different shard files "
                                f"({few(moved, lambda t: f'{t}: {wa[t]} vs {wb[t]}')})")
            raise PlanError(f"the checkpoints are not sharded the same way: {pa} and {pb} "
                            f"disagree: {'; '.join(problems)}", 5)
        checked.append({"a": pa, "b": pb, "tensors": len(wa)})
    return checked


def _npy_headers(exe, paths):
    """{path: header} from `tensorop info --json` for the paths it can read as .npy files."""
    headers = {}
    for i in range(0, len(paths), 256):
        proc = subprocess.run([exe, "info", "--json", *paths[i:i + 256]], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            headers.update({h["path"]: h for h in json.loads(proc.stdout)})
        except (ValueError, KeyError, TypeError):
            pass
    return headers


def _output_bytes(ha, hb):
    """Bytes of the result of two .npy headers (NumPy broadcasting), or None when they do not
    make one (tensorop's checks will say why)."""
    if ha["dtype"] != hb["dtype"] or ha["dtype"] not in DTYPE_BYTES:
        return None
    sa, sb = list(ha["shape"]), list(hb["shape"])
    n = max(len(sa), len(sb))
    sa, sb = [1] * (n - len(sa)) + sa, [1] * (n - len(sb)) + sb
    elements = 1
    for x, y in zip(sa, sb):
        if x != y and 1 not in (x, y):
            return None
        elements *= max(x, y) if 0 not in (x, y) else 0
    return elements, elements * DTYPE_BYTES[ha["dtype"]]


def plan(op, a, b, outdir, *, split_above=DEFAULT_SPLIT_ABOVE, parts=None, skip_unpaired=False,
         tensorop=None):
    """The units of a job: ``{"op", "a", "b", "kind", "outdir", "units", "unpaired",
    "checkpoint_indexes"}``, each unit ``{"name", "a", "b", "output", "parts"}`` (``parts``: N
    for a pair run as N parts, else None). Raises :class:`PlanError`."""
    if op not in ("sub", "sqdiff"):
        raise PlanError(f"unknown operation {op!r}: sub or sqdiff", 2)
    given_outdir, outdir = outdir, _absolute(outdir)
    unpaired = {"only_in_a": [], "only_in_b": [], "skipped": bool(skip_unpaired)}
    indexes = None
    if os.path.isfile(a) and os.path.isfile(b):
        kind = "files"
        _refuse_outdir_among_inputs(given_outdir, (a, b), files=True)
        pairs = {os.path.basename(a): (_absolute(a), _absolute(b))}
    elif os.path.isfile(a) or os.path.isfile(b):
        raise PlanError("A and B must both be files, or both directories or glob patterns", 2)
    else:
        if not (os.path.isdir(a) or _magic(a)) or not (os.path.isdir(b) or _magic(b)):
            missing = a if not (os.path.isdir(a) or _magic(a)) else b
            raise PlanError(f"{missing}: no such file or directory", 1)
        kind = "directories" if os.path.isdir(a) and os.path.isdir(b) else "globs"
        _refuse_outdir_among_inputs(given_outdir, (a, b))
        side_a, side_b = _side(a), _side(b)
        if kind == "directories":
            indexes = _check_indexes(a, b)
        unpaired["only_in_a"] = sorted(set(side_a) - set(side_b))
        unpaired["only_in_b"] = sorted(set(side_b) - set(side_a))
        if (unpaired["only_in_a"] or unpaired["only_in_b"]) and not skip_unpaired:
            named = [f"{n} only in A" for n in unpaired["only_in_a"]]
            named += [f"{n} only in B" for n in unpaired["only_in_b"]]
            more = f" and {len(named) - 10} more" if len(named) > 10 else ""
            raise PlanError(f"{_n(len(named), 'file')} without a partner: "
                            f"{', '.join(named[:10])}{more} "
                            "(--skip-unpaired runs the pairs and reports these)", 5, unpaired)
        pairs = {n: (side_a[n], side_b[n]) for n in sorted(set(side_a) & set(side_b))}
        if not pairs:
            raise PlanError(f"no file pairs in {a} and {b}", 1, unpaired)
    units = []
    for name, (pa, pb) in pairs.items():
        output = os.path.join(outdir, *name.split("/"))
        for p in (pa, pb):
            if os.path.exists(output) and os.path.samefile(output, p):
                raise PlanError(f"{name}: the output {output} is an input; choose another OUTDIR", 2)
        units.append({"name": name, "a": pa, "b": pb, "output": output, "parts": None})
    if split_above:
        npy = [u for u in units if u["a"].endswith(".npy") and u["b"].endswith(".npy")]
        if npy:
            exe = tensorop or binary()
            headers = _npy_headers(exe, sorted({p for u in npy for p in (u["a"], u["b"])}))
            for u in npy:
                if u["a"] in headers and u["b"] in headers:
                    size = _output_bytes(headers[u["a"]], headers[u["b"]])
                    if size and size[1] > split_above:
                        n = min(parts or math.ceil(size[1] / split_above), size[0], MAX_PARTS)
                        u["parts"] = n if n >= 2 else None
    return {"op": op, "a": a, "b": b, "kind": kind, "outdir": outdir, "units": units,
            "unpaired": unpaired, "checkpoint_indexes": indexes}


# ------------------------------------------------------------------------------------------
# Running a plan on a client
# ------------------------------------------------------------------------------------------

def _staging(output):
    return os.path.join(os.path.dirname(output), f".{os.path.basename(output)}.tensorop-parts")


def _clean(units):
    """Removes the part runs' staging directories (a part re-run after its job was committed
    leaves a new one; a failed job leaves its parts) and temporary files killed runs left beside
    the outputs. Called once every task of these units has finished."""
    for u in units:
        if u["parts"]:
            shutil.rmtree(_staging(u["output"]), ignore_errors=True)
        pattern = f".{glob.escape(os.path.basename(u['output']))}.*.tensorop-tmp"
        for leftover in glob.glob(os.path.join(glob.escape(os.path.dirname(u["output"])), pattern)):
            try:
                os.remove(leftover)
            except OSError:
                pass


def _write_json(path, obj):
    """Writes obj as JSON to path atomically (a temporary file beside it, then os.replace), or
    to standard output for '-'."""
    text = json.dumps(obj, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    folder = os.path.dirname(_absolute(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _merge(exe, reports):
    """`tensorop merge-stats --by-dtype` over the reports: (merged object, None) or (None, why)."""
    with tempfile.TemporaryDirectory(prefix="tensorop-dask-") as tmp:
        names = []
        for i, report in enumerate(reports):
            names.append(f"{i:06d}.json")
            with open(os.path.join(tmp, names[-1]), "w", encoding="utf-8") as f:
                json.dump(report, f)
        proc = subprocess.run([exe, "merge-stats", "--by-dtype", *names], cwd=tmp,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    if proc.returncode != 0:
        return None, f"tensorop merge-stats exited with {proc.returncode}: " + \
            proc.stderr.decode("utf-8", "replace").strip()
    try:
        return json.loads(proc.stdout), None
    except ValueError as e:
        return None, f"tensorop merge-stats printed no JSON: {e}"


def _base_report(the_plan):
    return {
        "schema_version": 1,
        "tool": {"name": "tensorop-dask", "version": __version__},
        "op": the_plan["op"],
        "status": None,
        "exit_code": None,
        "error": None,
        "inputs": {"a": the_plan["a"], "b": the_plan["b"], "kind": the_plan.get("kind"),
                   "checkpoint_indexes": the_plan.get("checkpoint_indexes")},
        "output_dir": the_plan["outdir"],
        "settings": None,
        "cluster": None,
        "units": [],
        "unpaired": the_plan.get("unpaired"),
        "merged": None,
        "failures": [],
        "timings_s": {},
    }


def execute(client, the_plan, *, threads=1, retries=2, feature_level=None, report=None,
            progress=False, tensorop=None):
    """Runs a :func:`plan` on a ``distributed.Client`` and returns the combined report, also
    written (atomically) to ``report`` (default OUTDIR/tensorop-dask-report.json; '-' prints it).
    The report's ``exit_code`` is the driver's exit status."""
    import distributed

    t0 = time.monotonic()
    units, op = the_plan["units"], the_plan["op"]
    extra = ["--skip-unpaired"] if the_plan["unpaired"]["skipped"] else []
    if feature_level:
        extra += ["--feature-level", feature_level]
    for u in units:
        os.makedirs(os.path.dirname(u["output"]), exist_ok=True)
        if u["parts"]:  # a job starts clean: the driver owns OUTDIR
            shutil.rmtree(_staging(u["output"]), ignore_errors=True)

    futures, where = [], []
    for i, u in enumerate(units):
        for part in ([(k, u["parts"]) for k in range(1, u["parts"] + 1)] if u["parts"] else [None]):
            futures.append(client.submit(run_task, op, u["a"], u["b"], u["output"], part, threads,
                                         tensorop, extra, retries=retries, pure=False))
            where.append((i, part))
    if progress and futures:
        distributed.progress(futures)
    distributed.wait(futures)

    def attempts_on_scheduler(keys, retries, dask_scheduler=None):
        tasks = dask_scheduler.tasks
        return {k: 1 + (retries - tasks[k].retries) + tasks[k].suspicious
                for k in keys if k in tasks}

    try:
        attempts = client.run_on_scheduler(attempts_on_scheduler, [f.key for f in futures], retries)
    except Exception:  # noqa: BLE001 (attempts are reported when the scheduler can tell)
        attempts = {}

    tasks = [[] for _ in units]
    for fut, (i, part) in zip(futures, where):
        if fut.status == "finished":
            res, error = fut.result(), None
        else:
            try:
                exc = fut.exception()
            except Exception as e:  # noqa: BLE001 (a cancelled future raises its cancellation)
                exc = e
            res = getattr(exc, "result", None) or {"exit_code": None, "report": None}
            error = _said(res) if isinstance(exc, TensoropError) else f"{type(exc).__name__}: {exc}"
        rep = res.get("report")
        if error is None and res["exit_code"] != 0:
            error = _said(res)
        tasks[i].append({
            "part": {"index": part[0], "count": part[1]} if part else None,
            "exit_code": res.get("exit_code"),
            "attempts": attempts.get(fut.key),
            "worker": res.get("worker"),
            "seconds": res.get("seconds"),
            "error": error,
            "report": rep,
        })
    client.cancel(futures)  # nothing recomputes after this point, so cleaning up is safe
    t_run = time.monotonic()

    combined = _base_report(the_plan)
    ok_reports, entries = [], []
    for u, ts in zip(units, tasks):
        bad = next((t for t in ts if t["exit_code"] != 0), None)
        status = "ok" if bad is None else DETERMINISTIC.get(bad["exit_code"], "error")
        error = bad["error"] if bad else None
        if status == "ok" and u["parts"] and not os.path.exists(u["output"]):
            status, error = "error", "every part succeeded but none committed the output"
        known = [t["attempts"] for t in ts]
        entries.append({
            "name": u["name"],
            "inputs": [u["a"], u["b"]],
            "output": u["output"],
            "status": status,
            "exit_code": bad["exit_code"] if bad else 0,
            "attempts": sum(known) if None not in known else None,
            "error": error,
            "parts": u["parts"],
            "tasks": ts,
        })
        if status == "ok":
            ok_reports += [t["report"] for t in ts]
    _clean(units)

    failures = [{"name": e["name"], "status": e["status"], "exit_code": e["exit_code"],
                 "error": e["error"]} for e in entries if e["status"] != "ok"]
    merged, merge_error = (None, None)
    if ok_reports:
        merged, merge_error = _merge(tensorop or binary(), ok_reports)
    combined.update({
        "status": "ok" if not failures and not merge_error else "failed",
        "exit_code": 0 if not failures and not merge_error else 1,
        "error": merge_error or (f"{len(failures)} of {_n(len(entries), 'unit')} failed: "
                                 + ", ".join(f["name"] for f in failures) if failures else None),
        "settings": {"threads": threads, "retries": retries, "feature_level": feature_level},
        "cluster": {"scheduler": client.scheduler.address,
                    "workers": len(client.nthreads())},
        "units": entries,
        "merged": merged,
        "failures": failures,
        "timings_s": {"run": round(t_run - t0, 3), "total": round(time.monotonic() - t0, 3)},
    })
    _write_json(report or os.path.join(the_plan["outdir"], REPORT_NAME), combined)
    return combined


def _failure_line(unit):
    """One line for a failed unit of the combined report: its name (and the part that failed),
    its status, tensorop's exit status, how many times the failed task ran, and what tensorop
    said. The report keeps the whole message."""
    bad = next((t for t in unit["tasks"] if t["exit_code"] != 0), None)
    part = (bad or {}).get("part")
    name = unit["name"] + (f" part {part['index']}/{part['count']}" if part else "")
    how = [unit["status"], _exit_words(unit["exit_code"])]
    runs = (bad or unit).get("attempts")
    if runs and runs > 1:
        how.append(_n(runs, "run"))
    return f"{name} ({', '.join(how)}): {_one_line(unit['error'])}"


def _refuse_report_over_files(report, the_plan):
    """Exit 2, before any work: a --report that is one of the inputs or outputs, however spelt,
    would replace it."""
    if not report or report == "-":
        return
    mine = _identity(report)
    for u in the_plan["units"]:
        for what, path in (("input", u["a"]), ("input", u["b"]), ("output", u["output"])):
            if _identity(path) == mine:
                raise PlanError(f"--report {report} is the {what} {path}: the report would replace "
                                "it; choose another report path (nothing was written)", 2)


def _plan_failure(op, a, b, outdir, err, report):
    """The combined report of a job that stopped before running (pairing, missing inputs)."""
    rep = _base_report({"op": op, "a": a, "b": b, "outdir": _absolute(outdir),
                        "unpaired": err.unpaired})
    rep.update({"status": "unpaired" if err.exit_code == 5 else "error",
                "exit_code": err.exit_code, "error": str(err)})
    if err.exit_code != 2:  # as tensorop: no report for usage errors
        _write_json(report or os.path.join(_absolute(outdir), REPORT_NAME), rep)
    return rep


def run(client, op, a, b, outdir, *, threads=1, retries=2, feature_level=None,
        split_above=DEFAULT_SPLIT_ABOVE, parts=None, skip_unpaired=False, report=None,
        tensorop=None, progress=False):
    """Pairs A and B, runs every unit on ``client`` (a ``distributed.Client``) and returns the
    combined report (a dict, also written to ``report`` or OUTDIR/tensorop-dask-report.json).
    ``report["exit_code"]`` is what the command would exit with; ``report["failures"]`` names
    the units that failed after their retries."""
    try:
        the_plan = plan(op, a, b, outdir, split_above=split_above, parts=parts,
                        skip_unpaired=skip_unpaired, tensorop=tensorop)
        _refuse_report_over_files(report, the_plan)
    except PlanError as err:
        return _plan_failure(op, a, b, outdir, err, report)
    return execute(client, the_plan, threads=threads, retries=retries,
                   feature_level=feature_level, report=report, progress=progress,
                   tensorop=tensorop)


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------

def _size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    try:
        return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1073741824, 512M, 1G)")


def _positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return n


def _seconds(text):
    try:
        t = float(text)
    except ValueError:
        t = math.nan
    if not t > 0 or math.isinf(t):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return t


def _parser():
    p = argparse.ArgumentParser(
        prog="tensorop-dask",
        description="Run tensorop sub or sqdiff over many file pairs on a Dask cluster: one task "
                    "per pair, or per part of a large .npy pair; one combined JSON report.",
        epilog="Exit status: 0 all units succeeded; 1 a unit failed, a runtime error, or the "
               "scheduler not reached; 2 usage (an OUTDIR among the inputs included; nothing "
               "written); 5 files without a partner or checkpoint indexes that disagree (nothing "
               "run).")
    p.add_argument("op", choices=("sub", "sqdiff"))
    p.add_argument("a", metavar="A", help="directory, quoted glob pattern, or file")
    p.add_argument("b", metavar="B", help="directory, quoted glob pattern, or file")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                   help="directory for the results, under the pairs' relative paths")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler (default: a local cluster of worker processes)")
    p.add_argument("--connect-timeout", type=_seconds, default=5.0, metavar="SECONDS",
                   help="how long to try to reach --scheduler before giving up (default 5)")
    p.add_argument("--workers", type=_positive, metavar="N",
                   help="local cluster only: worker processes (default: cores / --threads)")
    p.add_argument("--threads", type=_positive, default=1, metavar="T",
                   help="tensorop --threads for each task (default 1)")
    p.add_argument("-f", "--feature-level", metavar="L",
                   help="tensorop --feature-level for every run (e.g. none, for bfloat16 members; "
                        "default: tensorop's, latest)")
    p.add_argument("--retries", type=int, default=2, metavar="R",
                   help="retries of a task whose tensorop run fails with exit 1 (default 2)")
    p.add_argument("--split-above", type=_size, default=DEFAULT_SPLIT_ABOVE, metavar="BYTES",
                   help="run a .npy pair whose result is larger than this as parts "
                        "(default 1G; 0: never)")
    p.add_argument("--parts", type=_positive, metavar="N",
                   help="parts per split pair (default: result size / --split-above, rounded up)")
    p.add_argument("--skip-unpaired", action="store_true",
                   help="run the pairs and report the files (and container members) only one "
                        "side holds, instead of failing with exit 5")
    p.add_argument("--report", metavar="PATH",
                   help=f"combined JSON report ('-': standard output; default OUTDIR/{REPORT_NAME})")
    p.add_argument("--tensorop", metavar="PATH",
                   help="the tensorop executable, the same path on every worker (default: the "
                        "installed one, or TENSOROP_BIN)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no summary; errors only")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    say = (lambda *a: None) if args.quiet else (lambda msg: print(f"tensorop-dask: {msg}",
                                                                  file=sys.stderr))
    try:
        import distributed
    except ImportError:
        print("tensorop-dask: error: needs Dask: pip install 'dask[distributed]'",
              file=sys.stderr)
        return 1

    def stop(err):
        _plan_failure(args.op, args.a, args.b, args.output, err, args.report)
        print(f"tensorop-dask: error: {err}", file=sys.stderr)
        return err.exit_code

    try:
        the_plan = plan(args.op, args.a, args.b, args.output, split_above=args.split_above,
                        parts=args.parts, skip_unpaired=args.skip_unpaired, tensorop=args.tensorop)
        _refuse_report_over_files(args.report, the_plan)
    except PlanError as err:
        return stop(err)
    except FileNotFoundError as err:
        return stop(PlanError(str(err), 1))
    tasks = sum(u["parts"] or 1 for u in the_plan["units"])
    say(f"{_n(len(the_plan['units']), 'unit')}, {_n(tasks, 'task')}")

    if args.scheduler:
        try:
            client, cluster = distributed.Client(args.scheduler, timeout=args.connect_timeout), None
        except ValueError as err:  # an address Dask cannot parse, or of an unknown scheme
            return stop(PlanError(f"--scheduler {args.scheduler}: {_one_line(err)} "
                                  "(e.g. tcp://host:8786)", 2))
        except (OSError, TimeoutError) as err:
            return stop(PlanError(
                f"cannot reach the scheduler {args.scheduler} within "
                f"{args.connect_timeout:g} s ({_one_line(err) or type(err).__name__}); is it "
                "running, and is the address right? (--connect-timeout waits longer)", 1))
    else:
        cores = os.cpu_count() or 1
        workers = args.workers or max(1, cores // args.threads)
        # The workers' own log of a failed task (Dask's "Compute Failed" block, with a
        # traceback, once per attempt) says nothing the driver's one line per failed unit does
        # not: keep only their critical messages.
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=max(1, cores // (workers * args.threads)),
            processes=True, dashboard_address=":0", silence_logs=logging.CRITICAL)
        client = distributed.Client(cluster)
        say(f"local cluster: {_n(workers, 'worker process', 'worker processes')}; "
            f"dashboard {client.dashboard_link}")
    try:
        combined = execute(client, the_plan, threads=args.threads, retries=args.retries,
                           feature_level=args.feature_level, report=args.report,
                           tensorop=args.tensorop,
                           progress=not args.quiet and args.report != "-" and sys.stdout.isatty())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    ok = len(combined["units"]) - len(combined["failures"])
    say(f"{ok} of {_n(len(combined['units']), 'unit')} ok in {combined['timings_s']['total']} s; "
        f"report: {args.report or os.path.join(the_plan['outdir'], REPORT_NAME)}")
    for unit in combined["units"]:
        if unit["status"] != "ok":
            print(f"tensorop-dask: failed: {_failure_line(unit)}", file=sys.stderr)
    if combined["error"] and not combined["failures"]:
        print(f"tensorop-dask: error: {combined['error']}", file=sys.stderr)
    return combined["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
