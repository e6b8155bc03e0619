"""The C libraries through ctypes: finding and loading them, their structures and
prototypes, the one exception class, and handles that free their C objects once.

ctypes.CDLL (not PyDLL) is used, so every C call releases the GIL while it runs:
forward passes in several Python threads run in parallel.
"""

import contextlib
import ctypes
import ctypes.util
import os
import threading

try:
    import numpy as np
except ImportError:  # lists instead of arrays
    np = None

from ctypes import (POINTER, Structure, byref, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_long,
                    c_size_t, c_uint, c_uint8, c_uint64, c_void_p)

PD_OK, PD_ERR_IO, PD_ERR_FORMAT, PD_ERR_RANGE, PD_ERR_NOMEM, PD_ERR_ARG = 0, 1, 2, 5, 6, 7
_MESSAGE_SIZE = 512  # PD_ERROR_MESSAGE_SIZE and TE_ERROR_MESSAGE_SIZE


class Error(Exception):
    """Every failure of pocketdec and tianchi-eval, and every bad argument.

    status is the C library's status name ("format error", "out of range", ...),
    code its number (pd_status or te_status), message the library's one-line text
    (it names the file, line and problem where there is one)."""

    def __init__(self, status, message, code=None):
        super().__init__(status, message, code)
        self.status, self.message, self.code = status, message, code

    def __str__(self):
        return f"{self.status}: {self.message}"


def arg_error(message, code=PD_ERR_ARG):
    """An Error for a bad argument caught before the C library is called."""
    return Error("out of range" if code == PD_ERR_RANGE else "invalid argument", message, code)


# ------------------------------------------------------------------ finding the libraries

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAMES = {"pocketdec": ("libpocketdec.so", "libpocketdec.so.0", "libpocketdec.dylib"),
          "tianchieval": ("libtianchieval.so", "libtianchieval.so.0", "libtianchieval.dylib")}
_ENV = {"pocketdec": "POCKETDEC_LIBRARY", "tianchieval": "POCKETDEC_TIANCHI_EVAL_LIBRARY"}


def _candidates(name, near=None):
    """Where to look for lib<name>, in order: its environment variable, the libdir that
    `meson install` wrote into _install.py, the package's own folder, the folder of
    libpocketdec (and its tianchi-eval/ subfolder, as in a build tree), the build/ tree of
    a source checkout, then the system's search (ctypes.util.find_library)."""
    env = os.environ.get(_ENV[name])
    if env:
        return [env], True
    dirs = []
    try:
        from . import _install
        dirs.append(_install.LIBDIR)
    except ImportError:
        pass
    dirs.append(_HERE)
    if near:
        dirs += [near, os.path.join(near, "tianchi-eval")]
    build = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build")
    dirs += [build, os.path.join(build, "tianchi-eval")]
    paths = [os.path.join(d, n) for d in dirs for n in _NAMES[name]]
    found = ctypes.util.find_library(name)
    return [p for p in paths if os.path.exists(p)] + ([found] if found else []), False


def _load(name, near=None):
    paths, from_env = _candidates(name, near)
    for path in paths:
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            if from_env:
                raise ImportError(f"pocketdec: {_ENV[name]}={path} cannot be loaded: {e}") from None
    raise ImportError(f"pocketdec: lib{name} not found (set {_ENV[name]} to its path, install it with "
                      "`meson install`, or build it into build/ with `meson compile -C build`)")


class _Error(Structure):  # pd_error and te_error have the same layout
    _fields_ = [("code", c_int), ("message", c_char * _MESSAGE_SIZE)]


PdError = _Error  # the C struct, for arrays of errors (pd_extract_many)


# ------------------------------------------------------------------ structures of pocketdec.h

class Config(Structure):
    _fields_ = [(n, c_int32) for n in ("n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim", "ffn", "vocab",
                                       "max_positions")] + \
               [("rope_theta", c_float), ("rms_eps", c_float), ("tied_embeddings", c_int), ("bos_id", c_int32),
                ("eos_id", c_int32)]


