#!/usr/bin/env python3
"""Property test: every generated spec that `fusegen check` accepts must also
generate CUDA (with and without --dims), compile with NVRTC (`fusegen warmup`,
no GPU needed) and run on the float64 reference interpreter, each with exit
status 0, no crash and no timeout.

For each seed in --seeds A:B, specgen.py writes a spec to a temporary folder
and the steps run in order; a spec that check rejects is counted and skipped.
On a failure the seed, the step, the command, its output and the spec are
printed, the spec is kept (--keep DIR), and the run exits 1 at the end.
--device runs each accepted spec on the GPU as well (`fusegen run --device
--compare`), under compute-sanitizer memcheck with --sanitizer PATH.

usage: run_property.py [--binary PATH] [--seeds A:B] [--time-budget S]
                       [--keep DIR] [--jobs J] [--no-nvrtc] [--device]
                       [--sanitizer PATH] [--timeout S] [--include-known-failures]
Exit status: 0 when every accepted spec passed (and at least one was
checked), 1 on a failure, 2 on a bad command line.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import specgen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BINARY = os.path.join(HERE, "..", "..", "build", "cli", "fusegen")


class Failure(Exception):
    def __init__(self, step, command, detail):
        super().__init__(step)
        self.step, self.command, self.detail = step, command, detail


def describe_status(rc):
    if rc is None:
        return "timed out"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run(command, timeout, env):
    """(status or None on timeout, output); a timed-out command's group is killed."""
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    except OSError as error:
        return 127, f"cannot run {command[0]}: {error}"
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out.decode("utf-8", "replace")


class Checker:
    def __init__(self, args):
        self.args = args
        self.binary = os.path.abspath(args.binary)

    def step(self, name, command, env, ok=lambda rc, out: rc == 0):
        rc, out = run(command, self.args.timeout, env)
        if rc is None or rc < 0 or not ok(rc, out):
            raise Failure(name, command, f"{describe_status(rc)}\n{out}")
        return out

    def check_spec(self, spec, work):
        """'rejected', 'passed' or raises Failure."""
        path = os.path.join(work, f"seed-{spec.seed}.fg")
        with open(path, "w") as f:
            f.write(spec.text)
        env = dict(os.environ, FUSEGEN_CACHE_DIR=os.path.join(work, "default-cache"))
        dims = ["--dims", spec.dims_arg()] if spec.dims else []
        fg = self.binary

        # check may reject (exit 1 with a diagnostic); anything else but 0 is a bug.
        rc, out = run([fg, "check", path] + dims, self.args.timeout, env)
        if rc == 1 and re.search(r"error", out):
            return "rejected", out
        if rc != 0:
            raise Failure("check", [fg, "check", path] + dims, f"{describe_status(rc)}\n{out}")

        self.step("generate", [fg, path, "-o", os.path.join(work, "sym.cu")], env)
        if dims:
            self.step("generate --dims", [fg, path, "-o", os.path.join(work, "dims.cu")] + dims, env)

        if not self.args.no_nvrtc:
            cache = os.path.join(work, "cache")
            expected = len(spec.fusions)
            summary = re.compile(rf"^{expected} compiled, 0 already cached, 0 failed$", re.M)
            out = self.step("nvrtc (warmup)", [fg, "warmup", path, "--arch", "sm_90", "--cache-dir", cache] + dims,
                            env, ok=lambda rc, out: rc == 0 and summary.search(out) is not None)
            stored = [n for n in os.listdir(cache) if n.endswith(".fgc")] if os.path.isdir(cache) else []
            if len(stored) < expected:
                raise Failure("nvrtc (warmup)", [fg, "warmup", path],
                              f"{len(stored)} cache entries stored for {expected} fusions\n{out}")

        for name, own in spec.fusions:
            own_dims = ["--dims", spec.dims_arg(own)] if own else []
            self.step("reference", [fg, "run", path, "--fusion", name, "--reference"] + own_dims, env)
            if self.args.device:
                command = [fg, "run", path, "--device", "--fusion", name, "--compare",
                           "--cache-dir", os.path.join(work, "device-cache")] + own_dims
                if self.args.sanitizer:
                    command = [self.args.sanitizer, "--tool", "memcheck", "--leak-check", "full",
                               "--error-exitcode", "1"] + command
                self.step("device (memcheck)" if self.args.sanitizer else "device", command, env)
        return "passed", ""


def parse_seeds(text):
    m = re.fullmatch(r"(\d+):(\d+)", text)
    if not m or int(m.group(1)) >= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"bad --seeds '{text}' (expected A:B with A < B, B exclusive)")
    return range(int(m.group(1)), int(m.group(2)))


