"""Models and tokenizers: loading (with LoRA adapters), logits and hidden states."""

import ctypes
import json
import os

from . import _lib
from ._lib import Handle, Owner, arg_error, byref, check, cpath, cstr, pd

_LAYOUT = {"auto": 0, "file": 1}
_APPLY = {"auto": 0, "merge": 1, "runtime": 2}


def choice(table, value, what):
    """table[value], or an Error listing the accepted values."""
    try:
        return table[value]
    except (KeyError, TypeError):
        names = ", ".join(repr(k) for k in table if k is not None)
        raise arg_error(f"{what} must be one of {names}, got {value!r}") from None


def check_model(model):
    """model, when it is a Model; else an Error."""
    if not isinstance(model, Model):
        raise arg_error(f"model must be a pocketdec.Model, got {type(model).__name__}")
    return model


def bundle_part(path, part):
    """PATH/part when PATH is a bundle folder (base/, adapter/, head/ side by side and no
    config.json of its own, as models/tianchi), else None: the library's rule
    (pd_bundle_part), the command line's too."""
    try:
        file = cpath(path, "path")
    except _lib.Error:
        return None
    ptr = pd.pd_bundle_part(file, part.encode())
    if not ptr:
        return None
    try:
        return os.fsdecode(ctypes.string_at(ptr))
    finally:
        pd.pd_free(ptr)


class Tokenizer(Owner):
    """A byte-level BPE tokenizer: Tokenizer("tokenizer.json"), or a model's (model.tokenizer)."""

    def __init__(self, path):
        """Load an HF tokenizer.json."""
        file = cpath(path, "path")
        self._h = Handle.make("Tokenizer", pd.pd_tokenizer_free, lambda err: pd.pd_tokenizer_load(file, err))
        self._get = lambda ptr: ptr
        self._own(self._h)

    @classmethod
    def _of(cls, model_handle):
        tok = cls.__new__(cls)
        tok._h, tok._get = model_handle, pd.pd_model_tokenizer  # lives and closes with the model
        tok._finalizer = None
        return tok

    @property
    def closed(self):
        """True once closed (a model's tokenizer: once the model is)."""
        return self._h.closed

    def _call(self, fn, *args):
        with self._h.use() as ptr:
            return fn(self._get(ptr), *args)

    def encode(self, text, plain=False):
        """Token ids of text (a str). Special tokens written in it ("<|im_end|>") are
        recognised unless plain=True, which reads untrusted text as its bytes."""
        data = cstr(text, "text")
        ids, n, err = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_size_t(), _lib.new_error()
        fn = pd.pd_tokenizer_encode_plain if plain else pd.pd_tokenizer_encode
        check(self._call(fn, data, len(data), byref(ids), byref(n), byref(err)), err)
        try:
            return ids[:n.value]
        finally:
            pd.pd_free(ids)

    def decode(self, ids):
        """The text of ids; bytes that do not form UTF-8 (a token holding part of a
        character) become U+FFFD. Ids outside the vocabulary raise Error (out of range)."""
        arr, n = _lib.int32_array(ids, "ids")
        text, size, err = ctypes.c_void_p(), ctypes.c_size_t(), _lib.new_error()
        check(self._call(pd.pd_tokenizer_decode, arr, n, byref(text), byref(size), byref(err)), err)
        try:
            return ctypes.string_at(text, size.value).decode("utf-8", "replace")
        finally:
            pd.pd_free(text)

    def token_id(self, token):
        """The id of a token written as in the vocabulary ("<|im_end|>"), or None."""
        i = self._call(pd.pd_tokenizer_token_id, cstr(token, "token"))
        return None if i < 0 else i

    def __len__(self):
        """The number of ids (vocabulary plus added tokens)."""
        return self._call(pd.pd_tokenizer_n_vocab)