class ModelParams(Structure):
    _fields_ = [("layout", c_int), ("quantize", c_int)]


class BundleParams(Structure):
    _fields_ = [("model", ModelParams), ("adapters", POINTER(c_char_p)), ("weights", POINTER(c_float)),
                ("n_adapters", c_size_t), ("adapter_mode", c_int), ("head", c_char_p), ("no_head", c_int)]


class ContextParams(Structure):
    _fields_ = [("n_ctx", c_int32), ("n_threads", c_int32), ("n_batch", c_int32), ("max_bytes", c_size_t),
                ("kv_type", c_int)]


class Batch(Structure):
    _fields_ = [("tokens", POINTER(c_int32)), ("n_tokens", c_int32), ("positions", POINTER(c_int32)),
                ("visible", POINTER(c_uint8)), ("outputs", POINTER(c_int32)), ("n_outputs", c_int32),
                ("want_logits", c_int)]


class DeciderParams(Structure):
    _fields_ = [("layout", c_int), ("n_threads", c_int32), ("n_ctx", c_int32), ("max_bytes", c_size_t)]


class Decision(Structure):
    _fields_ = [("n_candidates", c_int32), ("probs", POINTER(c_float)), ("scores", POINTER(c_float)),
                ("mean_logprob", POINTER(c_float)), ("label_index", POINTER(c_int32)),
                ("forward_passes", c_int32), ("prompt_tokens", c_int32), ("tokens", POINTER(c_int32)),
                ("positions", POINTER(c_int32)), ("query_index", c_int32), ("key_index", POINTER(c_int32))]


class SamplerParams(Structure):
    _fields_ = [("temperature", c_float), ("top_k", c_int32), ("top_p", c_float), ("seed", c_uint64)]


class ExtractParams(Structure):
    _fields_ = [("sampler", SamplerParams), ("max_records", c_int32), ("max_tokens", c_int32),
                ("sparse_head", c_int32), ("speculate", c_int32), ("drafter", c_void_p)]


class Record(Structure):
    _fields_ = [("values", POINTER(c_char_p)), ("start", POINTER(c_int32)), ("end", POINTER(c_int32)),
                ("prob", POINTER(c_float)), ("link", c_float), ("confidence", c_float)]


class PipelineParams(Structure):
    _fields_ = [("extract", ExtractParams), ("n_threads", c_int32), ("n_ctx", c_int32), ("parallel", c_int32),
                ("max_bytes", c_size_t), ("min_confidence", c_float), ("max_chars", c_int32), ("draft", c_void_p),
                ("draft_block", c_int32)]


class OutputParams(Structure):
    _fields_ = [("resume", c_int), ("sync_seconds", c_double)]


class ExtractionStats(Structure):
    _fields_ = [("n_prompt_tokens", c_int32), ("n_tokens", c_int32), ("n_sparse", c_int32),
                ("mask_us", POINTER(c_double)), ("n_cached_tokens", c_int32), ("n_forward", c_int32),
                ("n_drafted", c_int32), ("n_accepted", c_int32), ("n_copies_drafted", c_int32),
                ("n_copies_kept", c_int32), ("n_windows", c_int32), ("n_draft_passes", c_int32),
                ("n_draft_drafted", c_int32), ("n_draft_kept", c_int32)]


class Extraction(Structure):
    _fields_ = [("n_fields", c_int32), ("n_records", c_int32), ("records", POINTER(Record)), ("stop", c_int),
                ("stats", ExtractionStats)]


class ReviewsParams(Structure):  # pd_reviews_params
    _fields_ = [("format", c_int), ("id_column", c_char_p), ("text_column", c_char_p), ("encoding", c_char_p),
                ("keep_extra", c_int), ("first_line", c_long)]


