#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# The part of `make check` after the userspace build. Once: the static
# checks (against the first Debian kernel of the list), the host unit
# tests and make check-global-redis (global limits against private
# redis-servers, about 2.5 min). Then for each guest kernel of RL_KVERS
# (default 6.1):
#   6.1, 6.12, 6.12-rt  Debian's kernels (selftests/vm/kver.sh)
#   debug               the debug kernel (scripts/kdebug.sh builds it)
# the module's W=1 build for that kernel and the selftests in a QEMU guest
# booting it (run.sh check), every result prefixed "KERNEL: ". A kernel
# of RL_NO_BOOT (make check-all: Debian's stock 6.12) gets the W=1 build
# and no guest. The suites of the Python and Node.js bindings and of
# rlsyncd (its guest test and the Sentinel failover) test programs on top
# of the ABI, not the kernel: every ioctl and mapping they use is tested
# by the C suites on every kernel (ratelimit_global_test the lease
# ioctls), the debug kernel's leak checks among them. They run on the
# first kernel of the list only (264 s of the debug kernel's guest when
# they ran there too); the Sentinel failover never on the debug kernel,
# where it took 120 s of a guest's 1,085 to report its timings as XFAIL.
# On the first Debian kernel, also two guests at once sharing one
# Redis on this host (selftests/global/two_guests.sh, about 40 s), and
# the rig's own test of a CPU stuck in the guest's kernel (lockup.sh,
# about 30 s).
# Ends with the line "N passed, N failed" over all; exits non-zero on any
# failure.
# The debug kernel's guest runs with KSFT_MACHINE_SLOW=yes (as the
# kernel's own CI runs its selftests on debug kernels): KASAN, lockdep and
# kmemleak under emulation make it several times slower, so a check of
# time alone (how soon a share converges, how full a failover runs) that
# fails there is reported as XFAIL with its figures (a SKIP in the
# results); a bound, a count or a leak still fails. The other kernels
# assert those times.
# RL_TESTS (lib.sh's rl_wanted) picks suites by name: the guest's
# selftests, unit/NAME_test, global-redis, two_guests and lockup; "none"
# runs none of them, and the guests boot with no selftest (the module
# loaded and unloaded, the kernel log checked).
# The debug kernel, when it is in RL_KVERS and not cached yet, is built
# (scripts/kdebug.sh) in the background from the start at the lowest CPU
# priority, while the static checks and the other kernels' guests run
# (guests that wait for tokens leave the CPUs idle much of the time); its
# turn waits for the build, whose log is build/kdebug.log.
set -eu

here=$(dirname "$0")
# shellcheck source=selftests/vm/lib.sh
. "$here/lib.sh"
rl_results_init build/results.txt
kvers=${RL_KVERS:-6.1}
make=${MAKE:-make}

# lap WHAT: the wall time since the last lap, printed at the end (and in
# build/check-times.txt): where make check's time goes.
times=build/check-times.txt
: > "$times"
lap0=$(date +%s)
lap()
{
	now=$(date +%s)
	printf '  %-40s %5d s\n' "$1" $((now - lap0)) >> "$times"
	lap0=$now
}

# kernel K: set release, kdir and image for guest kernel K (kernel.sh),
# building the debug kernel when it is not cached yet.
kernel()
{
	if [ "$1" = debug ] && [ -n "$kdebug" ]; then
		t0=$(date +%s)
		rc=0
		wait "$kdebug" || rc=$?
		kdebug=
		echo "debug kernel: waited $(($(date +%s) - t0)) s for its build"
		[ "$rc" -eq 0 ] || { tail -n 40 build/kdebug.log; return 1; }
	fi
	[ "$1" != debug ] || scripts/kdebug.sh || return 1
	release=$("$here/kernel.sh" "$1" release) &&
		kdir=$("$here/kernel.sh" "$1" dir) &&
		image=$("$here/kernel.sh" "$1" image)
}

static()	# WHAT TARGET
{
	echo "==> $1 (make $2)"
	if $make --no-print-directory -s "$2" KDIR="$kdir"; then
		rl_result PASS "$1"
	else
		rl_result FAIL "$1"
	fi
}

kdebug=
case " $kvers " in
*" debug "*)
	echo "==> debug kernel: building in the background (build/kdebug.log)"
	mkdir -p build
	nice -n 19 scripts/kdebug.sh > build/kdebug.log 2>&1 &
	kdebug=$! ;;
esac

first=
for k in $kvers; do
	[ "$k" = debug ] || { first=$k; break; }
