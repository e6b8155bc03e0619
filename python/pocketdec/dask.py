"""Extraction over a Dask bag: a corpus of JSONL reviews ({"id", "text"} a line) shared among
the worker processes of a Dask cluster (python3-distributed), the output byte for byte what
one `pocketdec extract --format jsonl` run writes.

    from distributed import Client, LocalCluster
    from pocketdec.dask import extract_jsonl

    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster):
        extract_jsonl(["reviews.jsonl"], "models/tianchi", "schemas/tianchi-makeup.yaml", "records.jsonl")

Each worker process loads the model and the schema once (a cache of this module, keyed by the
arguments) and keeps them for every partition it is given. The model, the schema and the
input files are named by paths that the workers and the client must both see.

dask is imported by the functions that need it: the rest of the module (extract_rows) and
`import pocketdec` work without it. The lines are written by the library (Extractor.jsonl), as
the command writes them. docs/python.md, "pocketdec.dask"."""

import collections
import functools
import json
import os
import threading

from ._lib import Error
from .extract import Extractor
from .files import BrokenRow, jsonl_row
from .model import Model

__all__ = ["Line", "Output", "read_jsonl", "extract_bag", "extract_jsonl", "extract_rows", "summarize_jsonl"]

# Bytes of input a partition by default: some thousands of reviews, tens of seconds of work;
# a smaller input is cut into about MIN_PARTITIONS partitions.
BLOCKSIZE = 1 << 20
MIN_PARTITIONS = 32

Line = collections.namedtuple("Line", "source line data")
Line.__doc__ = """One line of a JSONL file: the file's name, the line's number (1-based) and its
bytes without the line break."""

Output = collections.namedtuple("Output", "line problem records")
Output.__doc__ = """What one input row gave:
- line: the JSONL line `pocketdec extract --format jsonl` writes for it (a str ending in a line
  break), or None for a broken row that is skipped (bad JSON, no id, no text);
- problem: None, or what went wrong, as the command reports it on stderr ("FILE:LINE: ...");
  a row with both a line and a problem is a review that failed (written with no records);
- records: the number of records in line."""


# ---------------------------------------------------------------- reading

def _dict_line(item):
    """A dict's id and text (its other keys are not read) as a JSONL line, for the library to read
    as it reads a file's line; a numpy scalar as its Python value."""
    row = {}
    for key in ("id", "text"):
        if key in item:
            v = item[key]
            row[key] = v.item() if hasattr(v, "item") and not isinstance(v, (str, bool)) else v
    try:
        return json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass")  # a lone surrogate: invalid UTF-8
    except (TypeError, ValueError) as e:
        raise BrokenRow(f"not JSON: {e}") from None


def _row(item, here):
    """(id, text) of a bag item, None for a blank line; BrokenRow for a broken row. An item is a
    Line (read as that line of its file), a JSONL line (str or bytes) or a dict {"id", "text"}
    (each read as a file of one line named here). The library reads every one (files.jsonl_row),
    by the rule `pocketdec extract` reads its JSONL with."""
    if isinstance(item, Line):
        return jsonl_row(item.data, item.source, item.line)
    if isinstance(item, str):
        item = item.encode("utf-8", "surrogatepass")
    if isinstance(item, (bytes, bytearray)):
        return jsonl_row(bytes(item).rstrip(b"\n"), here, 1)
    if isinstance(item, dict):
        return jsonl_row(_dict_line(item), here, 1)
    raise BrokenRow(f"expected a JSONL line or a dict, got {type(item).__name__}")


def extract_rows(ex, items, where="item"):
    """Output for each row of items (Line, JSONL lines as str or bytes, or dicts {"id",
    "text"}), in order, extracted with the pocketdec.Extractor ex. Blank lines give nothing;
    a broken row gives Output(None, problem, 0), a review that fails Output(line with no
    records, problem, 0), as `pocketdec extract` does. Problems name a Line by its file and
    line, other items as "item N" (1-based in items)."""
    for i, item in enumerate(items):
        here = f"{item.source}:{item.line}" if isinstance(item, Line) else f"{where} {i + 1}"
        try:
            row = _row(item, here)
        except BrokenRow as e:
            yield Output(None, f"{here}: broken row skipped: {e}", 0)
            continue
        if row is None:
            continue
        rid, text = row
        try:
            line, records = ex.jsonl(rid, text)
        except Error as e:
            yield Output(ex.jsonl(rid)[0], f"{here}: id {rid}: {e.message}", 0)
            continue
        yield Output(line, None, len(records))


# ---------------------------------------------------------------- one extractor a process

_loaded = {}
_loading = threading.Lock()
loads = 0  # how many extractors this process has loaded (each worker: 1 for one model and schema)


