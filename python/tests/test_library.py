"""Finding libfusegen.so: clear errors when it is missing or unusable (no library needed)."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import support  # noqa: F401  (puts the package on sys.path)

PROBE = ("import fusegen\n"
         "try:\n"
         "    fusegen.load_string('')\n"
         "except fusegen.LibraryNotFoundError as e:\n"
         "    assert isinstance(e, ImportError) and isinstance(e, fusegen.Error)\n"
         "    print('LibraryNotFoundError:', e)\n")


def probe(library):
    env = dict(os.environ, FUSEGEN_LIBRARY=library, PYTHONPATH=support.PYTHON)
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    return result.returncode, result.stdout


class LibraryTest(unittest.TestCase):
    def test_import_needs_no_library(self):
        env = dict(os.environ, FUSEGEN_LIBRARY="/nonexistent/libfusegen.so", PYTHONPATH=support.PYTHON)
        code = "import fusegen, sys; print(fusegen.__version__, 'torch' in sys.modules)"
        out = subprocess.check_output([sys.executable, "-c", code], env=env, universal_newlines=True)
        with open(os.path.join(os.path.dirname(support.PYTHON), "CMakeLists.txt")) as f:
            version = re.search(r"project\(fusegen VERSION ([0-9.]+)", f.read()).group(1)  # the one place
        self.assertEqual(out.split(), [version, "False"])  # and torch is not imported either

    def test_missing_library_names_the_path(self):
        rc, out = probe("/nonexistent/libfusegen.so")
        self.assertEqual(rc, 0, out)
        self.assertIn("LibraryNotFoundError: fusegen: FUSEGEN_LIBRARY=/nonexistent/libfusegen.so: no such file", out)

    def test_not_a_library(self):
        with tempfile.NamedTemporaryFile(suffix=".so") as f:
            f.write(b"not an ELF file")
            f.flush()
            rc, out = probe(f.name)
        self.assertEqual(rc, 0, out)
        self.assertIn("fusegen: cannot load " + f.name, out)

    def test_directory_means_the_library_inside(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out = probe(d)
        self.assertEqual(rc, 0, out)
        self.assertIn(os.path.join(d, "libfusegen.so") + ": no such file", out)


if __name__ == "__main__":
    unittest.main()
