"""Schema-bound extraction: records from texts, by a tagger head's one forward pass or by
generation under the schema's constraints (with a decision head relabelling the records)."""

import collections
import concurrent.futures
import contextlib
import ctypes
import itertools
import threading

from . import _lib
from ._lib import Handle, Owner, arg_error, byref, check, cpath, cstr, pd
from .decide import head_dir, head_type, load_head
from .model import check_model


class _Worker:
    """What one extraction at a time needs: a context, and a decider when a head relabels."""

    def __init__(self, ctx, decider):
        self.ctx, self.decider = ctx, decider


class Extractor(Owner):
    """Extracts the records a YAML schema describes (Tianchi: aspect, opinion, category,
    polarity) from texts:

        ex = Extractor(Model("models/tianchi"), "schemas/tianchi-makeup.yaml")
        ex.extract("物流很快，包装也很好")   # [{"aspect": "物流", "opinion": "很快", ...}, ...]

    head: None takes the bundle's head/ when the model is a bundle folder; False, or no
    bundle head, generates the records under the schema's constraints. A tagger head
    extracts them in one forward pass (no generation); a pointer or classifier head
    relabels generated records (the schema's `decide` section). An Extractor may be used by
    any number of threads at once: each call takes a context of its own from a pool."""

    def __init__(self, model, schema, head=None, *, threads=None, ctx=0, max_records=0, max_tokens=0,
                 temperature=0.0, seed=0, speculate=None):
        """schema: a YAML schema file. threads: of each forward pass (default: the
        model's). ctx: the context length (0: min(model's, 4096)). max_records,
        max_tokens (0: the schema's limits), temperature (0: greedy), seed and speculate
        (draft tokens of copy speculation a pass verifies, 0-16; None: the library's
        default; the same records either way) apply to generation only."""
        self.model = check_model(model)
        self._threads = _lib.positive(model.threads if threads is None else threads, "threads")
        self._ctx = _lib.positive(ctx, "ctx", 0)
        self.params = pd.pd_extract_default_params()
        self.params.max_records = _lib.positive(max_records, "max_records", 0)
        self.params.max_tokens = _lib.positive(max_tokens, "max_tokens", 0)
        self.params.sampler.seed = _lib.positive(seed, "seed", 0, 2**64 - 1)
        if speculate is not None:
            self.params.speculate = _lib.positive(speculate, "speculate", 0, 16)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
            raise arg_error(f"temperature must be a number >= 0, got {temperature!r}")
        self.params.sampler.temperature = temperature
        path = cpath(schema, "schema")
        self._schema = Handle.make("Extractor", pd.pd_schema_free, lambda err: pd.pd_schema_load(path, err))
        self._own(self._schema)
        self._lock = threading.Lock()
        self._free = []
        try:
            self._bind(model, head_dir(model, head), schema,
                       max_records or max_tokens or temperature or seed or speculate is not None)
        except BaseException:
            self.close()
            raise

    def _bind(self, model, head, schema, generation_options):
        with self._schema.use() as s:
            self.fields = [pd.pd_schema_field_name(s, i).decode() for i in range(pd.pd_schema_n_fields(s))]
            decide_section = pd.pd_schema_n_candidates(s) > 0
        self._head = load_head(model, head) if head is not None else None
        if self._head:
            self._handles.append(self._head)
        kind = head_type(self._head) if self._head else None
        if kind == "tagger":
            if generation_options:
                raise arg_error(f"max_records, max_tokens, temperature, seed and speculate do not apply to the tagger head "
                                f"{head} (no generation)")
            self.mode = "tagger"
            self._ex = Handle.make("Extractor", pd.pd_tag_extractor_free, pd.pd_tag_extractor_new,
                                   [model._h, self._schema, self._head])
        else:
            if self._head and not decide_section:
                raise arg_error(f"{schema}: a {kind} head needs a 'decide' section in the schema (or a tagger head)")
            self.mode = "decide" if self._head else "generate"
            self._ex = Handle.make("Extractor", pd.pd_extractor_free, pd.pd_extractor_new, [model._h, self._schema])
        self._handles.append(self._ex)
        if self.mode != "tagger":  # the limits of max_records and max_tokens, once (an empty text runs no model)
            self.extract("")

    def _worker(self):
        with self._lock:
            self._check_open()
            if self._free:
                return self._free.pop()
        cp = pd.pd_context_default_params()
        cp.n_threads, cp.n_ctx = self._threads, self._ctx
        ctx = Handle.make("Extractor", pd.pd_context_free, lambda m, err: pd.pd_context_new(m, byref(cp), err),
                          [self.model._h])
        decider = None
        if self.mode == "decide":
            dp = _lib.DeciderParams(0, self._threads, self._ctx, 0)
            try:
                decider = Handle.make("Extractor", pd.pd_decider_free,
                                      lambda m, h, err: pd.pd_decider_new(m, h, byref(dp), err),
                                      [self.model._h, self._head])
            except BaseException:
                ctx.close()
                raise
        made = [h for h in (ctx, decider) if h]
        with self._lock:
            if self._finalizer.alive:
                self._handles += made
                return _Worker(ctx, decider)
        for h in made:  # closed meanwhile
            h.close()
        self._check_open()

    def _give_back(self, w):
        with self._lock:
            if self._finalizer.alive:
                self._free.append(w)

    def extract(self, text):
        """The records of text (a str) as a list of dicts {field: value}, in the schema's
        field order; "_" for an empty field. Runs one forward pass (tagger head) or a
        constrained generation; the GIL is released while the model runs."""
        data = cstr(text, "text")
        w = self._worker()
        try:
            with contextlib.ExitStack() as stack:  # a closed model or extractor raises Error here
                _, ctx, ex, schema = (stack.enter_context(h.use()) for h in (self.model._h, w.ctx, self._ex,
                                                                             self._schema))
                decider = stack.enter_context(w.decider.use()) if w.decider else None
                return self._run(ctx, ex, schema, decider, data)
        finally:
            self._give_back(w)

    def _run(self, ctx, ex, schema, decider, data):
        out, err = ctypes.POINTER(_lib.Extraction)(), _lib.new_error()
        try:
            if self.mode == "tagger":
                status = pd.pd_tag_extract(ctx, ex, data, len(data), byref(out), byref(err))
            else:
                status = pd.pd_extract(ctx, ex, data, len(data), byref(self.params), byref(out), byref(err))
                if not status and decider:
                    status = pd.pd_extraction_decide(decider, schema, data, out, byref(err))
            check(status, err)
            return self._records(out)
        finally:
            pd.pd_extraction_free(out)

    def _records(self, out):
        x = out.contents
        return [{self.fields[j]: x.records[r].values[j].decode("utf-8", "replace") for j in range(x.n_fields)}
                for r in range(x.n_records)]

    def extract_many(self, texts, parallel=1):
        """extract() over an iterable of texts, yielding each text's records in input
        order; parallel texts at a time. Generation: the texts in flight advance together
        in joint forward passes on one context's threads (pd_extract_many: the weights
        are read once a pass for all of them), each with a KV cache of its own, reading
        ahead 32 x parallel texts; the records are those of extract(). A tagger head:
        threads sharing the model, each with a context of its own (threads x parallel
        should not pass the cores), reading ahead 2 x parallel texts. Memory does not grow
        with the input. A text that fails raises its Error when its turn to be yielded
        comes."""
        parallel = _lib.positive(parallel, "parallel")
        self._check_open()
        if parallel == 1:
            return map(self.extract, texts)
        return self._many(iter(texts), parallel) if self.mode == "tagger" else self._joint(iter(texts), parallel)

    def _joint(self, texts, parallel):
        w = self._worker()
        cp = pd.pd_context_default_params()
        cp.n_threads, cp.n_ctx, cp.n_batch = 1, self._ctx, 17  # a cache each: the passes run on w.ctx
        slots = []
        try:
            for _ in range(parallel - 1):
                slots.append(Handle.make("Extractor", pd.pd_context_free,
                                         lambda m, err: pd.pd_context_new(m, byref(cp), err), [self.model._h]))
            while True:
                window = list(itertools.islice(texts, 32 * parallel))
                if not window:
                    return
                yield from self._window(w, slots, window)
        finally:
            for h in slots:
                h.close()
            self._give_back(w)

    def _window(self, w, slots, window):
        """The window's records (or the Error of a text), in order."""
        data, results = [], [None] * len(window)
        for i, text in enumerate(window):
            try:
                data.append((i, cstr(text, "text")))
            except _lib.Error as e:
                results[i] = e
        n = len(data)
        outs, errs, err = (ctypes.POINTER(_lib.Extraction) * max(n, 1))(), (_lib.PdError * max(n, 1))(), _lib.new_error()
        texts = (ctypes.c_char_p * max(n, 1))(*[d for _, d in data])
        lens = (ctypes.c_size_t * max(n, 1))(*[len(d) for _, d in data])
        try:
            with contextlib.ExitStack() as stack:
                _, ctx, ex, schema = (stack.enter_context(h.use()) for h in (self.model._h, w.ctx, self._ex,
                                                                             self._schema))
                ctxs = (ctypes.c_void_p * (1 + len(slots)))(ctx, *[stack.enter_context(h.use()) for h in slots])
                decider = stack.enter_context(w.decider.use()) if w.decider else None
                pd.pd_extract_many(ctxs, len(ctxs), ex, texts, lens, n, byref(self.params), outs, errs, byref(err))
                for k, (i, d) in enumerate(data):
                    try:
                        if not outs[k]:
                            _lib.raise_error(errs[k])
                        if decider:
                            check(pd.pd_extraction_decide(decider, schema, d, outs[k], byref(err)), err)
                        results[i] = self._records(outs[k])
                    except _lib.Error as e:
                        results[i] = e
        finally:
            for k in range(n):
                pd.pd_extraction_free(outs[k])
        for r in results:
            if isinstance(r, _lib.Error):
                raise r
            yield r

    def _many(self, texts, parallel):
        pool = concurrent.futures.ThreadPoolExecutor(parallel, thread_name_prefix="pocketdec-extract")
        pending = collections.deque()
        try:
            for text in texts:
                pending.append(pool.submit(self.extract, text))
                if len(pending) >= 2 * parallel:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self):
        return f"<pocketdec.Extractor {self.mode} {self.fields}{' (closed)' if self.closed else ''}>"
