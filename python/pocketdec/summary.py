"""pocketdec.summarize: the summary of a corpus (`pocketdec summarize`, docs/summarize.md) as pandas
DataFrames. libpocketdec makes it (pd_summarize: the files read, the rule for counts, estimates and
intervals, the same call the command makes), so Python and the command give the same figures, and no
`pocketdec` command is needed.

    tables = pocketdec.summarize("records.jsonl", reviews="reviews.csv", model="models/tianchi")
    tables["polarity"]    # one row a polarity: records, reviews, share, estimate, low, high, ...
    tables["cells"]       # one row a (category, polarity)
    tables["groups"]      # with by=: the cells of every group, a "group" column first
    tables["json"]        # the summary's JSON itself, as the command writes it"""

import ctypes
import json
import os
import warnings
from ctypes import byref

from . import _lib
from ._lib import arg_error, check, cpath, new_error, pd

COLUMNS = ["category", "polarity", "records", "reviews", "share", "estimate", "low", "high", "support", "rates",
           "precision", "recall", "top_aspects", "top_opinions"]
_FORMATS = {None: 0, "csv": 1, "jsonl": 2}  # pd_reviews_format


def _frame(entries, group=None):
    import pandas
    rows = [{**({"group": group} if group is not None else {}), **{k: e.get(k) for k in COLUMNS}} for e in entries]
    return pandas.DataFrame(rows, columns=(["group"] if group is not None else []) + COLUMNS)


def _deprecated_command(command):
    if command is not None:
        warnings.warn("command= is ignored: the summary is made by libpocketdec, no pocketdec command is run",
                      DeprecationWarning, stacklevel=3)


def _text(*, records=None, pipeline=None, schema=None, reviews=None, by=None, calibration=None, bundle=None,
          min_support=None, id_column=None, text_column=None, encoding=None, input_format=None, merge=(),
          save_state=None):
    """pd_summarize's JSON text for these params (paths as str, bytes or os.PathLike); Error with the
    library's message when it fails. Notes (broken rows not counted, reviews with no records) become
    warnings."""
    p = pd.pd_summarize_default_params()
    keep = []  # what the C strings point into, alive for the call

    def path(value, what):
        if value is None:
            return None
        keep.append(cpath(value, what))
        return keep[-1]

    def text(value, what):
        return None if value is None else _lib.cstr(str(value), what)

    p.records, p.reviews, p.calibration = path(records, "records"), path(reviews, "reviews"), path(calibration, "calibration")
    p.bundle, p.save_state, p.by = path(bundle, "model"), path(save_state, "save_state"), text(by, "by")
    p.reviews_params.id_column, p.reviews_params.text_column = text(id_column, "id_column"), text(text_column, "text_column")
    p.reviews_params.encoding = text(encoding, "encoding")
    if input_format not in _FORMATS:
        raise arg_error(f"input_format must be 'csv', 'jsonl' or None, got {input_format!r}")
    p.reviews_params.format = _FORMATS[input_format]
    merge = [path(m, "merge") for m in merge]
    p.merge, p.n_merge = (ctypes.c_char_p * max(len(merge), 1))(*merge), len(merge)
    if min_support is not None:
        if isinstance(min_support, bool) or not isinstance(min_support, int):
            raise arg_error(f"min_support must be an int, got {type(min_support).__name__}")
        p.min_support = min_support
    p.pipeline, p.schema = pipeline, schema
    notes = []
    p.note = _lib.SUMMARIZE_NOTE(lambda ctx, kind, message: notes.append(message.decode("utf-8", "replace")))
    err = new_error()
    ptr = pd.pd_summarize(byref(p), byref(err))
    for n in notes:
        warnings.warn(n, RuntimeWarning, stacklevel=3)
    if not ptr:
        check(err.code or _lib.PD_ERR_NOMEM, err)
    return _lib.take_string(ptr)


def _extracted(model, schema, **kw):
    """_text over kw's reviews extracted here by an Extractor of model and schema (the bundle's head)."""
    if kw.get("records") is not None or kw.get("merge"):  # the library's checks, in its order
        raise arg_error("--records FILE (what pocketdec extract wrote), --model and --schema to extract here, or "
                        "--merge STATE ...: one of them")
    if model is None or kw.get("reviews") is None:
        raise arg_error("--schema extracts the reviews of --input with --model: give both")
    from .extract import Extractor
    with Extractor(model, schema) as ex:
        w = ex._worker()
        try:
            with w.use() as pipe, ex._schema.use() as s:
                return _text(pipeline=pipe, schema=s, bundle=model, **kw)
        finally:
            ex._give_back(w)


def summarize(records=None, *, reviews=None, model=None, schema=None, by=None, calibration=None, min_support=None,
              id_column=None, text_column=None, encoding=None, merge=(), command=None):
    """The summary's tables: {"polarity", "cells", "groups" (with by), "json"}. records: what `pocketdec
    extract` wrote; or model with schema (and reviews) to extract them first; or merge: partitions'
    states (--save-state files), merged in order. Other arguments are the command's options of the same
    name (model: its calibration.json, when calibration is not given). Raises Error with the command's
    message when it fails. command= is ignored (deprecated): no command is run."""
    _deprecated_command(command)
    kw = dict(records=records, reviews=reviews, by=by, calibration=calibration, min_support=min_support,
              id_column=id_column, text_column=text_column, encoding=encoding, merge=list(merge))
    s = json.loads(_extracted(model, schema, **kw) if schema is not None else _text(bundle=model, **kw))
    import pandas
    tables = {"json": s, "polarity": _frame(s["polarity"].values()), "cells": _frame(s["cells"])}
    if "groups" in s:
        frames = [_frame(list(g["polarity"].values()) + g["cells"], g["group"]) for g in s["groups"]]
        tables["groups"] = pandas.concat(frames, ignore_index=True) if frames else _frame([], "")
    return tables
