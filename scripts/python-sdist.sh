#!/usr/bin/env bash
# Builds the Python package's sdist (python/pyproject.toml) into OUT_DIR: the
# package and the C++ sources (fusegen-src/), with the committed template text
# (generated/fusegen/TemplateText.h), so that a wheel builds from it without
# Clang's development files. BUILD_DIR's template tool checks that copy first.
# Usage: scripts/python-sdist.sh BUILD_DIR OUT_DIR   (prints the sdist's path)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: python-sdist.sh BUILD_DIR OUT_DIR}
out=$(mkdir -p "${2:?usage: python-sdist.sh BUILD_DIR OUT_DIR}" && cd "$2" && pwd)
python=${PYTHON:-python3}

# The committed header, current with the templates (the tool checks their hooks).
cmake --build "$build" --target fusegen_template_text_header >&2
if ! cmp -s "$build/generated/fusegen/TemplateText.h" "$root/generated/fusegen/TemplateText.h"; then
  echo "python-sdist: generated/fusegen/TemplateText.h is stale: run scripts/update-template-text.sh $build" >&2
  exit 1
fi

# The PEP 517 backend, from a virtual environment of its own if this Python
# lacks it.
if ! "$python" -c 'import scikit_build_core' 2>/dev/null; then
  venv=$(mktemp -d "${TMPDIR:-/tmp}/fusegen-sdist.XXXXXX")
  trap 'rm -rf "$venv"' EXIT
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet "scikit-build-core>=1.0" >&2
  python=$venv/bin/python
fi
cd "$root/python"
"$python" -c 'import sys; from scikit_build_core.build import build_sdist; print(sys.argv[1] + "/" + build_sdist(sys.argv[1]))' "$out"
