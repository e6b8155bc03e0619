"""A file of reviews extracted into an output that survives a crash and that a later call
continues (Extractor.extract_file; docs/reliability.md): the library's resumable output
(pd_output_*) and the command's two readers, Tianchi CSV through tianchi-eval's CSV reader (the
one `pocketdec extract` reads with) and JSONL by pocketdec.dask's reader of the command's rule.
The output is what `pocketdec extract` writes for the same input and options, byte for byte."""

import ctypes
import hashlib
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

from . import _lib
from ._lib import byref, check, cpath, cstr, pd

__all__ = ["ResumableOutput", "extract_file"]

_WHOLE = 8 << 20  # files hashed whole up to this size; larger ones by size, mtime and edges
_TE_CSV_FAIL, _TE_CSV_END, _TE_CSV_BROKEN = -1, 0, 2
_libc = ctypes.CDLL(None)
_libc.fopen.restype, _libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
_libc.fclose.argtypes = [ctypes.c_void_p]


class ResumableOutput:
    """A crash-safe output file (pd_output_*): each commit() is on disk whole or not at all,
    and PATH.progress beside it names the run and how far the output is whole. resume=True
    continues the run that progress file describes (the run text must be the same, else
    Error naming what differs), its torn tail cut; state is then the last whole commit's
    state (None for a fresh start). sync=True fsyncs after every commit (default: every 5 s
    and at finish()). Use from one thread at a time."""

    def __init__(self, path, run, *, resume=False, sync=False):
        params = pd.pd_output_default_params()
        params.resume = 1 if resume else 0
        if sync:
            params.sync_seconds = 0.0
        state, err = ctypes.c_void_p(), _lib.new_error()
        ptr = pd.pd_output_open(cpath(path, "output"), cstr(run, "run"), byref(params), byref(state), byref(err))
        if not ptr:
            _lib.raise_error(err)
        self.state = _lib.take_string(state.value) if state.value else None
        self._ptr = ptr
        self._finalizer = weakref.finalize(self, pd.pd_output_free, ptr)

    def counts(self):
        """The state of the run resumed as counts ({} for a fresh start): the inverse of
        commit_counts."""
        return {k: int(v) for k, v in (kv.split("=") for kv in (self.state or "").split())}

    def commit_counts(self, data, counts):
        """commit() with the state "key=N ..." of counts (a dict of ints), as counts() reads it."""
        self.commit(data, " ".join(f"{k}={v}" for k, v in counts.items()))

    def commit(self, data, state):
        """Append data (bytes, may be empty) as one commit, with the caller's state after it
        (a str of one line: what a resume hands back)."""
        if not self._finalizer.alive:
            raise _lib.closed_error("ResumableOutput")
        err = _lib.new_error()
        check(pd.pd_output_commit(self._ptr, bytes(data), len(data), cstr(state, "state"), byref(err)), err)

    def finish(self):
        """The run is done: synced, the progress marked complete, the file closed."""
        if not self._finalizer.alive:
            raise _lib.closed_error("ResumableOutput")
        self._finalizer.detach()
        err = _lib.new_error()
        check(pd.pd_output_finish(self._ptr, byref(err)), err)

    def close(self):
        """Close without finishing (the progress kept up to date for a resume)."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------- the run

def _identity(value):
    """A path that exists by its real path and contents; anything else by its repr."""
    if not isinstance(value, (str, bytes, os.PathLike)) or not os.path.exists(value):
        return value if isinstance(value, str) else repr(value)
    real = os.path.realpath(value)
    h, files, size = hashlib.sha256(), 0, 0
    walk = [(real, [], [""])] if os.path.isfile(real) else sorted(os.walk(real))
    for root, dirs, names in walk:
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            path = os.path.join(root, name) if name else root
            st = os.stat(path)
            files, size = files + 1, size + st.st_size
            h.update(os.path.relpath(path, real).encode() + b"\0")
            with open(path, "rb") as f:
                if st.st_size <= _WHOLE:
                    h.update(f.read())
                else:
                    h.update(f"{st.st_size} {st.st_mtime_ns}".encode() + f.read(1 << 16))
                    f.seek(-(1 << 16), os.SEEK_END)
                    h.update(f.read())
    return f"{real} ({files} files, {size} bytes, sha256 {h.hexdigest()[:16]})"


def run_text(call, items):
    """A resumable output's run (pd_output_open): the version, the call, and a line an item
    ("key: value"), paths that exist by their real path and contents."""
    from . import __version__
    return "".join(f"{k}: {_identity(v)}\n" for k, v in {"pocketdec": __version__, "call": call, **items}.items())


def _run_text(ex, input, format, jsonl_in):
    return run_text("Extractor.extract_file", {
        "input": input, "input format": "jsonl" if jsonl_in else "csv", "format": format,
        **{"model " + k: v for k, v in ex.model._described.items()}, **ex._described})


# ---------------------------------------------------------------- the readers

class _Row:
    __slots__ = ("ordinal", "line", "rid", "text", "problem", "keep_id")

    def __init__(self, ordinal, line, rid=None, text=None, problem=None, keep_id=False):
        self.ordinal, self.line, self.rid, self.text = ordinal, line, rid, text
        self.problem, self.keep_id = problem, keep_id


def _jsonl_rows(path, name):
    from .dask import _Broken, _parse  # the command's JSONL rule (no dask needed)
    with open(path, "rb") as f:
        for n, data in enumerate(f, 1):
            try:
                row = _parse(data.rstrip(b"\n"), n == 1)
            except _Broken as e:
                yield _Row(n, n, problem=f"{name}:{n}: broken row skipped: {e}")
                continue
            if row is not None:
                yield _Row(n, n, *row)


def _csv_rows(path, name):
    """Rows as the command reads a Tianchi CSV (cli/cmd_extract.c, csv_row): `id,Reviews`, the
    header skipped, a broken row reported and its id kept when it has one."""
    te = _lib.te()
    f = _libc.fopen(cpath(path, "input"), b"rb")
    if not f:
        raise _lib.Error("i/o error", f"{name}: cannot open: {os.strerror(ctypes.get_errno() or 2)}", _lib.PD_ERR_IO)
    err = _lib.new_error()
    csv = te.te_csv_open(cstr(name, "input"), f, byref(err))
    if not csv:
        _libc.fclose(f)
        _lib.raise_error(err, te_lib=True)
    try:
        te.te_csv_expect_fields(csv, 2)
        ordinal = 0
        while True:
            res = te.te_csv_next(csv, byref(err))
            if res == _TE_CSV_END:
                return
            if res == _TE_CSV_FAIL:
                _lib.raise_error(err, te_lib=True)
            ordinal += 1
            line, n = te.te_csv_line(csv), te.te_csv_n_fields(csv)
            fields = []
            for i in range(n):
                size = ctypes.c_size_t()
                p = te.te_csv_field(csv, i, byref(size))
                fields.append(ctypes.string_at(p, size.value).decode("utf-8"))
            rid = fields[0] if fields else None
            header = ordinal == 1 and rid == "id"
            if res == _TE_CSV_BROKEN:
                problem = err.message.decode("utf-8", "replace")
            elif n != 2:
                problem = f"{name}:{line}: broken row: expected 2 fields (id,Reviews), got {n}"
            elif not rid:
                problem = f"{name}:{line}: broken row: the id is empty"
            elif header:
                continue
            else:
                yield _Row(ordinal, line, rid, fields[1])
                continue
            yield _Row(ordinal, line, rid, None, problem, bool(rid) and not header)
    finally:
        te.te_csv_free(csv)
        _libc.fclose(f)


# ---------------------------------------------------------------- the job

def extract_file(ex, input, output, *, format="tianchi", input_format=None, resume=False, sync=False, parallel=1):
    """Extractor.extract_file: see there."""
    if format not in ("tianchi", "jsonl"):
        raise _lib.arg_error(f"format must be 'tianchi' or 'jsonl', got {format!r}")
    if input_format not in (None, "csv", "jsonl"):
        raise _lib.arg_error(f"input_format must be None, 'csv' or 'jsonl', got {input_format!r}")
    parallel = _lib.positive(parallel, "parallel", 1, 256)
    jsonl_in = input_format == "jsonl" or (input_format is None and os.fspath(input).endswith(".jsonl"))
    name = os.fsdecode(input)
    if not os.path.isfile(input):
        raise _lib.Error("i/o error", f"{name}: cannot open: no such file", _lib.PD_ERR_IO)
    fmt = 1 if format == "jsonl" else 0  # PD_FORMAT_JSONL, PD_FORMAT_TIANCHI
    stats = {"rows": 0, "reviews": 0, "records": 0, "broken": 0, "failed": 0, "problems": []}
    with ResumableOutput(output, _run_text(ex, input, format, jsonl_in), resume=resume, sync=sync) as out:
        stats.update(out.counts())
        done = stats["rows"]

        def lines(row):  # (bytes, records, problem) of a row, as the command writes it
            if row.problem:
                if not row.keep_id:
                    return b"", 0, row.problem
                text, _ = ex._line(row.rid, None, fmt)
                return text, 0, row.problem
            try:
                text, n = ex._line(row.rid, row.text, fmt)
                return text, n, None
            except _lib.Error as e:
                text, _ = ex._line(row.rid, None, fmt)
                return text, 0, f"{name}:{row.line}: id {row.rid}: {e.message}"

        rows = (r for r in (_jsonl_rows if jsonl_in else _csv_rows)(input, name) if r.ordinal > done)
        with ThreadPoolExecutor(parallel) as pool:
            batch = []
            for row in rows:
                batch.append(row)
                if len(batch) == 32 * parallel:
                    _write(out, batch, pool.map(lines, batch), stats)
                    batch = []
            _write(out, batch, pool.map(lines, batch), stats)
        out.finish()
    return {k: stats[k] for k in ("reviews", "records", "broken", "failed", "problems")}


def _write(out, batch, results, stats):
    for row, (text, records, problem) in zip(batch, results):
        if row.problem:
            stats["broken"] += 1
        else:
            stats["reviews"] += 1
            stats["records"] += records
            stats["failed"] += problem is not None
        if problem:
            stats["problems"].append(problem)
        stats["rows"] = row.ordinal
        out.commit_counts(text, {k: stats[k] for k in ("rows", "reviews", "records", "broken", "failed")})
