#!/usr/bin/env bash
# Installs torch for the Python package's tests (python/tests: the custom-op,
# fake-tensor and binding tests need it; they run on the CPU here).
# Into a folder of its own, not the interpreter's site-packages:
#   $FUSEGEN_TORCH_DIR (default ~/.cache/fusegen/torch-<python version>)
# Prints that folder on its last line; scripts/test.sh puts it on PYTHONPATH.
# Does nothing when the interpreter already imports torch or the folder has it.
# FUSEGEN_TORCH=0 skips it (the torch tests then skip).
# Only PyPI is reachable from CI, whose Linux torch wheel is the CUDA one
# (with its nvidia-* libraries, about 4 GB): it also runs on a machine without
# a GPU, where torch.cuda.is_available() is False.
set -euo pipefail
python=${PYTHON:-python3}
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
dir=${FUSEGEN_TORCH_DIR:-$HOME/.cache/fusegen/torch-py$version}
if [[ ${FUSEGEN_TORCH:-1} == 0 ]]; then
  echo "install-torch: FUSEGEN_TORCH=0: not installing torch" >&2
  exit 0
fi
if "$python" -c 'import torch' >/dev/null 2>&1; then
  echo "install-torch: $python already imports torch" >&2
  exit 0
fi
if PYTHONPATH=$dir "$python" -c 'import torch' >/dev/null 2>&1; then
  echo "install-torch: torch already in $dir" >&2
  echo "$dir"
  exit 0
fi
start=$SECONDS
echo "install-torch: installing torch into $dir (a few minutes, once)" >&2
rm -rf "$dir.partial"
"$python" -m pip install -q --disable-pip-version-check --no-warn-script-location \
  --target "$dir.partial" torch numpy >&2
rm -rf "$dir"
mv "$dir.partial" "$dir"
echo "install-torch: done in $((SECONDS - start)) s" >&2
echo "$dir"
