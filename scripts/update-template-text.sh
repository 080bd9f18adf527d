#!/usr/bin/env bash
# Regenerates the committed template text generated/fusegen/TemplateText.h
# (which builds without Clang's development files use, e.g. pip install
# ./python) with the template tool of BUILD_DIR, which checks the hooks. Run
# it after changing templates/, the hook headers or the tool (the ctest
# template_text_committed fails until then), and commit the result.
# Usage: scripts/update-template-text.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
if ! cmake --build "$build" --target fusegen_template_text_header >&2; then
  echo "update-template-text: no template tool in $build: it needs a build configured with Clang 14's" \
    "development files (scripts/install-deps.sh, then scripts/build.sh)" >&2
  exit 1
fi
cp "$build/generated/fusegen/TemplateText.h" "$root/generated/fusegen/TemplateText.h"
echo "update-template-text: $root/generated/fusegen/TemplateText.h updated; commit it"
