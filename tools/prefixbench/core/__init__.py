"""The bottom layer: what every other layer may use and that uses nothing of the library.

``errors`` (one ``InputError`` that names the field), ``files`` (atomic writes, strict JSON, line-numbered JSONL),
``paths`` (the repository, the cache folder, default inputs and outputs), ``provenance`` (clock, machine,
libraries, GPU, git), ``processes`` (killing process trees), ``progress`` (progress bars), ``usage`` (the one-line
argparse error every command gives), ``sections`` (an optional object read from outside JSON), ``records`` (the
result schemas and their loaders) and the records the layers build and the reports read back: ``live_records``
(counter delta, evidence, prediction, hit rates), ``request_rows`` (one request's row), ``group_records`` (a G0 /
G1 group), ``paired_records`` (the paired summary), ``interval_records`` (the bootstrap and paired intervals),
``sweep_records`` (a load sweep's points and headline), ``replica_records`` (each replica's row, the load balance,
a routing comparison), ``attribution_records`` (why each request hit what it did), ``evidence_records``,
``kv_event_records`` and ``timeline_records`` (which sources agree with a prediction, the KV events block by block,
the replay of overlapping requests) and ``live_results`` (a live command's result, as its run fills it in and as its
report loads it back).
"""
