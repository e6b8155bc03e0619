"""Extractor.extract_frame: a pandas DataFrame of reviews in, a DataFrame of records out (one row a
record), for people whose reviews already live in pandas. The records are Extractor.extract_many's;
this only lays them out. pandas is optional: without it the call raises ImportError saying so."""

from . import _lib


def _pandas(what):
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{what} needs pandas (Debian: apt-get install python3-pandas; "
                          "else pip install pandas)") from None
    return pandas


def record_columns(fields):
    """The columns a record adds: every field, each field's span (FIELD_start, FIELD_end: character
    offsets, end exclusive; <NA> where the value is not placed in the text), each field's probability
    (FIELD_prob) and the pairing's (link_prob), the record's confidence."""
    return ([*fields] + [f"{f}_{e}" for f in fields for e in ("start", "end")] + [f"{f}_prob" for f in fields] +
            ["link_prob", "confidence"])


def extract_frame(ex, df, text_column, id_column=None, parallel=1, keep_empty=True):
    """Extractor.extract_frame: see there."""
    pandas = _pandas("Extractor.extract_frame")
    if not isinstance(df, pandas.DataFrame):
        raise _lib.arg_error(f"extract_frame takes a pandas DataFrame, got {type(df).__name__}")
    for what, col in (("text_column", text_column), ("id_column", id_column)):
        if (col is not None or what == "text_column") and col not in df.columns:
            raise _lib.arg_error(f"{what} {col!r} is not a column of the frame (its columns: "
                                 f"{', '.join(map(str, df.columns))})")
    id_name = id_column if id_column is not None else "id"
    added = ["record"] + record_columns(ex.fields)
    kept = [c for c in df.columns if c not in (text_column, id_column)]
    clash = [c for c in kept + [text_column] if c in added or (id_column is None and c == "id")]
    if clash:
        raise _lib.arg_error(f"the frame's column(s) {', '.join(map(str, clash))} would be overwritten by the "
                             f"records' columns ({', '.join(added)}): rename them first")
    texts = df[text_column].tolist()
    for pos, t in enumerate(texts):
        if not isinstance(t, str):
            raise _lib.arg_error(f"row {df.index[pos]!r}: {text_column!r} must be a str, got {t!r}")
    ids = df[id_column].tolist() if id_column is not None else list(df.index)
    rows = []
    for pos, records in enumerate(ex.extract_many(texts, parallel)):
        extra = {c: df[c].iat[pos] for c in kept}
        base = {id_name: ids[pos], text_column: texts[pos]}
        if not records and keep_empty:
            rows.append({**base, "record": pandas.NA, **extra})
        for k, r in enumerate(records):
            row = {**base, "record": k, **{f: r[f] for f in ex.fields}}
            for f in ex.fields:
                s, e = r.spans.get(f, (pandas.NA, pandas.NA))
                row[f + "_start"], row[f + "_end"] = s, e
                row[f + "_prob"] = r.probs[f]
            row["link_prob"], row["confidence"] = r.probs["link"], r.confidence
            rows.append({**row, **extra})
    out = pandas.DataFrame(rows, columns=[id_name, text_column] + added + kept)
    ints = ["record"] + [f"{f}_{e}" for f in ex.fields for e in ("start", "end")]
    return out.astype({c: "Int64" for c in ints})
