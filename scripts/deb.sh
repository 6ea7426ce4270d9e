#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make deb: the Debian packages (debian/) in build/deb, built with
# dpkg-buildpackage in a copy of the tree (so that its clean step leaves
# this tree's build/ alone), then checked by lintian when it is installed
# (a developer's check, not a build dependency): any error fails, warnings
# are listed (build/deb/lintian.txt). LINTIAN=1 (make check-host, CI)
# makes lintian required.
#   ratelimit-dkms, libratelimit1, libratelimit-dev, ratelimit-tools,
#   ratelimit-global, python3-kratelimit
set -eu

out=build/deb
version=$(sed -n 's/^VERSION := //p' Makefile)
deb_version=$(dpkg-parsechangelog -S Version)
[ "$version" = "$deb_version" ] || {
	echo "deb: Makefile's VERSION $version is not debian/changelog's $deb_version" >&2
	exit 1
}
src=$out/ratelimit-$version

rm -rf "$out"
mkdir -p "$src"
# The tree's files: git's list (committed or not, minus what it ignores)
# in a checkout, else all but build outputs.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# shellcheck disable=SC2016 # the inner shell's $f
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\n" "$f"; done' sh |
		tar -cf - -T - | tar -xf - -C "$src"
else
	tar -cf - --exclude=./build --exclude='*.o' --exclude='*.ko' \
		--exclude='.*.cmd' . | tar -xf - -C "$src"
fi

echo "deb: dpkg-buildpackage in $src"
(cd "$src" && dpkg-buildpackage -b -us -uc) > "$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log"
	echo "deb: dpkg-buildpackage failed (log in $out/build.log)" >&2
	exit 1
}
ls -1 "$out"/*.deb

if ! command -v lintian >/dev/null; then
	if [ "${LINTIAN:-}" = 1 ]; then
		echo "deb: LINTIAN=1 but lintian is not installed (scripts/deps.sh deb)" >&2
		exit 1
	fi
	echo "deb: lintian is not installed: packages not checked (LINTIAN=1 requires it)"
	exit 0
fi
changes=$(ls "$out"/ratelimit_*.changes)
rc=0
lintian --fail-on error --display-info --pedantic "$changes" \
	> "$out/lintian.txt" 2>&1 || rc=$?
if [ -s "$out/lintian.txt" ]; then
	echo "deb: lintian says:"
	sed 's/^/  /' "$out/lintian.txt"
else
	echo "deb: lintian has nothing to say"
fi
[ "$rc" -eq 0 ] || { echo "deb: lintian found errors" >&2; exit 1; }
