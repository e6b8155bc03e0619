"""Schema-bound extraction: records from texts, by a tagger head's one forward pass or by
generation under the schema's constraints (with a decision head relabelling the records)."""

import ctypes
import itertools
import os
import threading

from . import _lib
from ._lib import Handle, Owner, arg_error, byref, check, cpath, cstr, pd
from .decide import head_dir, load_head
from .model import Model, check_model

_PATHS = ("tagger", "generate", "decide")  # pd_pipeline_path


class Record(dict):
    """One record: {field: value} in the schema's field order ("_" for an empty field), and
    - spans: {span field: (start, end)}, character offsets in the text (text[start:end] is
      the value), for the values placed in the text;
    - probs: {field: p, ..., "link": p}, each field's probability and the pairing's;
    - confidence: the record's probability as a whole.
    How each is computed: docs/extraction.md, "Confidence and offsets"."""
    __slots__ = ("spans", "probs", "confidence")

    def as_json(self):
        """The record as `pocketdec extract --format jsonl` writes it (at full precision)."""
        return {**self, "spans": {f: list(v) for f, v in self.spans.items()}, "probs": dict(self.probs),
                "confidence": self.confidence}


class Extractor(Owner):
    """Extracts the records a YAML schema describes (Tianchi: aspect, opinion, category,
    polarity) from texts:

        ex = Extractor(Model("models/tianchi"), "schemas/tianchi-makeup.yaml")
        ex = Extractor("models/tianchi", "schemas/tianchi-makeup.yaml")   # a path: its own Model
        ex.extract("物流很快，包装也很好")   # [{"aspect": "物流", "opinion": "很快", ...}, ...]

    head: None takes the bundle's head/ when the model is a bundle folder; False, or no
    bundle head, generates the records under the schema's constraints. A tagger head
    extracts them in one forward pass (no generation); a pointer or classifier head
    relabels generated records (the schema's `decide` section). An Extractor may be used by
    any number of threads at once: each call takes a context of its own from a pool."""

    def __init__(self, model, schema, head=None, *, threads=None, ctx=0, max_records=0, max_tokens=0,
                 temperature=0.0, seed=0, speculate=None, min_confidence=None, max_chars=None, draft=None,
                 draft_block=0, draft_quantize=None):
        """model: a Model, or a model's path (a Model of its own is opened with threads, and
        closed with the Extractor). schema: a YAML schema file. threads: of each forward pass (default: the
        model's). ctx: the context length (0: min(model's, 4096)). max_records,
        max_tokens (0: the schema's limits), temperature (0: greedy), seed and speculate
        (draft tokens of copy speculation a pass verifies, 0-16; None: the library's
        default; the same records either way) apply to generation only. min_confidence
        (0 to 1): records whose confidence is below it are dropped (0 keeps every record);
        None: a tagger head's floor (head.json, 0.3 for the bundled default), else 0.
        max_chars (0, or 16 and more): texts longer than that are read in windows of at most
        that many characters (a text too long for the context always is; docs/extraction.md,
        "Long reviews"); None: a tagger head's max_chars (the longest texts it learned
        from), else 0.
        draft: the folder of a DFlash / DFlash2 draft of the model (docs/drafts.md): in greedy
        generation it proposes blocks of draft_block tokens (0: its block size) that one pass
        verifies, the same records in fewer passes (sampled: those of the same seed);
        draft_quantize None, "q8_0" or "q4_0" quantizes its matrices at load (fewer bytes a
        draft pass, other proposals, the same records). A draft of another model, or one
        with a tagger head, raises Error."""
        owned = None
        if isinstance(model, (str, os.PathLike)):  # a path, as spacy.load takes one: the Extractor's own Model
            owned = model = Model(model, threads=threads)
        self.model = check_model(model)
        # what makes the records what they are, for a resumable output's run (extract_file)
        self._described = dict(schema=schema, head=head_dir(model, head), ctx=ctx, max_records=max_records,
                               max_tokens=max_tokens, temperature=temperature, seed=seed, speculate=speculate,
                               min_confidence=min_confidence, max_chars=max_chars, draft=draft,
                               draft_block=draft_block, draft_quantize=draft_quantize)
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
        # None: the head's (PD_PIPELINE_HEAD_DEFAULT); the library checks the range
        if min_confidence is not None and (isinstance(min_confidence, bool) or
                                           not isinstance(min_confidence, (int, float))):
            raise arg_error(f"min_confidence must be a number within [0, 1] or None, got {min_confidence!r}")
        self._min_confidence = -1.0 if min_confidence is None else float(min_confidence)
        self._max_chars = -1 if max_chars is None else _lib.positive(max_chars, "max_chars", 0)
        path = cpath(schema, "schema")
        self._schema = Handle.make("Extractor", pd.pd_schema_free, lambda err: pd.pd_schema_load(path, err))
        self._own(self._schema)
        if owned:
            self._handles.insert(0, owned)  # closed last, after what uses it
        self._draft_block = _lib.positive(draft_block, "draft_block", 0)
        self._draft = None
        dquant = _lib.quant_type(draft_quantize, "draft_quantize")  # the draft's loader says which it takes
        if draft is not None:
            dpath = cpath(draft, "draft")
            self._draft = Handle.make("Extractor", pd.pd_draft_free,
                                      lambda m, err: pd.pd_draft_load_quantized(dpath, m, dquant, err), [self.model._h])
            self._handles.append(self._draft)
        self._lock = threading.Lock()
        self._free = []
        try:
            self._bind(model, head_dir(model, head))
        except BaseException:
            self.close()
            raise

    def _bind(self, model, head):
        with self._schema.use() as s:
            self.fields = [pd.pd_schema_field_name(s, i).decode() for i in range(pd.pd_schema_n_fields(s))]
        self._head = load_head(model, head) if head is not None else None
        if self._head:
            self._handles.append(self._head)
        first = self._pipeline(1)  # the path, the options and the limits are checked here
        self._handles.append(first)
        with first.use() as p:
            self.mode = _PATHS[pd.pd_pipeline_get_path(p)]
        self._free.append(first)

    def _pipeline(self, parallel):
        """A pd_pipeline over the model, schema and head with parallel texts in flight."""
        pp = pd.pd_pipeline_default_params()
        pp.extract, pp.n_threads, pp.n_ctx, pp.parallel = self.params, self._threads, self._ctx, parallel
        pp.min_confidence, pp.max_chars, pp.draft_block = self._min_confidence, self._max_chars, self._draft_block
        parents = [self.model._h, self._schema] + [h for h in (self._head, self._draft) if h]

        def make(m, s, *rest):  # the head's and the draft's pointers when there are, then err
            *handles, err = rest
            head = handles.pop(0) if self._head else None
            pp.draft = handles[0] if self._draft else None
            return pd.pd_pipeline_new(m, s, head, byref(pp), err)
        return Handle.make("Extractor", pd.pd_pipeline_free, make, parents)

    def _worker(self):
        """A pipeline of one text at a time from the pool (one is made when none is free)."""
        with self._lock:
            self._check_open()
            if self._free:
                return self._free.pop()
        w = self._pipeline(1)
        with self._lock:
            if self._finalizer.alive:
                self._handles.append(w)
                return w
        w.close()  # closed meanwhile
        self._check_open()

    def _give_back(self, w):
        with self._lock:
            if self._finalizer.alive:
                self._free.append(w)

    def extract(self, text):
        """The records of text (a str) as a list of Record: dicts {field: value} in the
        schema's field order ("_" for an empty field) with the record's offsets and
        probabilities as attributes. Runs one forward pass (tagger head) or a constrained
        generation; the GIL is released while the model runs."""
        return self._extracted(cstr(text, "text"), self._records)

    def jsonl(self, rid, text=None):
        """(line, records): the line `pocketdec extract --format jsonl` writes for text under
        the id rid (a str), written by the library, and text's records as extract() gives
        them. text None: the line of a review with no records (what the command writes for
        one that failed), and []. Raises what extract() raises."""
        data, out = self._formatted(rid, text, 1, lambda x: self._records(x) if x else [])  # PD_FORMAT_JSONL
        return data.decode("utf-8"), out

    def _line(self, rid, text, fmt):
        """(bytes, number of records): what the command writes for text (None: no records)
        in format fmt (pd_record_format)."""
        return self._formatted(rid, text, fmt, lambda x: x.contents.n_records if x else 0)

    def _formatted(self, rid, text, fmt, what):
        rid = cstr(rid, "id")

        def line(out):  # out NULL: no records
            with self._schema.use() as s:
                ptr, n, err = ctypes.c_void_p(), ctypes.c_size_t(), _lib.new_error()
                check(pd.pd_extraction_format(s, out, rid, fmt, byref(ptr), byref(n), byref(err)), err)
            try:
                data = ctypes.string_at(ptr.value, n.value)
            finally:
                pd.pd_free(ptr.value)
            return data, what(out)
        if text is None:
            with self.model._h.use():
                return line(ctypes.POINTER(_lib.Extraction)())
        return self._extracted(cstr(text, "text"), line)

    def extract_file(self, input, output, *, format="tianchi", input_format=None, id_column=None, text_column=None,
                     encoding=None, resume=False, sync=False, parallel=1):
        """Extract every review of input (a Tianchi CSV `id,Reviews`, a CSV with a header such
        as a shop's export, or JSONL {"id", "text"} by the .jsonl extension or input_format)
        into output (a path), in the command's format ("tianchi" rows or "jsonl"): byte for
        byte what `pocketdec extract` writes for the same input and options, each review's
        lines written whole, and output.progress beside it (docs/reliability.md). The file is
        read by the library's reader of review files (pocketdec_reviews.h), the command's:
        id_column and text_column name the columns (--id-column, --text-column; by default
        "id" and the one column named Reviews, text, review, content or comment, else an
        Error listing the header's columns); a CSV's other columns are carried into "jsonl"
        lines; encoding (--encoding: "gb18030", "gbk", "utf-16", any iconv name) reads a file
        that is not UTF-8, and without it such a file raises Error naming the option. An
        existing output is replaced, unless resume=True:
        then a call that died (killed, a full disk) is continued where it stopped, the torn
        tail cut, and the file ends as one uninterrupted call's; a resume with another
        model, schema, input or option raises Error naming what differs. sync=True fsyncs
        after every review (default: every 5 s and at the end). parallel reviews are
        extracted at a time (threads of this Extractor). Returns {"reviews", "records",
        "broken", "failed", "problems"} as pocketdec.dask.extract_jsonl does (the counts
        include what a resumed call had written; problems are this call's)."""
        from .files import extract_file
        return extract_file(self, input, output, format=format, input_format=input_format, id_column=id_column,
                            text_column=text_column, encoding=encoding, resume=resume, sync=sync, parallel=parallel)

    def extract_frame(self, df, text_column, id_column=None, *, parallel=1, keep_empty=True):
        """A pandas DataFrame of reviews in, a DataFrame of their records out, one row a record:
        the review's id (id_column's value, else the frame's index, as "id"), its text, "record"
        (the record's number within its review, from 0), every field, each field's span
        (FIELD_start, FIELD_end: character offsets, end exclusive; <NA> where the value is not
        placed in the text), each field's probability (FIELD_prob) and the pairing's (link_prob),
        and the record's confidence; every other column of the input is kept. keep_empty: a
        review with no record keeps one row, its record columns <NA> (False: no row). The records
        are extract_many(texts, parallel)'s. Raises ImportError without pandas, Error for a column
        that is not there, a text that is not a str, or an input column a record column would
        overwrite."""
        from .frames import extract_frame
        return extract_frame(self, df, text_column, id_column, parallel, keep_empty)

    def _extracted(self, data, use):
        """use(out) on the extraction of data (UTF-8 bytes) by a pipeline of the pool, the
        model held during the call and the extraction freed after it."""
        w = self._worker()
        try:
            with self.model._h.use(), w.use() as p:  # a closed model or extractor raises Error here
                out, err = ctypes.POINTER(_lib.Extraction)(), _lib.new_error()
                try:
                    check(pd.pd_pipeline_extract(p, data, len(data), byref(out), byref(err)), err)
                    return use(out)
                finally:
                    pd.pd_extraction_free(out)
        finally:
            self._give_back(w)

    def _records(self, out):
        x = out.contents
        return [self._record(x.records[r], x.n_fields) for r in range(x.n_records)]

    def _record(self, r, n):
        rec = Record((self.fields[j], r.values[j].decode("utf-8", "replace")) for j in range(n))
        rec.spans = {self.fields[j]: (r.start[j], r.end[j]) for j in range(n) if r.start[j] >= 0}
        rec.probs = {**{self.fields[j]: r.prob[j] for j in range(n)}, "link": r.link}
        rec.confidence = r.confidence
        return rec

    def extract_many(self, texts, parallel=1):
        """extract() over an iterable of texts, yielding each text's records in input
        order; parallel texts at a time, in one pipeline of the library reading ahead as
        many texts as it asks (pd_pipeline_read_ahead: 32 x parallel); the records are those
        of extract(). Generation: the texts in flight advance together in joint forward
        passes on one context's threads (pd_extract_many: the weights are read once a pass
        for all of them), each with a KV cache of its own. A tagger head: the texts side
        by side, each on a context of its own, the threads split among them (at least
        one each; on 2 cores parallel=2 with threads=2 reads about 1.45 times as many
        reviews a second as parallel=1). Memory does not grow with the input. A text that
        fails raises its Error when its turn to be yielded comes."""
        parallel = _lib.positive(parallel, "parallel")
        self._check_open()
        if parallel == 1:
            return map(self.extract, texts)
        return self._joint(iter(texts), parallel)

    def _joint(self, texts, parallel):
        w = self._pipeline(parallel)
        try:
            with w.use() as p:
                size = pd.pd_pipeline_read_ahead(p)
            while True:
                batch = list(itertools.islice(texts, size))
                if not batch:
                    return
                self._check_open()  # a batch not started when the Extractor was closed
                yield from self._batch(w, batch)
        finally:
            w.close()

    def _batch(self, w, batch):
        """The batch's records (or the Error of a text), in order."""
        data, results = [], [None] * len(batch)
        for i, text in enumerate(batch):
            try:
                data.append((i, cstr(text, "text")))
            except _lib.Error as e:
                results[i] = e
        n = len(data)
        outs, errs, err = (ctypes.POINTER(_lib.Extraction) * max(n, 1))(), (_lib.PdError * max(n, 1))(), _lib.new_error()
        texts = (ctypes.c_char_p * max(n, 1))(*[d for _, d in data])
        lens = (ctypes.c_size_t * max(n, 1))(*[len(d) for _, d in data])
        try:
            with self.model._h.use(), w.use() as p:
                pd.pd_pipeline_extract_many(p, texts, lens, n, outs, errs, byref(err))
            for k, (i, _) in enumerate(data):
                try:
                    if not outs[k]:
                        _lib.raise_error(errs[k])
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

    def __repr__(self):
        return f"<pocketdec.Extractor {self.mode} {self.fields}{' (closed)' if self.closed else ''}>"