class Review(Structure):  # pd_review
    _fields_ = [("line", c_long), ("ordinal", c_long), ("header", c_int), ("id", c_char_p),
                ("text", ctypes.POINTER(c_char)), ("text_len", c_size_t), ("problem", c_char_p), ("keep_id", c_int),
                ("extra", c_char_p)]


SUMMARIZE_NOTE = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)  # pd_summarize_note_fn


class SummarizeParams(Structure):  # pd_summarize_params
    _fields_ = [("records", c_char_p), ("pipeline", c_void_p), ("schema", c_void_p), ("merge", POINTER(c_char_p)),
                ("n_merge", c_size_t), ("reviews", c_char_p), ("reviews_params", ReviewsParams), ("by", c_char_p),
                ("calibration", c_char_p), ("calibrate_labels", c_char_p), ("calibrate_records", c_char_p),
                ("save_calibration", c_char_p), ("bundle", c_char_p), ("save_state", c_char_p),
                ("min_support", c_int), ("top", c_int), ("examples", c_int), ("listed", c_int),
                ("note", SUMMARIZE_NOTE), ("note_ctx", c_void_p)]


class Quad(Structure):  # te_quad
    _fields_ = [("id", c_long), ("aspect", c_char_p), ("opinion", c_char_p), ("category", c_char_p),
                ("polarity", c_char_p)]


