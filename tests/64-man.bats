#!/usr/bin/env bats
# The manual pages (man/*.1) against the tools: every option that a tool's
# --help names is described in its page, every option the page describes is
# in --help, and man renders each page without a warning.

load test_helper

TOOLS="qs-convert qs-compile qs-score qs-eval qs-blocktune"

# opts_help TOOL: the options --help names (-x and --long-name), one a line.
opts_help() {
    "$1" --help | grep -oE '(^|[^a-zA-Z0-9_-])--?[a-zA-Z][a-zA-Z0-9-]*' |
        sed -E 's/^[^-]*//' | sort -u
}

# page_text PAGE: the roff source with hyphen escapes and font changes undone.
page_text() {
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1"
}

# opts_page PAGE: the options the OPTIONS section describes (its .TP tags).
opts_page() {
    page_text "$1" | awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 }
                          on && tp { print; tp = 0 } on && /^\.TP/ { tp = 1 }' |
        grep -oE '(^|[^a-zA-Z0-9_-])--?[a-zA-Z][a-zA-Z0-9-]*' | sed -E 's/^[^-]*//' | sort -u
}

# check_page TOOL PAGE: say what differs between TOOL --help and PAGE; fails
# when anything does.
check_page() {
    local t="$1" page="$2" o bad=0
    [ "$(opts_help "$t" | wc -l)" -ge 3 ] || { echo "$t: no options found in --help"; bad=1; }
    for o in $(opts_help "$t"); do
        page_text "$page" | grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|\$)" ||
            { echo "$t: $o is in --help but not in its page"; bad=1; }
    done
    [ "$(opts_page "$page" | wc -l)" -ge 3 ] || { echo "$t: no options found in the page"; bad=1; }
    for o in $(opts_page "$page"); do
        opts_help "$t" | grep -qx -- "$o" ||
            { echo "$t: its page describes $o, which --help does not name"; bad=1; }
    done
    grep -q "^\.TH $(echo "$t" | tr a-z A-Z | sed 's/-/\\\\-/') 1 " "$page" ||
        { echo "$t: the page's .TH line does not name it"; bad=1; }
    return $bad
}

@test "every option of each tool's --help is in its page, and every option of the page in --help" {
    local t bad=0
    for t in $TOOLS; do
        [ -f "$QS_ROOT/man/$t.1" ] || { echo "missing man/$t.1"; bad=1; continue; }
        check_page "$t" "$QS_ROOT/man/$t.1" || bad=1
    done
    [ $bad = 0 ]
}

@test "man renders every page without a warning" {
    command -v man > /dev/null || skip "man (Debian's man-db) is not installed"
    command -v groff > /dev/null || skip "groff (Debian's groff-base) is not installed"
    local t out
    for t in $TOOLS; do
        out=$(MANWIDTH=80 man --warnings -l "$QS_ROOT/man/$t.1" 2>&1 > /dev/null)
        [ -z "$out" ] || { echo "man/$t.1:"; echo "$out"; return 1; }
        MANWIDTH=80 man -l "$QS_ROOT/man/$t.1" 2> /dev/null | grep -q "^NAME" ||
            { echo "man/$t.1 renders without a NAME section"; return 1; }
    done
}

@test "the option check catches a missing option and a stale one (it can fail)" {
    sed 's/\\-\\-features//g' "$QS_ROOT/man/qs-score.1" > "$BATS_TEST_TMPDIR/qs-score.1"
    run check_page qs-score "$BATS_TEST_TMPDIR/qs-score.1"
    assert_failure
    assert_output "qs-score: --features is in --help but not in its page"
    sed 's/^\.B \\-\\-transform$/.B \\-\\-transmogrify/' "$QS_ROOT/man/qs-score.1" > "$BATS_TEST_TMPDIR/qs-score.1"
    run check_page qs-score "$BATS_TEST_TMPDIR/qs-score.1"
    assert_failure
    assert_line "qs-score: its page describes --transmogrify, which --help does not name"
}

@test "docs: every relative link of the Markdown files resolves, every code fence is closed, the README is at most 300 lines (scripts/check-docs.sh)" {
    run "$QS_ROOT/scripts/check-docs.sh"
    assert_success
    assert_output ""
    # and it catches a broken link
    local t="$BATS_TEST_TMPDIR/x.md"
    printf 'see [the page](no/such/page.md) and [a site](https://example.org/x)\n' > "$t"
    run "$QS_ROOT/scripts/check-docs.sh" "$t"
    assert_failure 1
    assert_output "$t: no/such/page.md"
    # and a code fence left open
    printf '# x\n\n```\ncode\n```\n\ntext\n\n```\nmore\n' > "$t"
    run "$QS_ROOT/scripts/check-docs.sh" "$t"
    assert_failure 1
    assert_output "$t: a code fence is not closed"
}
