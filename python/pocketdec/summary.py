"""pocketdec.summarize: the summary of a corpus (`pocketdec summarize`, docs/summarize.md) as pandas
DataFrames. The rule for counts, estimates and intervals lives in the command's C module (summary/);
this runs the command and turns its JSON into tables, so Python and the command give the same figures.

    tables = pocketdec.summarize("records.jsonl", reviews="reviews.csv", model="models/tianchi")
    tables["polarity"]    # one row a polarity: records, reviews, share, estimate, low, high, ...
    tables["cells"]       # one row a (category, polarity)
    tables["groups"]      # with by=: the cells of every group, a "group" column first
    tables["json"]        # the command's JSON itself

The command is found as command=, else $POCKETDEC_COMMAND, else `pocketdec` on PATH."""

import json
import os
import shutil
import subprocess

from ._lib import Error, arg_error

COLUMNS = ["category", "polarity", "records", "reviews", "share", "estimate", "low", "high", "support", "rates",
           "precision", "recall", "top_aspects", "top_opinions"]


def _frame(entries, group=None):
    import pandas
    rows = [{**({"group": group} if group is not None else {}), **{k: e.get(k) for k in COLUMNS}} for e in entries]
    return pandas.DataFrame(rows, columns=(["group"] if group is not None else []) + COLUMNS)


def command_path(command=None):
    """The pocketdec command: command, else $POCKETDEC_COMMAND, else `pocketdec` on PATH."""
    exe = command or os.environ.get("POCKETDEC_COMMAND") or shutil.which("pocketdec")
    if not exe:
        raise arg_error("pocketdec.summarize runs the pocketdec command: put it on PATH, set POCKETDEC_COMMAND "
                        "or pass command=")
    return os.fspath(exe)


def run(args, command=None):
    """`pocketdec summarize ARGS`'s stdout; Error with its message when it fails."""
    p = subprocess.run([command_path(command), "summarize", *map(os.fspath, args)], capture_output=True, text=True)
    if p.returncode:
        lines = p.stderr.strip().splitlines()
        message = next((x[len("pocketdec: "):] for x in lines if x.startswith("pocketdec: ")), p.stderr.strip())
        raise Error("invalid argument" if p.returncode == 2 else "command failed", message, p.returncode)
    return p.stdout


def summarize(records=None, *, reviews=None, model=None, schema=None, by=None, calibration=None, min_support=None,
              id_column=None, text_column=None, encoding=None, merge=(), command=None):
    """The summary's tables: {"polarity", "cells", "groups" (with by), "json"}. records: what `pocketdec
    extract` wrote; or model with schema (and reviews) to extract them first; or merge: partitions'
    states (--save-state files), merged in order. Other arguments are the command's options of the same
    name. Raises Error with the command's message when it fails."""
    args = [a for m in merge for a in ("--merge", m)]
    for opt, value in (("--records", records), ("--input", reviews), ("--model", model), ("--schema", schema),
                       ("--by", by), ("--calibration", calibration), ("--min-support", min_support),
                       ("--id-column", id_column), ("--text-column", text_column), ("--encoding", encoding)):
        if value is not None:
            args += [opt, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    s = json.loads(run(args, command))
    import pandas
    tables = {"json": s, "polarity": _frame(s["polarity"].values()), "cells": _frame(s["cells"])}
    if "groups" in s:
        frames = [_frame(list(g["polarity"].values()) + g["cells"], g["group"]) for g in s["groups"]]
        tables["groups"] = pandas.concat(frames, ignore_index=True) if frames else _frame([], "")
    return tables
