#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Install the Debian packages the build and the QEMU test rig need.
# Idempotent and non-interactive; a quick no-op when all are present.
#   scripts/deps.sh [KERNEL...]
# KERNEL is a guest kernel of the rig (default 6.1):
#   6.1      Debian's kernel (linux-image-amd64)
#   6.12     Debian's 6.12 kernel (linux-image-6.12-amd64)
#   6.12-rt  its PREEMPT_RT flavour (linux-image-6.12-rt-amd64)
#   debug    what scripts/kdebug.sh needs to build the debug kernel, and
#            the source it builds (linux-source-6.12)
#   bench    gnuplot-nox, redis-tools, python3-limits and python3-redis,
#            for make bench
#   deb      debian/control's Build-Depends and lintian, for make
#            check-host and CI (with the rig's packages above)
#   build-dep  debian/control's Build-Depends alone, with build-essential
#            (apt-get build-dep ./, no Recommends): what make deb installs
#            on a user's machine, and nothing else
#   host     mmdebstrap and qemu-img, for make check-host's guest image
#   global   redis-server, libhiredis-dev, libssl-dev, openssl and
#            libsystemd-dev, for rlsyncd and make check-global-redis (part
#            of make check; installing redis-server also starts Debian's
#            own redis service where systemd runs; the test starts its own)
#   matrix   6.1 6.12 6.12-rt;  all  matrix and debug
#   fresh    mmdebstrap and git alone, for make check-fresh (whose root
#            installs the rest for itself)
#   node     what make node builds the Node.js addon with, and nothing of
#            the rig: a C and C++ compiler, make and python3 (node-gyp's),
#            and Debian's nodejs, node-gyp, node-addon-api and libnode-dev
#            (the headers); where another vendor's Node.js is installed
#            (NodeSource's, which ships its headers and npm's node-gyp,
#            and which Debian's node-* packages cannot sit beside), not
#            those but node-addon-api, by npm into /var/cache/ratelimit/npm
# The 6.12 kernels come through their meta-packages, which apt resolves
# to the current linux-image-6.12.N+deb12-* at install time (see
# selftests/vm/kver.sh for the release they lead to).
set -eu

base="gcc make libc6-dev perl linux-source-6.1
qemu-system-x86 busybox-static sparse cpio kmod xz-utils gzip python3 python3-prometheus-client
liburing-dev mypy python3-venv"
pkgs=
builddep=
napi=
root=$(cd "$(dirname "$0")/.." && pwd)

for k in "${@:-6.1}"; do
	case $k in fresh|build-dep|node) ;; *) pkgs="$base $pkgs" base= ;; esac
	case $k in
	6.1) pkgs="$pkgs linux-image-amd64 linux-headers-amd64" ;;
	6.12) pkgs="$pkgs linux-image-6.12-amd64 linux-headers-6.12-amd64" ;;
	6.12-rt) pkgs="$pkgs linux-image-6.12-rt-amd64 linux-headers-6.12-rt-amd64" ;;
	debug) pkgs="$pkgs linux-source-6.12 bc flex bison libelf-dev libssl-dev" ;;
	bench) pkgs="$pkgs gnuplot-nox redis-tools python3-limits python3-redis" ;;
	deb) pkgs="$pkgs lintian" builddep=1 ;;
	build-dep) builddep=1 ;;
	host) pkgs="$pkgs mmdebstrap qemu-utils e2fsprogs" ;;
	global) pkgs="$pkgs redis-server redis-tools libhiredis-dev libssl-dev openssl libsystemd-dev" ;;
	matrix) exec "$0" 6.1 6.12 6.12-rt ;;
	all) exec "$0" 6.1 6.12 6.12-rt debug ;;
	fresh) pkgs="$pkgs mmdebstrap git" ;;
	node)
		# Debian's node-gyp only recommends build-essential.
		pkgs="$pkgs gcc g++ make libc6-dev python3"
		if command -v node >/dev/null &&
			! dpkg-query -W -f='${Version}' nodejs 2>/dev/null | grep -q dfsg; then
			napi=/var/cache/ratelimit/npm
		else
			pkgs="$pkgs nodejs node-gyp node-addon-api libnode-dev"
		fi ;;
	*) echo "deps: unknown kernel $k (6.1, 6.12, 6.12-rt, debug, bench, deb, build-dep, host, global, matrix, all, fresh, node)" >&2
	   exit 2 ;;
	esac
done

missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || st=
	[ "$st" = installed ] || missing="$missing $p"
done
# The Build-Depends (and build-essential): dpkg-checkbuilddeps, where
# dpkg-dev is installed, says whether they are there.
if [ -n "$builddep" ] && command -v dpkg-checkbuilddeps >/dev/null &&
	(cd "$root" && dpkg-checkbuilddeps) 2>/dev/null; then
	builddep=
fi
# node-addon-api (headers only) for another vendor's Node.js, from npm.
if [ -n "$napi" ] && [ ! -f "$napi/node_modules/node-addon-api/napi.h" ]; then
	command -v npm >/dev/null || {
		echo "deps: no npm to install node-addon-api with (the Node.js of $(command -v node) came without it)" >&2
		exit 1
	}
	echo "deps: installing node-addon-api (npm) into $napi"
	mkdir -p "$napi"
	npm install --prefix "$napi" --no-save --no-package-lock --ignore-scripts \
		--no-audit --no-fund node-addon-api@8 </dev/null
fi
[ -z "$missing" ] && [ -z "$builddep" ] && exit 0

echo "deps: installing$missing${builddep:+ the Build-Depends of debian/control}"
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root or sudo" >&2; exit 1; }
	sudo=sudo
else
	sudo=
fi
# Another apt or dpkg (another user's, unattended-upgrades) may hold a
# lock: apt-get install waits up to 15 minutes for dpkg's, and apt-get
# update, which does not wait for the lock of the package lists, is tried
# again, for 15 minutes at most.
apt="$sudo env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=900"

# retry CMD...: run CMD; while it fails on a lock that another process
# holds, wait and run it again.
retry()
{
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/deps.XXXXXX")
	start=$(date +%s)
	while :; do
		{
			rc=0
			"$@" </dev/null || rc=$?
			echo "$rc" > "$tmp/rc"
		} 2>&1 | tee "$tmp/out"
		rc=$(cat "$tmp/rc")
		if [ "$rc" -eq 0 ] || ! grep -q 'Could not get lock' "$tmp/out" ||
			[ $(($(date +%s) - start)) -ge 900 ]; then
			break
		fi
		echo "deps: another process holds apt's lock; again in 10 s"
		sleep 10
	done
	rm -rf "$tmp"
	return "$rc"
}

# shellcheck disable=SC2086 # word splitting of the lists is wanted
retry $apt update
# shellcheck disable=SC2086
[ -z "$missing" ] || retry $apt install --no-install-recommends $missing
# shellcheck disable=SC2086
[ -z "$builddep" ] || retry $apt build-dep --no-install-recommends "$root/"
