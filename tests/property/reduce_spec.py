#!/usr/bin/env python3
"""Shrinks a spec that fails the property test to a small reproducer.

Deletes lines of the spec (declarations, statements, outputs) and splits
`output h = expr` into `h = expr`, one change at a time, keeping a change
while the spec still fails at the same step with the same error (as
run_property.signature() sees it), until no change helps.

usage: reduce_spec.py SPEC [--dims N=3] [--binary PATH] [--no-nvrtc] [-o OUT]
"""
import argparse
import os
import re
import sys
import tempfile

import run_property
import specgen


def outcome(checker, text, dims, fusions):
    """The failure signature of this text, or None if it passes or is rejected."""
    spec = specgen.Spec(0, text, dims, fusions)
    with tempfile.TemporaryDirectory(prefix="fusegen-reduce-") as work:
        try:
            checker.check_spec(spec, work)
        except run_property.Failure as failure:
            return run_property.signature(failure)
    return None


def candidates(lines):
    """Each one-line edit: drop a body line, or keep `output h = e` as `h = e`."""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("fusion") or stripped in ("}", "") or stripped.startswith("#"):
            continue
        yield lines[:i] + lines[i + 1:]
        if stripped.startswith("output ") and "=" in stripped:
            yield lines[:i] + [line.replace("output ", "", 1)] + lines[i + 1:]
        # `h = op(a, ...)` -> `h = relu(a)`: keeps the names defined, drops the op.
        m = re.fullmatch(r"(output )?(\w+) = (?!relu\()\w+\(\s*(\w+).*", stripped)
        if m:
            yield lines[:i] + [f"  {m.group(1) or ''}{m.group(2)} = relu({m.group(3)})"] + lines[i + 1:]
        parts = re.split(r";\s*|\s{2,}(?=\w+ =|output )", stripped)
        if len(parts) > 1:                # statements sharing a line: one a line
            yield lines[:i] + ["  " + p for p in parts] + lines[i + 1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec")
    parser.add_argument("--dims", default="", help="N=3,M=5 as for fusegen")
    parser.add_argument("--binary", default=run_property.DEFAULT_BINARY)
    parser.add_argument("--no-nvrtc", action="store_true")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("-o", "--output", help="write the reduced spec here (default: print it)")
    args = parser.parse_args()
    args.device, args.sanitizer = False, None
    dims = dict((k, int(v)) for k, v in (item.split("=") for item in args.dims.split(",") if item))
    text = open(args.spec).read()
    names = re.findall(r"^fusion (\w+)", text, re.M)
    checker = run_property.Checker(args)

    def fusions_of(t):
        used = {s for s in dims if re.search(rf"\b{s}\b", t)}
        return [(n, {s: dims[s] for s in used}) for n in re.findall(r"^fusion (\w+)", t, re.M)]

    def dims_of(t):
        return {s: v for s, v in dims.items() if re.search(rf"\b{s}\b", t)}

    target = outcome(checker, text, dims_of(text), fusions_of(text))
    if target is None:
        print(f"reduce_spec: {args.spec} does not fail", file=sys.stderr)
        return 1
    print(f"reduce_spec: failure {target}", file=sys.stderr)
    lines = text.splitlines()
    changed = True
    while changed:
        changed = False
        for edit in candidates(lines):
            t = "\n".join(edit) + "\n"
            if not fusions_of(t):
                continue
            if outcome(checker, t, dims_of(t), fusions_of(t)) == target:
                lines, changed = edit, True
                break
    result = "\n".join(lines) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(result)
    print(result, end="")
    print(f"reduce_spec: dims {','.join(f'{k}={v}' for k, v in sorted(dims_of(result).items())) or 'none'}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