P, E = c_void_p, POINTER(_Error)
_PD_PROTOTYPES = {
    "pd_status_name": (c_char_p, [c_int]),
    "pd_free": (None, [c_void_p]),
    "pd_quant_type_from_name": (c_int, [c_char_p, POINTER(c_int), E]),
    "pd_tokenizer_load": (P, [c_char_p, E]),
    "pd_tokenizer_free": (None, [P]),
    "pd_tokenizer_n_vocab": (c_int32, [P]),
    "pd_tokenizer_encode": (c_int, [P, c_char_p, c_size_t, POINTER(POINTER(c_int32)), POINTER(c_size_t), E]),
    "pd_tokenizer_encode_plain": (c_int, [P, c_char_p, c_size_t, POINTER(POINTER(c_int32)), POINTER(c_size_t), E]),
    "pd_tokenizer_decode": (c_int, [P, POINTER(c_int32), c_size_t, POINTER(c_void_p), POINTER(c_size_t), E]),
    "pd_tokenizer_token_id": (c_int32, [P, c_char_p]),
    "pd_model_load": (P, [c_char_p, POINTER(ModelParams), E]),
    "pd_bundle_part": (c_void_p, [c_char_p, c_char_p]),
    "pd_bundle_default_params": (BundleParams, []),
    "pd_bundle_open": (P, [c_char_p, POINTER(BundleParams), E]),
    "pd_bundle_free": (None, [P]),
    "pd_bundle_model": (P, [P]),
    "pd_model_free": (None, [P]),
    "pd_model_config": (POINTER(Config), [P]),
    "pd_model_tokenizer": (P, [P]),
    "pd_model_info_json": (c_void_p, [P]),
    "pd_context_default_params": (ContextParams, []),
    "pd_cpu_count": (c_int32, []),
    "pd_context_new": (P, [P, POINTER(ContextParams), E]),
    "pd_context_free": (None, [P]),
    "pd_eval": (c_int, [P, POINTER(Batch), E]),
    "pd_context_n_outputs": (c_int32, [P]),
    "pd_context_hidden": (POINTER(c_float), [P, c_int32]),
    "pd_context_logits": (POINTER(c_float), [P, c_int32]),
    "pd_adapter_load": (P, [c_char_p, E]),
    "pd_adapter_free": (None, [P]),
    "pd_model_apply_adapters": (P, [P, POINTER(P), POINTER(c_float), c_size_t, c_int, E]),
    "pd_head_load": (P, [c_char_p, P, E]),
    "pd_head_free": (None, [P]),
    "pd_head_get_type": (c_int, [P]),
    "pd_head_labels": (POINTER(c_char_p), [P, POINTER(c_int32)]),
    "pd_decider_default_params": (DeciderParams, []),
    "pd_decider_new": (P, [P, P, POINTER(DeciderParams), E]),
    "pd_decider_free": (None, [P]),
    "pd_decider_set_text": (c_int, [P, c_char_p, E]),
    "pd_decide": (c_int, [P, c_char_p, c_char_p, POINTER(c_char_p), c_int32, POINTER(POINTER(Decision)), E]),
    "pd_decision_free": (None, [POINTER(Decision)]),
    "pd_schema_load": (P, [c_char_p, E]),
    "pd_schema_free": (None, [P]),
    "pd_schema_n_fields": (c_int32, [P]),
    "pd_schema_field_name": (c_char_p, [P, c_int32]),
    "pd_schema_n_candidates": (c_int32, [P]),
    "pd_extractor_new": (P, [P, P, E]),
    "pd_extractor_free": (None, [P]),
    "pd_extract_default_params": (ExtractParams, []),
    "pd_extract": (c_int, [P, P, c_char_p, c_size_t, POINTER(ExtractParams), POINTER(POINTER(Extraction)), E]),
    "pd_extract_many": (c_int, [POINTER(P), c_int32, P, POINTER(c_char_p), POINTER(c_size_t), c_int32,
                                POINTER(ExtractParams), POINTER(POINTER(Extraction)), E, E]),
    "pd_extraction_free": (None, [POINTER(Extraction)]),
    "pd_extraction_decide": (c_int, [P, P, c_char_p, POINTER(Extraction), E]),
    "pd_extraction_format": (c_int, [P, POINTER(Extraction), c_char_p, c_int, POINTER(c_void_p), POINTER(c_size_t), E]),
    "pd_extraction_json": (c_int, [P, POINTER(Extraction), c_int32, POINTER(c_void_p), POINTER(c_size_t), E]),
    "pd_pipeline_default_params": (PipelineParams, []),
    "pd_pipeline_new": (P, [P, P, P, POINTER(PipelineParams), E]),
    "pd_pipeline_free": (None, [P]),
    "pd_draft_load": (P, [c_char_p, P, E]),
    "pd_draft_load_quantized": (P, [c_char_p, P, c_int, E]),
    "pd_draft_free": (None, [P]),
    "pd_pipeline_get_path": (c_int, [P]),
    "pd_pipeline_read_ahead": (c_int32, [P]),
    "pd_pipeline_extract": (c_int, [P, c_char_p, c_size_t, POINTER(POINTER(Extraction)), E]),
    "pd_pipeline_extract_many": (c_int, [P, POINTER(c_char_p), POINTER(c_size_t), c_int32, POINTER(POINTER(Extraction)),
                                         POINTER(_Error), E]),
    "pd_output_default_params": (OutputParams, []),
    "pd_output_open": (P, [c_char_p, c_char_p, POINTER(OutputParams), POINTER(c_void_p), E]),
    "pd_output_commit": (c_int, [P, c_char_p, c_size_t, c_char_p, E]),
    "pd_output_finish": (c_int, [P, E]),
    "pd_output_free": (None, [P]),
    "pd_reviews_default_params": (ReviewsParams, []),
    "pd_reviews_open": (P, [c_char_p, POINTER(ReviewsParams), E]),
    "pd_reviews_open_memory": (P, [c_char_p, c_size_t, c_char_p, POINTER(ReviewsParams), E]),
    "pd_reviews_free": (None, [P]),
    "pd_reviews_next": (c_int, [P, POINTER(Review), E]),
    "pd_reviews_get_format": (c_int, [P]),
    "pd_reviews_join_extra": (c_void_p, [c_char_p, c_size_t, c_char_p, POINTER(c_size_t)]),
    "pd_summarize_default_params": (SummarizeParams, []),
    "pd_summarize": (c_void_p, [POINTER(SummarizeParams), E]),
    "pd_tag_extractor_new": (P, [P, P, P, E]),
    "pd_tag_extractor_free": (None, [P]),
    "pd_tag_extract": (c_int, [P, P, c_char_p, c_size_t, POINTER(POINTER(Extraction)), E]),
}
_TE_PROTOTYPES = {
    "te_status_name": (c_char_p, [c_int]),
    "te_free": (None, [c_void_p]),
    "te_eval_new": (P, [E]),
    "te_eval_free": (None, [P]),
    "te_eval_load_file": (c_int, [P, c_int, c_char_p, E]),
    "te_eval_add_quad": (c_int, [P, c_int, POINTER(Quad), E]),
    "te_eval_add_review": (c_int, [P, c_long, c_char_p, E]),
    "te_eval_score": (P, [P, E]),
    "te_result_free": (None, [P]),
    "te_result_json": (c_void_p, [P, c_uint, E]),
    "te_result_save_html": (c_int, [P, c_char_p, E]),
}


