#!/usr/bin/env bash
# Fails on a relative link in the project's Markdown files that points to no
# file (ctest doc_links). usage: scripts/check-doc-links.sh [ROOT]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files '*.md')
else
  files=$(find . -name '*.md' -not -path './build*' -not -path './.git/*')
fi
bad=0
checked=0
for f in $files; do
  dir=$(dirname "$f")
  # [text](target) with a relative target; anchors (#...) and URLs are left out.
  for link in $(grep -oE '\]\([^)#[:space:]]+' "$f" | sed 's/^](//' | grep -vE '^[a-z]+:'); do
    checked=$((checked + 1))
    [[ -e $dir/$link ]] || { echo "$f: broken link: $link"; bad=1; }
  done
done
echo "check-doc-links: $checked relative links checked"
exit $bad
