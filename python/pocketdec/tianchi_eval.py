"""The Tianchi F1 evaluator (libtianchieval): the figures `tianchi-eval --json` prints.

    from pocketdec import tianchi_eval
    s = tianchi_eval.score("data/tianchi/dev_labels.csv", "Result.csv", reviews="data/tianchi/dev_reviews.csv")
    s["overall"]["f1"]; s.html("report.html")
"""

import collections.abc
import json
import os

from . import _lib
from ._lib import Handle, Owner, byref, cpath, cstr

GOLD, PREDICTIONS, REVIEWS = 0, 1, 2
_KIND = {GOLD: "gold", PREDICTIONS: "pred", REVIEWS: "reviews"}
TE_ERR_ARG = 4


def _te_check(status, err):
    if status:
        _lib.raise_error(err, te_lib=True)


def _te_arg(message):
    return _lib.Error("invalid argument", message, TE_ERR_ARG)


def _is_path(value):
    return isinstance(value, (str, bytes, os.PathLike))


def _id(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or not -2**63 <= value < 2**63:
        raise _te_arg(f"{what}: the id must be an int, got {value!r}")
    return value


def _add_quads(te, ev, kind, rows):
    for n, row in enumerate(rows, 1):
        what = f"{_KIND[kind]} row {n}"
        try:
            rid, *fields = row
        except (TypeError, ValueError):
            raise _te_arg(f"{what}: expected (id, aspect, opinion, category, polarity), got {row!r}") from None
        if len(fields) != 4:
            raise _te_arg(f"{what}: expected (id, aspect, opinion, category, polarity), got {row!r}")
        values = [None if v is None else cstr(v, f"{what} field {i + 2}") for i, v in enumerate(fields)]
        quad, err = _lib.Quad(_id(rid, what), *values), _lib.new_error()
        _te_check(te.te_eval_add_quad(ev, kind, byref(quad), byref(err)), err)


def _load(te, ev, kind, source):
    err = _lib.new_error()
    if _is_path(source):
        _te_check(te.te_eval_load_file(ev, kind, cpath(source, _KIND[kind]), byref(err)), err)
    elif kind == REVIEWS:
        items = source.items() if isinstance(source, collections.abc.Mapping) else source
        for rid, text in items:
            _te_check(te.te_eval_add_review(ev, _id(rid, "reviews"), cstr(text, f"review {rid}"), byref(err)), err)
    else:
        _add_quads(te, ev, kind, source)


class Scores(dict, Owner):
    """The figures as a dict, the keys of `tianchi-eval --json` ("inputs", "overall",
    "pairs", "categories", "polarities", "spans" (None without reviews), "checks", and
    "errors" when asked; see docs/tianchi-eval.md), and html(path), the HTML report."""

    def html(self, path):
        """Write the HTML report, the page `tianchi-eval GOLD PRED --html` writes: scores,
        F1 per category and per polarity as SVG charts, the confidence sweep (precision and
        recall by threshold, the reliability diagram) when pred is pocketdec's JSONL output
        with confidences (else a line saying why there is none), checks, errors."""
        te, err = _lib.te(), _lib.new_error()
        with self._result.use() as res:
            _te_check(te.te_result_save_html(res, cpath(path, "path"), byref(err)), err)


def score(gold, pred, reviews=None, *, errors=False):
    """Score predictions against gold with the Tianchi metric (docs/tianchi-eval.md).

    gold: a train_labels.csv-form file, or an iterable of (id, aspect, opinion, category,
    polarity). pred: a Result.csv-form file, or such tuples (in submission order). reviews
    (optional): an `id,Reviews` CSV, a dict {id: text} or (id, text) pairs; it enables the
    span checks and the missing/unknown id checks. errors=True adds the list of misses and
    false positives. Returns Scores (a dict); bad files raise Error with FILE:LINE."""
    te = _lib.te()
    ev = Handle.make("Scores", te.te_eval_free, te.te_eval_new, te_lib=True)
    try:
        for kind, source in ((GOLD, gold), (PREDICTIONS, pred), (REVIEWS, reviews)):
            if source is not None:
                with ev.use() as p:
                    _load(te, p, kind, source)
        res = Handle.make("Scores", te.te_result_free, te.te_eval_score, [ev], te_lib=True)
    except BaseException:
        ev.close()
        raise
    try:
        with res.use() as p:
            err = _lib.new_error()
            text = te.te_result_json(p, 1 if errors else 0, byref(err))
            if not text:
                _lib.raise_error(err, te_lib=True)
            figures = json.loads(_lib.take_string(text, te.te_free))
    except BaseException:
        res.close()
        ev.close()
        raise
    out = Scores(figures)
    out._result = res
    out._own(ev, res)
    return out

