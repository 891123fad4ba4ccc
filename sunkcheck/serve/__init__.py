"""`sunkcheck serve`: the check's diagnosis kept current from watches instead of re-read on every run.

    watch (list+watch per source) -> cache (slimmed objects -> the Snapshot a check reads) -> loop (debounced:
    pipeline.diagnose, only the affected targets re-judged) -> http (what the loop last published)

No second engine: the cache is one more way to make the Snapshot `check` diagnoses.
"""
