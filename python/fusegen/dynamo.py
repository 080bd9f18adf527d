"""`import fusegen.dynamo` registers the torch.compile backend "fusegen":

    import fusegen.dynamo
    compiled = torch.compile(model, backend="fusegen")
    with torch.no_grad():
        y = compiled(x)

An installed package registers it without the import (the torch_dynamo_backends
entry point). fusegen.dynamo.backend(precision=..., fallback=...) makes one with
options; see docs/python.md and _dynamo_backend.py."""

from ._dynamo_backend import backend, compiled_graphs, fusable_runs, fusegen_backend, partition_graph, register, spec_of

register("fusegen")

__all__ = ["backend", "compiled_graphs", "fusable_runs", "fusegen_backend", "partition_graph", "register", "spec_of"]
