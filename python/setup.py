"""Builds libfusegen.so with CMake (target fusegen_shared of the repository
around this folder) and ships it inside the package as fusegen/_lib/.

Where torch is importable at build time (pip install --no-build-isolation), it
also builds fusegen._torchread against that torch: the C call path then reads
torch tensors through torch's C++ API (python/fusegen/_torchread.cpp).

Environment:
  FUSEGEN_TORCH_READER     0: do not build fusegen._torchread
  CMAKE_ARGS               extra configure arguments, e.g.
                           -DFUSEGEN_TEMPLATE_TEXT_PREBUILT=/path/TemplateText.h
  FUSEGEN_JOBS             parallel build jobs (default 2)
  FUSEGEN_CMAKE_BUILD_DIR  the CMake build folder (default: setuptools' build_temp);
                           reusing one makes reinstalls incremental
"""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LIBRARY = "libfusegen.so"


def fail(message):
    sys.exit("fusegen setup: error: " + message)


class BuildWithLibrary(build_py):
    """build_py, plus: configure and build fusegen_shared, copy the library into the package."""

    def run(self):
        super().run()
        library = self.build_library()
        target = os.path.join(self.build_lib, "fusegen", "_lib")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(library, os.path.join(target, LIBRARY))

    def build_library(self):
        if not os.path.isfile(os.path.join(REPO, "CMakeLists.txt")):
            fail("%s has no CMakeLists.txt: install from a fusegen checkout (pip install ./python)" % REPO)
        if shutil.which("cmake") is None:
            fail("cmake not found on PATH (CMake >= 3.22 and a C++20 compiler are needed)")
        build_temp = self.get_finalized_command("build").build_temp
        build_dir = os.path.abspath(os.environ.get("FUSEGEN_CMAKE_BUILD_DIR") or os.path.join(build_temp, "cmake"))
        configure = ["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                     "-DFUSEGEN_BUILD_TESTS=OFF", "-DFUSEGEN_WERROR=OFF"]
        if shutil.which("ninja") and not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))  # last: they override the above
        jobs = os.environ.get("FUSEGEN_JOBS", "2")
        build = ["cmake", "--build", build_dir, "--target", "fusegen_shared", "-j", jobs]
        for command in (configure, build):
            print("fusegen setup: " + " ".join(shlex.quote(c) for c in command), flush=True)
            if subprocess.call(command) != 0:
                fail("`%s` failed (see above). The library needs the CUDA toolkit (NVRTC, cuda.h); on a "
                     "machine without Clang's dev packages pass CMAKE_ARGS=-DFUSEGEN_TEMPLATE_TEXT_PREBUILT="
                     "/path/TemplateText.h" % " ".join(command[:3]))
        library = os.path.join(build_dir, "runtime", LIBRARY)
        if os.path.isfile(library):
            return library
        for root, _dirs, files in os.walk(build_dir):  # a generator that nests its outputs
            if LIBRARY in files:
                return os.path.join(root, LIBRARY)
        fail("the build finished but %s is not in %s" % (LIBRARY, build_dir))


class BinaryDistribution(Distribution):
    """The wheel carries a native library: tag it for this platform, not as pure Python."""

    def has_ext_modules(self):
        return True


# The call path's torch branch in C. Optional: without a compiler or Python's
# headers the package still works, through ctypes (fusegen/_function.py).
FASTCALL = Extension("fusegen._fastcall", sources=["fusegen/_fastcall.c"],
                     include_dirs=[os.path.join(REPO, "runtime", "include")], optional=True)


def torch_reader():
    """fusegen._torchread, built against the torch importable now, or nothing.
    Optional too: without torch, or where it fails to build, the C call path
    reads tensors through their Python accessors."""
    if os.environ.get("FUSEGEN_TORCH_READER") == "0":
        return []
    try:
        import torch
        from torch.utils import cpp_extension
    except Exception:  # not installed, or broken: nothing to build against
        return []
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [Extension("fusegen._torchread", sources=["fusegen/_torchread.cpp"], language="c++",
                      include_dirs=cpp_extension.include_paths(), library_dirs=[lib], runtime_library_dirs=[lib],
                      libraries=["c10", "torch", "torch_cpu", "torch_python"],
                      extra_compile_args=["-std=c++17", "-fvisibility=hidden", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi,
                                          '-DFUSEGEN_TORCH_VERSION="%s"' % torch.__version__],
                      optional=True)]


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution,
      ext_modules=[FASTCALL] + torch_reader())