class Model(Owner):
    """A Qwen3 model: an HF directory, a .gguf file, or a bundle folder (base/, adapter/ and
    head/ side by side, as models/tianchi: base/ is loaded, adapter/ applied first, and head/
    is what Decider and Extractor use when given no head). Immutable once loaded: share it
    between threads freely.

        model = Model("models/tianchi")
        model = Model("base", adapters=[("adapter", 1.0)], quantize="q8_0", threads=2)
    """

    def __init__(self, path, adapters=(), quantize=None, threads=None, *, layout="auto", adapter_mode="auto"):
        """adapters: PEFT LoRA directories, each a path or a (path, weight) pair, applied in
        order (after a bundle's adapter/). quantize: None, "q8_0", "q4_0", "q4_1" or "q4_64"
        (float weights quantized as they load). threads: the threads of each forward pass;
        None: every core this process may use (pd_cpu_count(), the library's and the
        command's default too; at most that many run). layout: "auto" or "file" (how
        block-quantized weights are held). adapter_mode: "auto", "merge" or "runtime"."""
        self.threads = pd.pd_cpu_count() if threads is None else _lib.positive(threads, "threads")
        params = _lib.ModelParams(choice(_LAYOUT, layout, "layout"), _lib.quant_type(quantize, "quantize"))
        stack = _adapter_list(adapters)
        bp = pd.pd_bundle_default_params()
        bp.model, bp.adapter_mode, bp.no_head = params, choice(_APPLY, adapter_mode, "adapter_mode"), 1
        dirs = (ctypes.c_char_p * max(len(stack), 1))(*[cpath(d, "adapter") for d, _ in stack])
        weights = (ctypes.c_float * max(len(stack), 1))(*[w for _, w in stack])
        bp.adapters, bp.weights, bp.n_adapters = dirs, weights, len(stack)
        self.path = path
        self._described = dict(path=path, adapters=stack, quantize=quantize, layout=layout, adapter_mode=adapter_mode)
        self.bundle_head = bundle_part(path, "head")  # loaded by Decider and Extractor, which may take another
        file = cpath(path, "path")
        # pd_bundle_open: the base (a bundle's base/), the bundle's adapter/ then these, applied
        bundle = Handle.make("Model", pd.pd_bundle_free, lambda err: pd.pd_bundle_open(file, byref(bp), err))
        bundle.acquire()  # held by the model's handle, which the bundle owns
        self._h = Handle("Model", pd.pd_bundle_model(bundle.ptr), lambda ptr: None, [bundle])
        self._own(bundle, self._h)
        with self._h.use() as ptr:
            c = pd.pd_model_config(ptr).contents
            self.config = {name: getattr(c, name) for name, _ in _lib.Config._fields_}
            self.config["tied_embeddings"] = bool(self.config["tied_embeddings"])
            has_tokenizer = bool(pd.pd_model_tokenizer(ptr))
        self.tokenizer = Tokenizer._of(self._h) if has_tokenizer else None

    def info(self):
        """The model's summary as a dict (what `pocketdec info` prints): architecture,
        dimensions, dtypes, parameter count, source."""
        with self._h.use() as ptr:
            return json.loads(_lib.take_string(pd.pd_model_info_json(ptr)))

    def _forward(self, ids, hidden):
        if isinstance(ids, str):
            raise arg_error("ids must be token ids (model.tokenizer.encode(text) gives them), got a str")
        arr, n = _lib.int32_array(ids, "ids")
        if n == 0:
            raise arg_error("ids is empty")
        rows = (ctypes.c_int32 * n)(*range(n)) if hidden else None
        batch = _lib.Batch(arr, n, None, None, rows, n if hidden else 0, 0 if hidden else 1)
        cp = pd.pd_context_default_params()
        cp.n_threads = self.threads
        cp.n_ctx = n
        err = _lib.new_error()
        with self._h.use() as model:
            ctx = pd.pd_context_new(model, byref(cp), byref(err))
            if not ctx:
                _lib.raise_error(err)
            try:
                check(pd.pd_eval(ctx, byref(batch), byref(err)), err)
                if not hidden:
                    return _lib.floats(pd.pd_context_logits(ctx, 0), self.config["vocab"])
                out = [_lib.floats(pd.pd_context_hidden(ctx, i), self.config["hidden"]) for i in range(n)]
                return _lib.np.stack(out) if _lib.np is not None else out
            finally:
                pd.pd_context_free(ctx)

    def logits(self, ids):
        """Logits at the last position of ids (one causal forward pass), [vocab]: a numpy
        float32 array when numpy is importable, a list otherwise. The GIL is released while
        it runs."""
        return self._forward(ids, False)

    def hidden(self, ids):
        """Final-norm hidden states of every position of ids, [len(ids), hidden] (numpy, or
        a list of lists)."""
        return self._forward(ids, True)

    def __repr__(self):
        return f"<pocketdec.Model {self.path!r}{' (closed)' if self.closed else ''}>"


def _adapter_list(adapters):
    if isinstance(adapters, (str, bytes, os.PathLike)):
        adapters = [adapters]
    out = []
    try:
        for a in adapters:
            d, w = (a, 1.0) if isinstance(a, (str, bytes, os.PathLike)) else a
            if isinstance(w, bool) or not isinstance(w, (int, float)):
                raise TypeError
            out.append((d, float(w)))
    except (TypeError, ValueError):
        raise arg_error("adapters must be a list of directories or (directory, weight) pairs, "
                        f"got {adapters!r}") from None
    return out
