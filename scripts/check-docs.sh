#!/usr/bin/env bash
# check-docs.sh: every relative link of the project's Markdown files resolves
# (a file or folder of the checkout; an anchor is not checked), every code
# fence (```) is closed, and the README stays a door (at most 300 lines).
# Prints each broken link as FILE: LINK, a file whose last fence is left
# open as FILE: a code fence is not closed, and exits 1 when there is one.
#
#   scripts/check-docs.sh [FILE.md...]     (default: README.md, doc/, python/,
#                                           bench/, tests/, format/, fuzz/)
set -u -o pipefail
cd "$(dirname "$0")/.."
files=("$@")
if [ ${#files[@]} = 0 ]; then
    mapfile -t files < <(find README.md doc python bench tests format fuzz -name '*.md' \
        -not -path '*/corpus/*' -not -path 'python/build/*' | sort)
fi
bad=0
for f in "${files[@]}"; do
    # [text](target): targets without a scheme, the anchor cut off
    while IFS= read -r link; do
        t=${link%%#*}
        [ -n "$t" ] || continue
        case "$t" in *://* | mailto:*) continue ;; esac
        [ -e "$(dirname "$f")/$t" ] || { echo "$f: $link"; bad=1; }
    done < <(grep -o '\]([^)]*)' "$f" | sed 's/^](//; s/)$//; s/ .*//')
    # an odd number of fences: the text after the last one reads as code
    [ $(($(grep -c '^ *```' "$f") % 2)) = 0 ] || { echo "$f: a code fence is not closed"; bad=1; }
done
n=$(wc -l < README.md)
[ "$n" -le 300 ] || { echo "README.md: $n lines (at most 300)"; bad=1; }
exit "$bad"
