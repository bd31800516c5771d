"""vLLM's own scheduler run in-process as the reference for the engine model, and the conformance suite.

``cases`` makes seeded workloads per mode (sequential, resets, chunked prefill, async scheduling, staggered
concurrent arrivals); ``vllm_core`` drives the installed vLLM's ``Scheduler`` and KV cache manager over one case
with a fake model runner (no weights, no server); ``conformance`` runs the engine model on the same case, compares
every request's hit, shrinks a failure to a minimal case and writes the record the engine model's
``KNOWN_RULES`` cite. Only ``vllm_core`` imports vLLM, and only when a case is run.
"""
