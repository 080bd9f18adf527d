"""Shared by the tests: paths, a fake device array, and what this machine has.

The tests import the package from this checkout (python/), so that ctest
checks the source next to the library it built; set FUSEGEN_TEST_INSTALLED=1
to test an installed package instead.
"""

import atexit
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.dirname(TESTS)
REPO = os.path.dirname(PYTHON)
SPECS = os.path.join(REPO, "specs", "kernelbench")
SCRIPTS = os.path.join(REPO, "scripts")

if not os.environ.get("FUSEGEN_TEST_INSTALLED") and sys.path[:1] != [PYTHON]:
    sys.path.insert(0, PYTHON)

import fusegen  # noqa: E402

# A cache of its own (also for the default runtimes of fusegen.load), so that the
# tests never touch the user's cache; removed at exit unless it was given.
CACHE_DIR = os.environ.get("FUSEGEN_CACHE_DIR")
if not CACHE_DIR:
    CACHE_DIR = os.environ["FUSEGEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusegen-py-tests-")
    atexit.register(shutil.rmtree, CACHE_DIR, True)


class FakeArray:
    """Exposes __cuda_array_interface__ for memory that does not exist: enough for
    every check that runs before the driver is needed (addresses are 16-byte aligned)."""

    _next = 0x7F0000000000

    _NO_STREAM = object()

    def __init__(self, shape, typestr="<f4", strides=None, readonly=False, address=None, stream=_NO_STREAM):
        if address is None:
            address = FakeArray._next
            size = 4
            for d in shape:
                size *= d
            FakeArray._next += (size + 255) // 256 * 256 + 256
        self.shape = tuple(shape)
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (address, readonly),
                                         "strides": strides, "version": 3}
        if stream is not FakeArray._NO_STREAM:  # v3's optional producer stream
            self.__cuda_array_interface__["stream"] = stream

    @property
    def address(self):
        return self.__cuda_array_interface__["data"][0]


def library_problem():
    """Why the library cannot be loaded here (None when it can)."""
    try:
        fusegen.library_path()
    except fusegen.LibraryNotFoundError as e:
        return str(e)
    return None


def requires_library(cls):
    """Skips `cls` when no library is installed and FUSEGEN_LIBRARY is unset; when it is
    set (as ctest does), a library that does not load fails the tests instead."""
    if library_problem() and not os.environ.get("FUSEGEN_LIBRARY"):
        return unittest.skip("skipped: no libfusegen.so (install the package or set FUSEGEN_LIBRARY)")(cls)
    return cls


NO_TORCH = "skipped: no torch (scripts/install-torch.sh installs it)"
NO_CLI = "skipped: no fusegen tool (set FUSEGEN_CLI or build build/cli/fusegen)"


def import_optional(*names):
    """The modules `names` (torch and its parts), or Nones when one is missing;
    with FUSEGEN_REQUIRE_TORCH=1 (scripts/test.sh sets it) a missing one is an
    error instead of a skip."""
    try:
        return tuple(importlib.import_module(name) for name in names)
    except ImportError:
        if os.environ.get("FUSEGEN_REQUIRE_TORCH") == "1":
            raise
        return (None,) * len(names)


_torch_cuda = None


def torch_with_cuda():
    """torch, if it imports and sees a CUDA device; else None."""
    global _torch_cuda
    if _torch_cuda is None:
        try:
            import torch
            _torch_cuda = torch if torch.cuda.is_available() else False
        except ImportError:
            _torch_cuda = False
    return _torch_cuda or None


def torch_fp32_strict(torch):
    """PyTorch's matmuls and convolutions in full fp32 (no TF32), as the strict
    comparisons need."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def has_driver(runtime):
    """Whether `runtime` can open its device here."""
    try:
        runtime.device_info()
        return True
    except fusegen.NoDriverError:
        return False


def fusegen_cli():
    """The fusegen command-line tool: $FUSEGEN_CLI (ctest sets it), else build/cli/fusegen of
    this checkout, else one on PATH; None when there is none."""
    for candidate in (os.environ.get("FUSEGEN_CLI"), os.path.join(REPO, "build", "cli", "fusegen")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("fusegen")


def spec(shapes, chain):
    """Path of a KernelBench spec: shapes 'v0.1' or 'small', chain '62', '75', '39' or '85'."""
    folder = SPECS if shapes == "v0.1" else os.path.join(SPECS, "small")
    for name in os.listdir(folder):
        if name.startswith(chain + "_") and name.endswith(".fg"):
            return os.path.join(folder, name)
    raise FileNotFoundError("no spec for chain %s in %s" % (chain, folder))


def run_fake_driver_child(test, child, fastcall):
    """Runs the script `child` in a new interpreter against the fake driver of the
    runtime tests (FUSEGEN_FAKE_CUDA; skips `test` without it), with FUSEGEN_FASTCALL
    set to `fastcall` ('0': the ctypes path); returns the JSON of its last line."""
    fake = os.environ.get("FUSEGEN_FAKE_CUDA")
    if not fake:
        test.skipTest("skipped: FUSEGEN_FAKE_CUDA (the fake driver of the runtime tests) is not set")
    env = dict(os.environ, FUSEGEN_FASTCALL=fastcall)
    done = subprocess.run([sys.executable, "-c", child, fake, PYTHON, CACHE_DIR], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    test.assertEqual(done.returncode, 0, done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def built_fastcall(test):
    """The C call path that ctest built (FUSEGEN_FASTCALL); skips `test` without it."""
    fastcall = os.environ.get("FUSEGEN_FASTCALL")
    if not fastcall or fastcall == "0":
        test.skipTest("skipped: FUSEGEN_FASTCALL does not name the built C call path")
    return fastcall
