#!/bin/sh
# test_readme_targets — README.md's "Other targets" section names every target that `make help` prints, and
# `make help` prints at least the targets the README's two commands use. Fails when a target is added to the
# Makefile's help without the README (or the section goes missing).
. tests/scripts/lib.sh
# the parent make's flags (jobserver, BUILD=) must not leak into this one
targets=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make --no-print-directory -s help | sed -n 's/^make \([a-z-]*\) .*/\1/p')
section=$(sed -n '/^## Other targets/,/^## /p' README.md)
check "make help prints targets, run and test among them" sh -c \
    "echo '$targets' | grep -qx run && echo '$targets' | grep -qx test"
check "README has an Other targets section" test -n "$section"
for t in $targets; do
    check "README lists make $t" sh -c "printf '%s\n' \"\$1\" | grep -qF '\`$t\`'" sh "$section"
done
finish