def extractor(model, schema, *, threads=1, adapters=(), quantize=None, **options):
    """The pocketdec.Extractor of these arguments in this process, loaded on first use and
    kept: a worker loads a model once, whatever the number of partitions it is given.
    An Extractor serves any number of threads at once."""
    global loads
    key = (os.fspath(model), os.fspath(schema), threads, repr(adapters), quantize, repr(sorted(options.items())))
    with _loading:
        ex = _loaded.get(key)
        if ex is None:
            m = Model(model, adapters=adapters, quantize=quantize, threads=threads)
            try:
                ex = Extractor(m, schema, **options)
            except BaseException:
                m.close()
                raise
            _loaded[key] = ex
            loads += 1
        return ex


def _extract_partition(items, model, schema, kwargs):
    return list(extract_rows(extractor(model, schema, **kwargs), items))


# ---------------------------------------------------------------- bags

def _blocks(paths, blocksize, npartitions):
    """[(path, start, end, first line)]: each file cut into blocks of about blocksize bytes
    at line breaks (one pass over the files, counting lines for the messages)."""
    paths = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, bytes, os.PathLike)) else paths)]
    if npartitions is not None:
        if blocksize is not None:
            raise ValueError("give blocksize or npartitions, not both")
        if npartitions < 1:
            raise ValueError(f"npartitions must be at least 1, got {npartitions}")
        total = sum(os.path.getsize(p) for p in paths)
        blocksize = max(1, -(-total // npartitions))
    if blocksize is None:  # 1 MiB, less for a small input: some partitions for every worker
        blocksize = max(1, min(BLOCKSIZE, -(-sum(os.path.getsize(p) for p in paths) // MIN_PARTITIONS)))
    if blocksize < 1:
        raise ValueError(f"blocksize must be at least 1, got {blocksize}")
    blocks = []
    for path in paths:
        with open(path, "rb") as f:
            start, line = 0, 1
            while True:
                chunk = f.read(blocksize)
                if not chunk:
                    break
                if not chunk.endswith(b"\n"):
                    chunk += f.readline()
                blocks.append((path, start, start + len(chunk), line))
                start += len(chunk)
                line += chunk.count(b"\n")
    return blocks


def _read_block(path, start, end, first):
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return [Line(path, first + i, d) for i, d in enumerate(lines)]


def read_jsonl(paths, *, blocksize=None, npartitions=None):
    """A dask bag of Line: the lines of JSONL files (a path or a list of paths), in order,
    in partitions of about blocksize bytes (default: 1 MiB, or 1/32 of a smaller input) or
    about npartitions partitions in all, cut at line breaks. Only line breaks split lines (a CR before one is dropped
    when the line is read, a byte order mark on a file's first line too), as the command
    reads them. The client reads the files once to cut them; the workers read their blocks."""
    return _bag(_blocks(paths, blocksize, npartitions))


def _bag(blocks):
    import dask
    import dask.bag

    if not blocks:
        return dask.bag.from_sequence([], npartitions=1)
    return dask.bag.from_delayed([dask.delayed(_read_block, pure=True)(*b) for b in blocks])


def extract_bag(bag, model, schema, *, threads=1, adapters=(), quantize=None, **options):
    """A dask bag of Output, one for each row of bag (Line as read_jsonl gives, JSONL lines
    as str or bytes, or dicts {"id", "text"}) in the same order, blank lines left out. Each
    worker process extracts with one pocketdec.Extractor (model, schema, options: those of
    pocketdec.Extractor, e.g. head=, min_confidence=, max_chars=), loaded once; threads,
    adapters and quantize are the pocketdec.Model's (threads=1: one core a task; run as
    many worker processes as cores)."""
    kwargs = dict(options, threads=threads, adapters=adapters, quantize=quantize)
    return bag.map_partitions(functools.partial(_extract_partition, model=os.fspath(model),
                                                schema=os.fspath(schema), kwargs=kwargs))


def _in_order(parts, client):
    """The results of the delayed parts, in order, a bounded number computing at a time."""
    if client is None:
        try:
            from distributed import default_client
            client = default_client()
        except (ImportError, ValueError):
            client = None
    if client is None or client is False:  # dask's own scheduler (threads here): windows of parts
        import dask
        window = 2 * (os.cpu_count() or 1)
        for i in range(0, len(parts), window):
            yield from dask.compute(*parts[i:i + window])
        return
    window = max(2, 2 * sum(client.nthreads().values()))
    pending = collections.deque(client.compute(p) for p in parts[:window])
    rest = iter(parts[window:])
    try:
        while pending:
            result = pending[0].result()
            pending.popleft().release()
            nxt = next(rest, None)
            if nxt is not None:
                pending.append(client.compute(nxt))
            yield result
    finally:
        for f in pending:
            f.cancel()


def extract_jsonl(inputs, model, schema, output, *, blocksize=None, npartitions=None, threads=1,
                  adapters=(), quantize=None, client=None, resume=False, sync=False, **options):
    """Extracts the reviews of inputs (JSONL files: a path or a list of paths, or a dask bag
    that extract_bag takes) and writes output (a path): what one `pocketdec extract
    --format jsonl` run over the inputs one after another writes, byte for byte. The
    partitions run on client's cluster (None: the current distributed Client, else dask's
    local scheduler; False: the local scheduler, threads of this process sharing one
    Extractor) and are written in input order as they come. A partition whose worker dies
    is run again by the cluster (distributed's allowed-failures), the same lines.

    The output is a resumable one (pocketdec.files.ResumableOutput, docs/reliability.md):
    each partition's lines written whole, output.progress beside it. resume=True (input
    files only) continues a call that died where it stopped, the partitions written
    skipped, the file byte for byte one uninterrupted call's; another input, model, schema,
    cut or option is refused naming what differs. sync=True fsyncs after every partition.

    Returns {"reviews", "records", "broken", "failed", "problems"}: the command's counts
    and its stderr reports ("FILE:LINE: ..."), in input order (a resumed call's counts
    include what was written before; its problems are its own)."""
    import dask.bag

    from .files import ResumableOutput, run_text

    if isinstance(inputs, dask.bag.Bag):
        if blocksize is not None or npartitions is not None:
            raise ValueError("blocksize and npartitions apply to files, not to a bag")
        if resume:
            raise ValueError("resume needs input files (a bag cannot be identified again)")
        bag, blocks = inputs, None
    else:
        blocks = _blocks(inputs, blocksize, npartitions)
        bag = _bag(blocks)
    out = extract_bag(bag, model, schema, threads=threads, adapters=adapters, quantize=quantize, **options)
    run = run_text("pocketdec.dask.extract_jsonl", {
        "inputs": repr(blocks), **{f"input {k + 1}": p for k, p in enumerate(sorted({b[0] for b in blocks or ()}))},
        "model": model, "schema": schema, "adapters": repr(adapters), "quantize": repr(quantize),
        **{k: repr(v) for k, v in sorted(options.items())}})
    stats = {"parts": 0, "reviews": 0, "records": 0, "broken": 0, "failed": 0}
    problems = []
    with ResumableOutput(output, run, resume=resume, sync=sync) as f:
        stats.update(f.counts())
        for part in _in_order(out.to_delayed()[stats["parts"]:], client):
            for o in part:
                if o.line is not None:
                    stats["reviews"] += 1
                    stats["records"] += o.records
                    stats["failed"] += o.problem is not None
                else:
                    stats["broken"] += 1
                if o.problem is not None:
                    problems.append(o.problem)
            stats["parts"] += 1
            f.commit_counts("".join(o.line for o in part if o.line is not None).encode("utf-8"), stats)
        f.finish()
    return {**{k: stats[k] for k in ("reviews", "records", "broken", "failed")}, "problems": problems}


# ------------------------------------------------------------ summaries of partitions


def _summarize_block(path, start, end, first):
    """A block of a records file summarized by libpocketdec in a worker: its whole state (JSON text)."""
    import tempfile
    from . import summary
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    with tempfile.TemporaryDirectory() as d:
        part, state = os.path.join(d, "part.jsonl"), os.path.join(d, "part.state")
        with open(part, "wb") as f:
            f.write(data)
        try:
            summary._text(records=part, save_state=state)
        except Error as e:  # name the file and its line, not the block's copy
            raise Error(e.status, e.message.replace(part + ":", f"{path}: the block from line {first}, its line "),
                        e.code) from None
        with open(state, encoding="utf-8") as f:
            return f.read()


def summarize_jsonl(records, *, blocksize=None, npartitions=None, model=None, calibration=None, min_support=None,
                    command=None):
    """pocketdec.summarize over a Dask cluster: the records files (what `pocketdec extract --format jsonl`
    wrote; a path or a list) cut into blocks at line breaks as read_jsonl cuts them, each summarized by a
    worker (libpocketdec's pd_summarize with a saved state), the states merged in order by the client:
    the same tables as one summarize over the files. model, calibration, min_support: the rates, applied
    once to the merged counts. command= is ignored (deprecated): no command is run."""
    import tempfile
    import dask
    from . import summary
    summary._deprecated_command(command)
    blocks = _blocks(records, blocksize, npartitions)
    states = dask.compute(*[dask.delayed(_summarize_block, pure=True)(*b) for b in blocks])
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, text in enumerate(states):
            paths.append(os.path.join(d, f"{i}.state"))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write(text)
        return summary.summarize(merge=paths, model=model, calibration=calibration, min_support=min_support)
