"""Decision heads: label candidates scored in one forward pass."""

import ctypes
import threading

from . import _lib
from ._lib import Handle, Owner, arg_error, byref, check, cpath, cstr, pd
from .model import check_model, choice

_LAYOUT = {None: 0, "default": 0, "sequential": 1, "parallel": 2}
HEAD_TYPES = {0: "pointer", 1: "classifier", 2: "verbalizer", 3: "tagger"}


def head_dir(model, head):
    """The head directory to load: head, or the bundle's head/ when head is None; None for
    head=False (no head)."""
    if head is False:
        return None
    return model.bundle_head if head is None else head


def load_head(model, path):
    """The Handle of a head directory checked against model."""
    data = cpath(path, "head")
    with model._h.use() as m:
        return Handle.make("head", pd.pd_head_free, lambda err: pd.pd_head_load(data, m, err))


def head_type(handle):
    """"pointer", "classifier" or "tagger"."""
    with handle.use() as h:
        return HEAD_TYPES.get(pd.pd_head_get_type(h), "unknown")


class Decision(list):
    """[(label, probability), ...] in the order of the candidates (a classifier head's
    labels when none were given), with the raw .scores, the .best label,
    .forward_passes (1) and .prompt_tokens."""

    @property
    def best(self):
        """The most probable label (the first of equals)."""
        return max(self, key=lambda p: p[1])[0] if self else None


class Decider(Owner):
    """Scores label candidates for a text with a decision head in one forward pass:

        d = Decider(model, "models/tianchi-gen/head")
        d.decide("物流很快", "属性：物流；观点：很快", ["物流/正面", "物流/负面"])

    head: a pointer or classifier head directory; None takes the bundle's head/ when the
    model is a bundle folder; False (or no bundle head) scores with the LM's
    log-probabilities of each candidate (verbalizer). A Decider holds one context: use one
    per thread (calls from several threads on one Decider wait for each other)."""

    def __init__(self, model, head=None, *, layout=None, threads=None, ctx=0, max_bytes=0):
        """layout: None (the head's), "sequential" or "parallel" (candidates see the text
        but not each other: scores do not depend on their order). threads: of the forward
        pass (default: the model's). ctx: the context length (0: min(model's, 4096)).
        max_bytes: the context's memory budget (0: none)."""
        self.model = check_model(model)
        self._params = pd.pd_decider_default_params()
        self._params.n_threads = _lib.positive(model.threads if threads is None else threads, "threads")
        self._params.n_ctx = _lib.positive(ctx, "ctx", 0)
        self._params.max_bytes = _lib.positive(max_bytes, "max_bytes", 0, 2**63 - 1)
        self._layout = choice(_LAYOUT, layout, "layout")
        path = head_dir(model, head)
        self._head = load_head(model, path) if path is not None else None
        self._own(*[self._head] if self._head else [])
        self.head_type = head_type(self._head) if self._head else "verbalizer"
        if self.head_type == "tagger":
            self.close()
            raise arg_error(f"{path}: a tagger head extracts records (use Extractor); a Decider needs a pointer "
                            "or classifier head, or head=False for the LM's log-probabilities")
        self._lock = threading.Lock()
        self._deciders, self._docs, self._text = {}, {}, None
        try:
            self._decider(self._layout)
        except BaseException:
            self.close()
            raise

    @property
    def labels(self):
        """A classifier head's labels (None for other heads)."""
        if self.head_type != "classifier":
            return None
        with self._head.use() as h:
            n = ctypes.c_int32()
            names = pd.pd_head_labels(h, byref(n))
            return [names[i].decode() for i in range(n.value)]

    def _decider(self, layout):
        """The Handle of the pd_decider of a layout, made on first use (under self._lock,
        or in __init__)."""
        self._check_open()
        if layout not in self._deciders:
            params = _lib.DeciderParams(layout, self._params.n_threads, self._params.n_ctx, self._params.max_bytes)
            head = self._head

            def make(model, *rest):  # rest: (head, err) or (err,)
                return pd.pd_decider_new(model, rest[0] if head else None, byref(params), rest[-1])

            handle = Handle.make("Decider", pd.pd_decider_free, make, [self.model._h] + ([head] if head else []))
            self._handles.append(handle)
            if not self._finalizer.alive:  # closed meanwhile
                handle.close()
                self._check_open()
            self._deciders[layout] = handle
        return self._deciders[layout]

    def _set_text(self, layout, text):
        handle, err = self._decider(layout), _lib.new_error()
        with handle.use() as d:
            check(pd.pd_decider_set_text(d, None if text is None else cstr(text, "text"), byref(err)), err)
        self._docs[layout] = text

    def set_text(self, text):
        """Evaluate text once; later decide(None, ...) calls ask about it and evaluate only
        the question and candidates. None forgets the text."""
        with self._lock:
            self._text = text
            for layout in list(self._deciders):
                self._set_text(layout, text)

    def decide(self, text, question="", candidates=None, *, layout=None):
        """Score candidates (a list of str; None: all the labels of a classifier head) for
        text and question in one forward pass. text None asks about the text of set_text()
        or of the last decide(). Returns a Decision: [(label, probability)] in candidate
        order. layout overrides the Decider's for this call."""
        q = cstr(question, "question")
        if isinstance(candidates, str):
            raise arg_error("candidates must be a list of str, got a str")
        labels = [] if candidates is None else list(candidates)
        arr = (ctypes.c_char_p * max(len(labels), 1))(*[cstr(c, f"candidates[{i}]") for i, c in enumerate(labels)])
        data = None if text is None else cstr(text, "text")
        code = self._layout if layout is None else choice(_LAYOUT, layout, "layout")
        out, err = ctypes.POINTER(_lib.Decision)(), _lib.new_error()
        with self._lock:
            if text is None and self._text is not None and self._docs.get(code) != self._text:
                self._set_text(code, self._text)
            with self.model._h.use(), self._decider(code).use() as d:
                status = pd.pd_decide(d, data, q, arr, len(labels), byref(out), byref(err))
            if text is not None:
                self._docs.pop(code, None)
                if not status:
                    self._text = self._docs[code] = text
        check(status, err)
        try:
            dec = out.contents
            n = dec.n_candidates
            names = labels if labels else self.labels or []
            result = Decision((names[i], float(dec.probs[i])) for i in range(n))
            result.scores = [float(dec.scores[i]) for i in range(n)]
            result.forward_passes, result.prompt_tokens = dec.forward_passes, dec.prompt_tokens
            return result
        finally:
            pd.pd_decision_free(out)

    def __repr__(self):
        return f"<pocketdec.Decider {self.head_type}{' (closed)' if self.closed else ''}>"
