"""pocketdec from Python: the C library (libpocketdec) through ctypes.

    import pocketdec
    model = pocketdec.Model("models/tianchi")                 # base/, adapter/ and head/ of a bundle
    ids = model.tokenizer.encode("物流很快")
    model.logits(ids), model.hidden(ids)                       # numpy arrays (lists without numpy)
    ex = pocketdec.Extractor(model, "schemas/tianchi-makeup.yaml")
    ex.extract("物流很快，包装也很好")                          # [{"aspect": ..., "opinion": ..., ...}]
    d = pocketdec.Decider(pocketdec.Model("models/tianchi-gen"))
    d.decide("物流很快", "属性：物流；观点：很快", ["物流/正面", "物流/负面"])
    pocketdec.tianchi_eval.score("dev_labels.csv", "Result.csv")["overall"]["f1"]
    pocketdec.summarize("records.jsonl", model="models/tianchi")["cells"]  # pandas DataFrames

Every failure raises pocketdec.Error (.status, .message). Objects free their C memory on
close(), at the end of a with block, or when collected. A Model is shared by threads;
forward passes release the GIL.
"""

from . import tianchi_eval
from ._lib import PD_PATH as library_path
from ._lib import Error
from .decide import Decider, Decision
from .extract import Extractor, Record
from .model import Model, Tokenizer
from .summary import summarize

__version__ = "0.1.0"


def __getattr__(name):
    """pocketdec.dask (extraction over a Dask cluster) is imported on first use: the package
    does not need dask."""
    if name == "dask":
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Model", "Tokenizer", "Decider", "Decision", "Extractor", "Record", "Error", "tianchi_eval", "library_path",
           "summarize"]