def _declare(lib, path, prototypes):
    for name, (restype, argtypes) in prototypes.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"pocketdec: {path} has no {name} (a library older than this package?)") from None
        fn.restype, fn.argtypes = restype, argtypes
    return lib


pd, PD_PATH = _load("pocketdec")
_declare(pd, PD_PATH, _PD_PROTOTYPES)
_te = None
_te_lock = threading.Lock()


def te():
    """libtianchieval, loaded on first use (it is looked for beside libpocketdec first)."""
    global _te
    with _te_lock:
        if _te is None:
            try:
                lib, path = _load("tianchieval", os.path.dirname(PD_PATH))
            except ImportError as e:
                raise Error("i/o error", str(e), PD_ERR_IO) from None
            _te = _declare(lib, path, _TE_PROTOTYPES)
    return _te


# ------------------------------------------------------------------ errors and strings

def new_error():
    """A zeroed pd_error / te_error for one call."""
    return _Error()


def raise_error(err, te_lib=False):
    """Raise the Error that a failed call left in err."""
    name = te().te_status_name if te_lib else pd.pd_status_name
    status = (name(err.code) or b"unknown status").decode()
    raise Error(status, err.message.decode("utf-8", "replace"), err.code)


def check(status, err, te_lib=False):
    """Raise the call's Error when status is not 0."""
    if status:
        raise_error(err, te_lib)


def cstr(value, what):
    """value (a str) as NUL-terminated UTF-8 for C; an Error for anything C cannot take."""
    if not isinstance(value, str):
        raise arg_error(f"{what} must be a str, got {type(value).__name__}")
    if "\0" in value:
        raise arg_error(f"{what} contains a NUL character at index {value.index(chr(0))}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise Error("format error", f"{what} is not valid UTF-8 text: {e.reason} at index {e.start}",
                    PD_ERR_FORMAT) from None


def cpath(value, what):
    """A file system path (str, bytes or os.PathLike) for C."""
    try:
        path = os.fsencode(value)
    except TypeError:
        raise arg_error(f"{what} must be a path, got {type(value).__name__}") from None
    if b"\0" in path:
        raise arg_error(f"{what} contains a NUL character")
    return path


def quant_type(name, what):
    """The pd_weight_quant of a weight type's name (None: "none"), named by the library
    (pd_quant_type_from_name)."""
    if name is None:
        name = "none"
    if not isinstance(name, str):
        raise arg_error(f"{what} must be None or a weight type's name, got {name!r}")
    out, err = c_int(), new_error()
    check(pd.pd_quant_type_from_name(cstr(name, what), byref(out), byref(err)), err)
    return out.value


def take_string(ptr, free=None):
    """The C string at ptr (a void *) as str, then freed with free (pd_free by default)."""
    if not ptr:
        raise Error("out of memory", "the library returned no text", PD_ERR_NOMEM)
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        (free or pd.pd_free)(ptr)


def floats(ptr, n):
    """n floats from C memory: a numpy float32 array when numpy is importable, a list otherwise."""
    if np is not None:
        return np.ctypeslib.as_array(ptr, shape=(n,)).copy()
    return ptr[:n]


