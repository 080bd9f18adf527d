"""Builds and loads launch_floor.c: the least a Python call that launches one
kernel can cost (a C function given the stream, one cuLaunchKernel of an empty
kernel). The host overhead rows put it beside fusegen's call, so a host whose
speed moves shows in both. Needs a C compiler (`cc`, or $CC) and Python's
headers; load() returns None with the reason printed when they are missing.
"""

import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_floor.c")


def load(log=print):
    """The launch_floor module with its kernel loaded into the current context
    (torch.cuda must be initialized), or None (why is logged)."""
    build_dir = tempfile.mkdtemp(prefix="fusegen-launch-floor-")
    target = os.path.join(build_dir, "launch_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    command = [os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"],
               SOURCE, "-o", target, "-ldl"]
    try:
        built = subprocess.run(command, capture_output=True, text=True)
    except OSError as e:
        log("  launch floor: not measured (%s)" % e)
        return None
    if built.returncode != 0:
        log("  launch floor: not measured (%s failed: %s)" % (command[0], built.stderr.strip()[-300:]))
        return None
    spec = importlib.util.spec_from_file_location("launch_floor", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        module.init()
    except RuntimeError as e:
        log("  launch floor: not measured (%s)" % e)
        return None
    return module


if __name__ == "__main__":
    sys.exit("import this from the benchmarks")
