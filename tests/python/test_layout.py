"""Every ctypes struct of the package has the C compiler's size and field offsets
(tests/python/struct_layout.c prints them): a field added, moved or retyped on one side
only fails here, not in a user's process."""

import json
import os
import subprocess

import helpers  # noqa: F401  (points the package at this build)
from pocketdec import _lib

MIRRORS = {
    "pd_error": _lib.PdError, "te_error": _lib.PdError, "pd_config": _lib.Config, "pd_model_params": _lib.ModelParams,
    "pd_bundle_params": _lib.BundleParams,
    "pd_context_params": _lib.ContextParams, "pd_batch": _lib.Batch, "pd_decider_params": _lib.DeciderParams,
    "pd_decision": _lib.Decision, "pd_sampler_params": _lib.SamplerParams, "pd_extract_params": _lib.ExtractParams,
    "pd_record": _lib.Record, "pd_pipeline_params": _lib.PipelineParams, "pd_output_params": _lib.OutputParams, "pd_extraction": _lib.Extraction,
    "pd_extraction_stats": _lib.ExtractionStats, "pd_reviews_params": _lib.ReviewsParams, "pd_review": _lib.Review,
    "pd_summarize_params": _lib.SummarizeParams,
    "te_quad": _lib.Quad,
}


def c_layout():
    exe = os.path.join(helpers.BUILD, "tests", "python", "struct_layout")
    return json.loads(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)


def test_every_mirrored_struct_is_laid_out_as_in_c():
    c = c_layout()
    assert set(c) == set(MIRRORS)
    for name, struct in MIRRORS.items():
        got = {f[0]: getattr(struct, f[0]).offset for f in struct._fields_}
        assert got == c[name]["fields"], name
        assert _lib.ctypes.sizeof(struct) == c[name]["size"], name


def test_every_ctypes_struct_is_checked():
    structs = {v for v in vars(_lib).values() if isinstance(v, type) and issubclass(v, _lib.ctypes.Structure)
               and v is not _lib.ctypes.Structure}
    assert structs == set(MIRRORS.values())
