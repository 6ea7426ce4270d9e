#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# What the tree promises about its licenses and its README, on the build
# machine (a host unit test of make check, run from the top of the tree;
# the Makefile installs this as build/unit/docs_test), in TAP:
#   - every file git tracks names its license in an SPDX-License-Identifier
#     line among its first 3 lines, but the files listed below, whose
#     format has no comments; the identifier is one that debian/copyright
#     gives the text of, and the module, library and ABI header carry
#     theirs;
#   - README.md is at most 150 lines, names every package of
#     debian/control and the virtual ratelimit-modules, and links
#     Documentation/development.md.
# Outside a git checkout the first test is skipped.
set -u

# Files whose format has no comment syntax, or that must stay as they are.
exceptions='
debian/changelog
debian/copyright
debian/source/format
python/kratelimit/py.typed
node/package.json
Documentation/ABI/testing/sysfs-kernel-ratelimit
'
# debian/changelog: dpkg-parsechangelog takes no comments.
# debian/copyright: the machine-readable license statement itself.
# debian/source/format: one line, "3.0 (native)" or the like.
# package.json: JSON, which has no comments (its "license" field says it).
# py.typed: PEP 561's marker, empty ("partial" would mean something).
# The ABI file: the kernel's Documentation/ABI format, tags only.

max_readme=150
n=0
fails=0

result()
{
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n - $2"
	elif [ "$1" = skip ]; then
		echo "ok $n - $2 # SKIP $3"
	else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}

# verdict NAME: ok unless $bad is set.
verdict()
{
	if [ "$bad" -eq 0 ]; then
		result ok "$1"
	else
		result fail "$1"
	fi
}

echo "1..7"

# The identifiers debian/copyright gives a text of (its "License:" lines),
# with the exception they name.
known=$(sed -n 's/^License: *//p' debian/copyright | sort -u)

is_exception() { printf '%s\n' "$exceptions" | grep -qxF "$1"; }

# spdx FILE: the identifier of FILE's SPDX line (first 3 lines), or nothing.
spdx()
{
	head -n 3 "$1" | sed -n 's/.*SPDX-License-Identifier: *\(.*[^ ]\) *$/\1/p' |
		sed 's/ *\(\*\/\|-->\)$//' | head -n 1
}

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	bad=0
	files=$(git ls-files)
	for f in $files; do
		[ -f "$f" ] || continue		# deleted in the work tree
		is_exception "$f" && continue
		id=$(spdx "$f")
		if [ -z "$id" ]; then
			echo "# $f: no SPDX-License-Identifier line in its first 3 lines"
			bad=1
		elif ! printf '%s\n' "$known" | grep -qxF "$id"; then
			echo "# $f: SPDX identifier \"$id\" has no License: text in debian/copyright"
			bad=1
		fi
	done
	verdict "every tracked file has a known SPDX identifier"

	bad=0
	for f in $exceptions; do
		printf '%s\n' "$files" | grep -qxF "$f" && continue
		echo "# exception $f is not a tracked file: drop it from $0"
		bad=1
	done
	verdict "every SPDX exception is a tracked file"
else
	result skip "every tracked file has a known SPDX identifier" "not a git checkout"
	result skip "every SPDX exception is a tracked file" "not a git checkout"
fi

# The license of each part, as the README states it.
bad=0
for part in "driver/*.c driver/*.h:GPL-2.0-only" \
	"lib/*.c lib/*.h python/kratelimit/*.py:LGPL-2.1-or-later" \
	"uapi/linux/*.h:GPL-2.0-only WITH Linux-syscall-note"; do
	id=${part#*:}
	for f in ${part%%:*}; do
		[ -f "$f" ] || continue
		[ "$(spdx "$f")" = "$id" ] || { echo "# $f: not $id"; bad=1; }
	done
	grep -qF "\`$id\`" README.md || { echo "# README.md does not state $id"; bad=1; }
done
verdict "module, library, ABI header and Python package carry the README's licenses"

lines=$(wc -l < README.md)
if [ "$lines" -le "$max_readme" ]; then
	result ok "README.md is $lines lines (at most $max_readme)"
else
	echo "# README.md is $lines lines: move material to Documentation/"
	result fail "README.md is $lines lines (at most $max_readme)"
fi

bad=0
pkgs=$(sed -n 's/^Package: *//p' debian/control)
[ -n "$pkgs" ] || { echo "# no Package: in debian/control"; bad=1; }
for p in $pkgs ratelimit-modules; do
	grep -qF "\`$p\`" README.md || { echo "# README.md does not name \`$p\`"; bad=1; }
done
verdict "README.md names every package of debian/control"

if grep -qF '(Documentation/development.md)' README.md &&
	[ -f Documentation/development.md ]; then
	result ok "README.md links Documentation/development.md"
else
	result fail "README.md links Documentation/development.md"
fi

# The README's install line of the optional parts names both packages.
if grep -qx 'apt-get install -y ./build/deb/ratelimit-global_\*.deb ./build/deb/python3-kratelimit_\*.deb' README.md; then
	result ok "README.md has the install line of the optional packages"
else
	result fail "README.md has the install line of the optional packages"
fi

[ "$fails" -eq 0 ]
