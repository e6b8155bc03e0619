"""A file of reviews extracted into an output that survives a crash and that a later call
continues (Extractor.extract_file; docs/reliability.md): the library's resumable output
(pd_output_*) and its reader of review files (pd_reviews_*, the one `pocketdec extract` reads
with: CSV or JSONL, the id and text columns, other encodings). The output is what
`pocketdec extract` writes for the same input and options, byte for byte."""

import ctypes
import hashlib
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

from . import _lib
from ._lib import byref, check, cpath, cstr, pd

__all__ = ["ResumableOutput", "extract_file"]

_WHOLE = 8 << 20  # files hashed whole up to this size; larger ones by size, mtime and edges
_PD_REVIEWS_AUTO, _PD_REVIEWS_CSV, _PD_REVIEWS_JSONL = 0, 1, 2


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


def _run_text(ex, input, format, jsonl_in, columns):
    return run_text("Extractor.extract_file", {
        "input": input, "input format": "jsonl" if jsonl_in else "csv", "format": format,
        **{k.replace("_", " "): v for k, v in columns.items() if v is not None},
        **{"model " + k: v for k, v in ex.model._described.items()}, **ex._described})


# ---------------------------------------------------------------- the reader

class _Row:
    __slots__ = ("ordinal", "line", "rid", "text", "problem", "keep_id", "extra")

    def __init__(self, w):
        self.ordinal, self.line, self.keep_id = w.ordinal, w.line, bool(w.keep_id)
        self.rid = w.id.decode("utf-8") if w.id is not None else None
        self.text = ctypes.string_at(w.text, w.text_len).decode("utf-8") if w.text else None
        self.problem = w.problem.decode("utf-8", "replace") if w.problem is not None else None
        self.extra = w.extra  # bytes: the other columns as JSON members, or None


class _Reviews:
    """The library's reader of review files (pd_reviews_*), open on path: its rows, the
    CSV header left out."""

    def __init__(self, path, input_format, columns, keep_extra):
        params = pd.pd_reviews_default_params()
        params.format = {None: _PD_REVIEWS_AUTO, "csv": _PD_REVIEWS_CSV, "jsonl": _PD_REVIEWS_JSONL}[input_format]
        for k, v in columns.items():
            setattr(params, k, None if v is None else cstr(v, k))
        params.keep_extra = 1 if keep_extra else 0
        err = _lib.new_error()
        ptr = pd.pd_reviews_open(cpath(path, "input"), byref(params), byref(err))
        if not ptr:
            _lib.raise_error(err)
        self._ptr = ptr
        self._finalizer = weakref.finalize(self, pd.pd_reviews_free, ptr)
        self.jsonl = pd.pd_reviews_get_format(ptr) == _PD_REVIEWS_JSONL

    def rows(self):
        w, err = _lib.Review(), _lib.new_error()
        while True:
            got = pd.pd_reviews_next(self._ptr, byref(w), byref(err))
            if got < 0:
                _lib.raise_error(err)
            if got == 0:
                return
            if not w.header:
                yield _Row(w)

    def close(self):
        self._finalizer()


class BrokenRow(Exception):
    """A broken row (jsonl_row): the command's reason, without its "NAME:LINE: broken row skipped: "."""


def jsonl_row(data, name, line):
    """The review on one line of a JSONL file as `pocketdec extract` reads that line of that file:
    the library's reader over the line alone, as a piece of the file from line `line`
    (pd_reviews_params.first_line: no encoding sniffed, a byte order mark dropped on line 1
    alone). data: the line's bytes without its line break. (id, text); None for a blank line;
    BrokenRow for a broken row."""
    data = bytes(data)
    if b"\n" in data:
        raise BrokenRow("a line break inside one JSONL line")
    params = pd.pd_reviews_default_params()
    params.format, params.first_line = _PD_REVIEWS_JSONL, line
    err = _lib.new_error()
    ptr = pd.pd_reviews_open_memory(data, len(data), cstr(name, "name"), byref(params), byref(err))
    if not ptr:
        _lib.raise_error(err)
    try:
        w = _lib.Review()
        got = pd.pd_reviews_next(ptr, byref(w), byref(err))
        if got < 0:
            _lib.raise_error(err)
        if got == 0:
            return None
        row = _Row(w)
    finally:
        pd.pd_reviews_free(ptr)
    if row.problem is not None:
        prefix = f"{name}:{row.line}: broken row skipped: "
        raise BrokenRow(row.problem[len(prefix):] if row.problem.startswith(prefix) else row.problem)
    return row.rid, row.text


def _join_extra(text, extra):
    """A JSONL line with a row's other columns before its closing brace (pd_reviews_join_extra)."""
    if not extra or not text:
        return text
    n = ctypes.c_size_t()
    p = pd.pd_reviews_join_extra(text, len(text), extra, byref(n))
    if not p:
        raise _lib.Error("out of memory", "out of memory", _lib.PD_ERR_NOMEM)
    try:
        return ctypes.string_at(p, n.value)
    finally:
        pd.pd_free(p)


# ---------------------------------------------------------------- the job

def extract_file(ex, input, output, *, format="tianchi", input_format=None, id_column=None, text_column=None,
                 encoding=None, resume=False, sync=False, parallel=1):
    """Extractor.extract_file: see there."""
    if format not in ("tianchi", "jsonl"):
        raise _lib.arg_error(f"format must be 'tianchi' or 'jsonl', got {format!r}")
    if input_format not in (None, "csv", "jsonl"):
        raise _lib.arg_error(f"input_format must be None, 'csv' or 'jsonl', got {input_format!r}")
    parallel = _lib.positive(parallel, "parallel", 1, 256)
    name = os.fsdecode(input)
    if not os.path.isfile(input):
        raise _lib.Error("i/o error", f"{name}: cannot open: no such file", _lib.PD_ERR_IO)
    columns = {"id_column": id_column, "text_column": text_column, "encoding": encoding}
    # a CSV's other columns are carried into JSONL lines, as the command carries them
    reader = _Reviews(input, input_format, columns, format == "jsonl")
    try:
        return _extract(ex, reader, name, output, format, _run_text(ex, input, format, reader.jsonl, columns), resume,
                        sync, parallel)
    finally:
        reader.close()


def _extract(ex, reader, name, output, format, run, resume, sync, parallel):
    fmt = 1 if format == "jsonl" else 0  # PD_FORMAT_JSONL, PD_FORMAT_TIANCHI
    stats = {"rows": 0, "reviews": 0, "records": 0, "broken": 0, "failed": 0, "problems": []}
    with ResumableOutput(output, run, resume=resume, sync=sync) as out:
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
                return _join_extra(text, row.extra), n, None
            except _lib.Error as e:
                text, _ = ex._line(row.rid, None, fmt)
                return _join_extra(text, row.extra), 0, f"{name}:{row.line}: id {row.rid}: {e.message}"

        rows = (r for r in reader.rows() if r.ordinal > done)
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