def int32_array(values, what):
    """A ctypes int32 array of values (a sequence of ints, numpy included)."""
    if isinstance(values, (str, bytes)):
        raise arg_error(f"{what} must be a sequence of ints, got {type(values).__name__}")
    try:
        items = [v.__index__() for v in values]
    except (AttributeError, TypeError):
        raise arg_error(f"{what} must be a sequence of ints") from None
    for i, v in enumerate(items):
        if not -2**31 <= v < 2**31:
            raise arg_error(f"{what}[{i}] = {v} is out of range", PD_ERR_RANGE)
    return (c_int32 * len(items))(*items), len(items)


def positive(value, what, lo=1, hi=2**31 - 1):
    """value as an int in [lo, hi] (the C field's range), or an Error."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise arg_error(f"{what} must be an int in [{lo}, {hi}], got {value!r}")
    return value


# ------------------------------------------------------------------ handles

def closed_error(what):
    return arg_error(f"this {what} is closed")


class Handle:
    """A C object and its free function. It is freed once, when it was closed (close(),
    a finalizer, the end of a with block) and nothing uses it: neither a call in flight
    (use()) nor a C object made from it (its parents stay alive while it is). So closing
    an object that another thread is running, or a model that an extractor still holds,
    is safe: the C memory goes when the last user is done."""

    def __init__(self, what, ptr, free, parents=()):
        self.what, self.ptr, self._free, self._parents = what, ptr, free, tuple(parents)
        self._lock = threading.Lock()
        self._users, self._closed = 0, False

    @classmethod
    def make(cls, what, free, make, parents=(), te_lib=False):
        """make(*parent pointers, err) -> pointer, with the parents held during the call and
        after it for as long as the new handle lives; an Error when make returns NULL (with
        tianchi-eval's status names for te_lib)."""
        held = []
        try:
            for p in parents:
                p.acquire()
                held.append(p)
            err = new_error()
            ptr = make(*[p.ptr for p in parents], byref(err))
            if not ptr:
                raise_error(err, te_lib)
        except BaseException:
            for p in held:
                p.release()
            raise
        return cls(what, ptr, free, parents)

    def acquire(self):
        """Count one more user (an Error when closed)."""
        with self._lock:
            if self._closed:
                raise closed_error(self.what)
            self._users += 1

    def release(self):
        """Count one user less; free the C object when closed and that was the last."""
        with self._lock:
            self._users -= 1
            ptr = self._detach()
        self._destroy(ptr)

    def _detach(self):  # under the lock: the pointer to free now, or None
        if self._closed and self._users == 0 and self.ptr:
            ptr, self.ptr = self.ptr, None
            return ptr
        return None

    def _destroy(self, ptr):
        if ptr:
            self._free(ptr)
            for p in self._parents:
                p.release()

    def close(self):
        """Mark closed; free now when unused, else when the last user is done."""
        with self._lock:
            self._closed = True
            ptr = self._detach()
        self._destroy(ptr)

    @property
    def closed(self):
        return self._closed

    @contextlib.contextmanager
    def use(self):
        """The pointer, held for the duration of a call; an Error when closed."""
        self.acquire()
        try:
            yield self.ptr
        finally:
            self.release()


class Owner:
    """Base of the public classes: close(), a with block and a finalizer free their handles
    (self._handles, a list that may grow; closed last to first)."""

    _handles = ()

    def _own(self, *handles):
        import weakref
        self._handles = list(handles)
        self._finalizer = weakref.finalize(self, Owner._close_all, self._handles)

    @staticmethod
    def _close_all(handles):
        for h in reversed(handles):
            h.close()

    def close(self):
        """Free the C objects (once nothing still uses them). Calls after this raise Error."""
        if getattr(self, "_finalizer", None):
            self._finalizer()

    @property
    def closed(self):
        """True once close() was called."""
        return not self._finalizer.alive

    def _check_open(self):
        if not self._finalizer.alive:
            raise closed_error(type(self).__name__)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