done
# The kernel whose guest runs the suites of programs on top of the ABI:
# the first of the list, the debug kernel when it is alone.
top=${kvers%% *}
# The install path, as a packager or `sudo make install` takes it.
install_path()
{
	d=build/destdir
	echo "==> make install into a DESTDIR; modprobe finds the module"
	rm -rf "$d"
	# In a build dir of its own: its tools are linked as installs link
	# them (shared), not as the guest's (static).
	if $make --no-print-directory -s install DESTDIR="$PWD/$d" \
		KDIR="$kdir" B=build/install >/dev/null &&
	   modprobe --show-depends -d "$d" -S "$release" ratelimit; then
		rl_result PASS "make install: modprobe finds ratelimit ($first)"
	else
		rl_result FAIL "make install: modprobe finds ratelimit ($first)"
	fi
	echo "==> make install-user without kernel headers"
	rm -rf "$d"
	if $make --no-print-directory -s install-user DESTDIR="$PWD/$d" \
		KDIR=/nonexistent B=build/install >/dev/null &&
	   [ -x "$d/usr/local/bin/rlctl" ] &&
	   env -u LD_LIBRARY_PATH "$d/usr/local/bin/rlctl" --version >/dev/null &&
	   env -u LD_LIBRARY_PATH build/install/tools/rlctl --version >/dev/null &&
	   readelf -d "$d/usr/local/bin/rlctl" | grep -q 'RUNPATH.*\$ORIGIN/\.\./lib' &&
	   readelf -d "$d/usr/local/bin/rlctl" | grep -q 'NEEDED.*libratelimit\.so\.1'; then
		rl_result PASS "make install-user needs no kernel headers; tools use libratelimit.so.1, found through their rpath, installed or in the tree"
	else
		rl_result FAIL "make install-user needs no kernel headers; tools use libratelimit.so.1, found through their rpath, installed or in the tree"
	fi
	echo "==> make uninstall removes what make install-user put there"
	if $make --no-print-directory -s uninstall DESTDIR="$PWD/$d" \
		KDIR=/nonexistent B=build/install >/dev/null &&
	   [ -z "$(find "$d" ! -type d ! -path "$d/etc/*")" ]; then
		rl_result PASS "make uninstall leaves only /etc/ratelimit.d"
	else
		find "$d" ! -type d ! -path "$d/etc/*" | sed 's/^/  left: /'
		rl_result FAIL "make uninstall leaves only /etc/ratelimit.d"
	fi
	rm -rf "$d"
	echo "==> make without the kernel source (no kselftest headers)"
	if KSRC_TARBALL=/nonexistent $make --no-print-directory -s all \
		B=build/nosrc KDIR="$kdir" >/dev/null; then
		rl_result PASS "make builds without linux-source"
	else
		rl_result FAIL "make builds without linux-source"
	fi
	rm -rf build/nosrc
}

if [ -n "$first" ] && kernel "$first"; then
	static "checkpatch clean" style
	static "mypy --strict kratelimit clean" mypy
	static "every exported library function has a man page" mancheck
	static "sparse clean ($first)" sparse
	install_path
	lap "static checks, install path"
fi

echo "==> host unit tests"
for t in build/unit/*_test; do
	[ -x "$t" ] || { echo "(no unit tests built)"; break; }
	rl_wanted "unit/${t##*/}" || continue
	rc=0
	timeout 300 "$t" > "$t.log" 2>&1 </dev/null || rc=$?
	cat "$t.log"
	rl_tap "unit/${t##*/}" "$rc" < "$t.log"
done
lap "host unit tests"

if rl_wanted global-redis; then
	echo "==> global limits against private redis-servers (make check-global-redis)"
	rc=0
	$make --no-print-directory -s check-global-redis > build/global-redis.log 2>&1 || rc=$?
	cat build/global-redis.log
	# its lines are "ok - ..." and "not ok - ...": numbered for rl_tap
	awk '/^ok / { sub(/^ok/, "ok " ++n) } /^not ok / { sub(/^not ok/, "not ok " ++n) } { print }' \
		build/global-redis.log | rl_tap "global-redis" "$rc"
	lap "global-redis"
fi

for k in $kvers; do
	echo "==> $k: the kernel"
	if ! kernel "$k"; then
		rl_result FAIL "$k: kernel available"
		lap "$k: kernel"
		continue
	fi
	lap "$k: kernel"
	[ "$k" != debug ] || rl_result PASS "$k: kernel built"

	echo "==> $k: module for $release, W=1 (make w1)"
	if $make --no-print-directory -s w1 KDIR="$kdir"; then
		rl_result PASS "$k: module builds with W=1 without warnings"
	else
		rl_result FAIL "$k: module builds with W=1 without warnings"
		continue
	fi
	lap "$k: module, W=1"
	case " ${RL_NO_BOOT:-} " in
	*" $k "*)
		echo "==> $k: no guest (RL_NO_BOOT)"
		continue ;;
	esac

	echo "==> $k: selftests in a QEMU guest"
	mem=1024
	[ "$k" != debug ] || mem=2048
	skip=
	[ "$k" = "$top" ] || skip="python node rlsyncd sentinel"
	[ "$k" != debug ] || skip="$skip sentinel"
	slow=${KSFT_MACHINE_SLOW:-}
	[ "$k" != debug ] || slow=yes
	KSFT_MACHINE_SLOW=$slow RL_PREFIX="$k: " RL_KVER=$release \
		RL_KERNEL=$image RL_SKIP=$skip RL_VM_OUT=build/vm/$k \
		RL_VM_MEM=$mem "$here/run.sh" check ||
		rl_result FAIL "$k: QEMU rig ran"
	lap "$k: selftests in the guest"
	if [ "$k" = "$first" ] && rl_wanted two_guests; then
		echo "==> $k: two guests, one Redis (selftests/global/two_guests.sh)"
		RL_PREFIX="$k: " RL_KVER=$release RL_KERNEL=$image \
			"$here/../global/two_guests.sh" ||
			rl_result FAIL "$k: two guests ran"
		lap "$k: two guests"
	fi
	if [ "$k" = "$first" ] && rl_wanted lockup; then
		echo "==> $k: a CPU stuck in the kernel ends the guest (selftests/vm/lockup.sh)"
		RL_PREFIX="$k: " RL_KVER=$release RL_KERNEL=$image \
			"$here/lockup.sh" "$kdir" ||
			rl_result FAIL "$k: the rig's lockup test ran"
		lap "$k: lockup test"
	fi
done

echo "check: wall times"
cat "$times"
rl_summary
