"""The pinned llama.cpp reference: lock, fetch, build, and adapters over llama.cpp."""