def signature(failure):
    """What makes two failures the same bug: the step and the first error line,
    with names, numbers and paths blurred."""
    detail = failure.detail.splitlines()
    first = detail[0] if detail else "?"
    for pattern in (r"error:|Invalid |Assert|terminate|what\(\)", r"ERROR|Error|FAIL"):  # likeliest cause first
        lines = [l for l in detail if re.search(pattern, l) and "COMPUTE-SANITIZER" not in l
                 and "Target application" not in l and "ERROR SUMMARY: 0" not in l]
        if lines:
            first = lines[0]
            break
    first = re.sub(r"(?<!\w)/\S+", "PATH", first)
    first = re.sub(r"'[^']*'", "'_'", first)
    first = re.sub(r"\b(fusegen_|prop_)\w+", "_", first)
    first = re.sub(r"\b[a-z]+\d+\b|\b\d+\b", "#", first)
    return failure.step, first[:160]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.environ.get("FUSEGEN_BINARY", DEFAULT_BINARY),
                        help="the fusegen CLI (default: build/cli/fusegen)")
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("0:100"), help="A:B, B exclusive")
    parser.add_argument("--time-budget", type=float, default=0,
                        help="start no new seed after this many seconds (0: no limit)")
    parser.add_argument("--keep", help="folder for the specs that failed (default: a temporary one, kept)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=180, help="seconds per command")
    parser.add_argument("--no-nvrtc", action="store_true",
                        help="leave out the NVRTC step (e.g. in an instrumented build)")
    parser.add_argument("--device", action="store_true", help="also run each spec on GPU 0 with --compare")
    parser.add_argument("--sanitizer", help="compute-sanitizer to run the --device step under (memcheck)")
    parser.add_argument("--include-known-failures", action="store_true",
                        help="generate the constructs of specgen.KNOWN_FAILURES too")
    parser.add_argument("--fail-fast", action="store_true", help="stop at the first failure")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per seed")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        print(f"run_property: error: no fusegen binary at {args.binary} (--binary)", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("run_property: error: --jobs must be at least 1", file=sys.stderr)
        return 2

    root = tempfile.mkdtemp(prefix="fusegen-property-")
    # A copy of the binary, so that a rebuild during a long run changes nothing.
    snapshot = os.path.join(root, "fusegen")
    shutil.copy2(args.binary, snapshot)
    original, args.binary = os.path.abspath(args.binary), snapshot
    checker = Checker(args)
    keep = args.keep or os.path.join(root, "failed")
    start = time.monotonic()
    stop = threading.Event()
    counts = {"generated": 0, "rejected": 0, "passed": 0, "failed": 0}
    failures = {}          # signature -> [seed, ...]
    rejections = {}        # first error line -> count
    lock = threading.Lock()

    def one(seed):
        try:
            spec = specgen.generate(seed, args.include_known_failures, for_device=args.device)
        except Exception:  # a bug of the generator itself: report it like the others
            spec = specgen.Spec(seed, f"# specgen.generate({seed}) raised\n", {}, [])
            detail = traceback.format_exc()
        work = os.path.join(root, str(seed))
        os.makedirs(work)
        t0 = time.monotonic()
        try:
            if not spec.fusions:
                raise Failure("specgen", ["specgen.py", "--seed", str(seed)], detail)
            outcome, detail = checker.check_spec(spec, work)
        except Failure as failure:
            os.makedirs(keep, exist_ok=True)
            kept = os.path.join(keep, f"seed-{seed}.fg")
            with open(kept, "w") as f:
                f.write(spec.text)
            with lock:
                counts["generated"] += 1
                counts["failed"] += 1
                failures.setdefault(signature(failure), []).append(seed)
                dims = f" --dims {spec.dims_arg()}" if spec.dims else ""
                print(f"FAIL seed {seed}: {failure.step} ({kept}{dims}; again: run_property.py --seeds "
                      f"{seed}:{seed + 1}; shrink: reduce_spec.py {kept}{dims})\n"
                      f"  command: {' '.join(failure.command).replace(snapshot, original)}\n"
                      + "".join(f"  | {l}\n" for l in failure.detail.splitlines()[:40])
                      + "  spec:\n" + "".join(f"  > {l}\n" for l in spec.text.splitlines()), flush=True)
                if args.fail_fast:
                    stop.set()
            return
        finally:
            shutil.rmtree(work, ignore_errors=True)
        with lock:
            counts["generated"] += 1
            counts[outcome] += 1
            if outcome == "rejected":
                lines = [l for l in detail.splitlines() if "error:" in l]
                reason = re.sub(r"\b\d+\b", "#", lines[0].split("error:", 1)[1].strip()) if lines else "?"
                rejections[reason] = rejections.get(reason, 0) + 1
            if args.verbose:
                print(f"seed {seed}: {outcome} ({time.monotonic() - t0:.1f} s)", flush=True)

    seeds = iter(args.seeds)          # taken one at a time: a budgeted range may be huge
    last = [args.seeds.start]

    def worker():
        while not stop.is_set() and not (args.time_budget and time.monotonic() - start > args.time_budget):
            with lock:
                seed = next(seeds, None)
                if seed is None:
                    return
                last[0] = seed
            one(seed)

    threads = [threading.Thread(target=worker) for _ in range(args.jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    os.remove(snapshot)
    if not failures or args.keep:
        shutil.rmtree(root, ignore_errors=True)

    accepted = counts["passed"] + counts["failed"]
    steps = "check, generate" + ("" if args.no_nvrtc else ", NVRTC") + ", reference" + \
        (", device" + (" (memcheck)" if args.sanitizer else "") if args.device else "")
    print(f"property: {counts['generated']} specs generated (seeds {args.seeds.start} to {last[0]}), "
          f"{accepted} accepted by check, {counts['passed']} passed ({steps}), {counts['failed']} failed, "
          f"{counts['rejected']} rejected by check, {elapsed:.1f} s")
    if rejections and args.verbose:
        for reason, n in sorted(rejections.items(), key=lambda kv: -kv[1]):
            print(f"  rejected x{n}: {reason}")
    if failures:
        print(f"property: {len(failures)} distinct failures (kept specs in {keep}):")
        for (step, first), seeds in failures.items():
            print(f"  {step}: {first}  (seeds {', '.join(map(str, seeds[:10]))}{' ...' if len(seeds) > 10 else ''})")
        return 1
    if accepted == 0:
        print("property: error: no spec was accepted by check (generator or binary broken?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
