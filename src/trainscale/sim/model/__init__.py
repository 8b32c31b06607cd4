"""The *model*: what is computed — shapes, parameters, FLOPs and memory (Calculon's split)."""
