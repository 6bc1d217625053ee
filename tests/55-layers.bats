#!/usr/bin/env bats
# lib/ in layers (lib/README.md): each folder includes only the layers
# below it, and the library neither prints nor exits.

load test_helper

# allowed FOLDER: the lib/ folders FOLDER may include (itself included).
allowed() {
    case "$1" in
        common) echo "common" ;;
        model) echo "model common" ;;
        convert) echo "convert model common" ;;
        layout) echo "layout model common" ;;
        score) echo "score layout model common" ;;
        score/x86) echo "score/x86 score layout model common" ;;
        score/cuda) echo "score/cuda score layout model common" ;;
        eval) echo "eval common" ;;
        open) echo "open common" ;;
        *) return 1 ;;
    esac
}

@test "every lib/ folder includes only the layers below it" {
    local f dir inc target ok bad=0
    while IFS= read -r f; do
        dir=${f#"$QS_ROOT"/lib/}
        dir=${dir%/*}
        allowed "$dir" >/dev/null || { echo "$f: folder $dir is not in lib/README.md's table"; bad=1; continue; }
        while IFS= read -r inc; do
            [ "$inc" = qs.h ] && continue
            target=${inc%/*}
            [ "$target" = "$inc" ] && { echo "$f: include \"$inc\" is not written from lib/"; bad=1; continue; }
            ok=0
            for a in $(allowed "$dir"); do [ "$target" = "$a" ] && ok=1; done
            [ $ok = 1 ] || { echo "$f: $dir includes $inc (an upward or sideways edge)"; bad=1; }
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
    done < <(find "$QS_ROOT/lib" -name '*.[ch]' -o -name '*.cu')
    [ $bad = 0 ]
}

@test "the library neither prints nor exits" {
    run grep -rnE '\b(printf|fprintf|puts|fputs|perror|exit|abort|_exit)\s*\(' "$QS_ROOT/lib" --include='*.c' --include='*.h' --include='*.cu'
    # snprintf/vsnprintf into buffers are fine; the pattern's \b keeps them out
    [ -z "$output" ] || { echo "$output"; return 1; }
}
