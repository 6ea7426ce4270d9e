#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-fresh: the README's first commands, exactly as it writes
# them, on a fresh Debian 12 machine. The machine is a pristine root that
# mmdebstrap makes (variant important: what debootstrap and a minimal
# install have) from the apt sources this machine uses, as its apt
# configuration names them, entered with chroot. Host's /dev (read-only),
# /dev/pts, /proc and /sys (read-only) are bound into it for QEMU, and
# /etc/resolv.conf is copied in. In it, as root:
#   the README's install of git and make (a minimal install has neither)
#   git clone of the commit under test (RL_FRESH_REV, default HEAD)
#   make run, then make check, in the clone
# Every step's wall time is printed; any failure fails. Results go to
# build/fresh/results.txt and the last line is "N passed, N failed"; the
# inner make check's results and the guest logs go to build/fresh/inner/.
#
# The base root is cached as a tarball in $RL_CACHE, else
# /var/cache/ratelimit, keyed by what went into it: the apt sources, the
# suite, variant and architecture, mmdebstrap's version and options, and
# the month (the archive moves on). The root is unpacked into a scratch
# dir under $RL_FRESH_TMP (default /var/tmp), which is removed at the end,
# as are the mounts, also on failure or interrupt (RL_FRESH_KEEP=1 keeps
# the dir). Needs root, mmdebstrap and git (scripts/deps.sh fresh).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=selftests/vm/lib.sh
. "$here/vm/lib.sh"

suite=bookworm
variant=important
out=$top/build/fresh

# What the README says, checked below: a change there must come here too.
prereq='apt-get update && apt-get install -y git make'
run_cmd='make run'
check_cmd='make check'

die() { echo "fresh: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, mount, chroot)"
for c in mmdebstrap git; do
	command -v "$c" >/dev/null || die "no $c (scripts/deps.sh fresh)"
done

# in_readme CMD: CMD is a line of a code block of README.md (a trailing
# comment aside).
in_readme()
{
	awk -v c="$1" '
		/^```/ { code = !code; next }
		code { sub(/[ \t]+#.*$/, ""); sub(/[ \t]+$/, ""); if ($0 == c) found = 1 }
		END { exit !found }' "$top/README.md"
}
for c in "$prereq" "$run_cmd" "$check_cmd"; do
	in_readme "$c" || die "README.md no longer says \"$c\": update $0"
done

rev=${RL_FRESH_REV:-HEAD}
sha=$(git -C "$top" rev-parse --verify "$rev^{commit}") ||
	die "no commit $rev"
git -C "$top" diff --quiet HEAD 2>/dev/null ||
	echo "fresh: note: uncommitted changes are not in the clone of $rev"

rm -rf "$out"
mkdir -p "$out"
rl_results_init "$out/results.txt"
times=$out/times.txt
: > "$times"

# step NAME CMD...: run CMD as one step, timed; record its result.
step()
{
	name=$1
	shift
	echo "==> fresh: $name"
	t0=$(date +%s)
	rc=0
	"$@" || rc=$?
	t=$(($(date +%s) - t0))
	printf '  %-48s %5d s\n' "$name" "$t" >> "$times"
	echo "fresh: $name: $t s"
	if [ "$rc" -eq 0 ]; then
		rl_result PASS "fresh: $name${detail:+ ($detail)}"
	else
		rl_result FAIL "fresh: $name${detail:+ ($detail)}"
	fi
	detail=
	return "$rc"
}
detail=

finished=
finish()
{
	finished=1
	echo "fresh: wall times"
	cat "$times"
	printf '  %-48s %5d s\n' total $(($(date +%s) - start))
	rl_summary
}

# The apt sources of this machine, from its apt configuration.
eval "$(apt-config shell list Dir::Etc::sourcelist/f parts Dir::Etc::sourceparts/d)"
sources=
for f in "${list:-}" "${parts:-}"*.list "${parts:-}"*.sources; do
	[ -f "$f" ] && grep -qv '^[[:space:]]*\(#.*\)\{0,1\}$' "$f" &&
		sources="$sources $f"
done
[ -n "$sources" ] || die "no apt sources found (apt-config: $list, $parts)"

# The base root: cached, keyed by everything that goes into it.
if [ -n "${RL_CACHE:-}" ]; then
	cache=$RL_CACHE
else
	cache=/var/cache/ratelimit
fi
arch=$(dpkg --print-architecture)
# resolv.conf and hostname would be the host's of the day: the copy of
# resolv.conf comes in at each run.
# shellcheck disable=SC2016 # $1 is mmdebstrap's, the root
hook='rm -f "$1/etc/resolv.conf" "$1/etc/hostname"'
set -- --mode=root --variant="$variant" --architectures="$arch" \
	--format=tar --customize-hook="$hook"
key=$( {
	echo "$* $suite"
	mmdebstrap --version
	date -u +%Y-%m
	# shellcheck disable=SC2086 # one word each
	for f in $sources; do echo "$f"; cat "$f"; done
} | sha256sum | cut -c1-16)
tarball=$cache/fresh-$suite-$arch-$key.tar

# base MMDEBSTRAP-OPTION...: the base root's tarball, made unless cached;
# one build at a time, a second one waits and then finds it cached.
base()
{
	[ -f "$tarball" ] && { echo "fresh: cached $tarball"; detail=cached; return 0; }
	mkdir -p "$cache" && exec 8> "$cache/.fresh.lock" && flock 8 || return 1
	brc=0
	if [ -f "$tarball" ]; then
		echo "fresh: cached $tarball"
		detail=cached
	else
		echo "fresh: mmdebstrap $suite ($variant) from$sources"
		rm -f "$tarball.tmp"
		# shellcheck disable=SC2086 # one word each
		if mmdebstrap "$@" "$suite" "$tarball.tmp" $sources &&
			mv "$tarball.tmp" "$tarball"; then
			detail="built, $(du -m "$tarball" | cut -f1) MiB"
			# Older entries are of no further use.
			find "$cache" -mindepth 1 -maxdepth 1 -name 'fresh-*.tar*' \
				! -path "$tarball" -exec rm -f {} + 2>/dev/null
		else
			rm -f "$tarball.tmp"
			brc=1
		fi
	fi
	exec 8>&-
	return "$brc"
}

start=$(date +%s)
step "base root of Debian $suite" base "$@" || { finish; exit 1; }

# The scratch root, its mounts, and their removal whatever happens.
scratch=$(mktemp -d "${RL_FRESH_TMP:-/var/tmp}/ratelimit-fresh.XXXXXX")
scratch=$(cd "$scratch" && pwd -P)
root=$scratch/root
mounts=

# inroot_pids: the processes whose root is the scratch root.
inroot_pids()
{
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" != "$root" ] || echo "${p#/proc/}"
	done
}

cleanup()
{
	st=$?
	set +e
	[ -n "$finished" ] || echo "fresh: stopped early (exit status $st)" >&2
	# What still runs in the root after an interrupt (QEMU under timeout
	# has a process group of its own) is ended first.
	for sig in TERM KILL; do
		left=$(inroot_pids)
		[ -n "$left" ] || break
		# shellcheck disable=SC2086 # one pid each
		echo "fresh: ending what still runs in the root:" $left >&2
		# shellcheck disable=SC2086
		kill -s "$sig" $left 2>/dev/null
		sleep 2
	done
	for m in $mounts; do
		umount "$m" 2>/dev/null || umount -l "$m" ||
			echo "fresh: cannot unmount $m" >&2
	done
	mounts=
	if grep -qF " $scratch/" /proc/self/mountinfo; then
		echo "fresh: mounts left under $scratch; not removing it" >&2
		st=1
	elif [ "${RL_FRESH_KEEP:-}" = 1 ]; then
		echo "fresh: kept $scratch"
	else
		rm -rf --one-file-system "$scratch"
	fi
	exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# bind DIR [ro]: host's /DIR at the same place in the root.
bind()
{
	mount --bind "/$1" "$root/$1" || return 1
	mounts="$root/$1 $mounts"	# unmounted in reverse order
	[ "${2:-}" != ro ] || mount -o remount,bind,ro "$root/$1"
}

unpack()
{
	mkdir "$root" || return 1
	tar -C "$root" --numeric-owner -xpf "$tarball" || return 1
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" || return 1
	# /dev and /sys read-only: nothing in the root may change the host's
	# (devices still open for writing).
	bind dev ro && bind dev/pts && bind proc && bind sys ro
}
step "unpack and mount /dev, /proc, /sys" unpack || { finish; exit 1; }

# inroot DIR CMD: run the shell command CMD in DIR of the root, as root
# with a login's environment, no terminal and no input.
inroot()
{
	chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
		SHELL=/bin/bash TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${DEBIAN_FRONTEND:+DEBIAN_FRONTEND=$DEBIAN_FRONTEND} \
		/bin/bash -c "cd $1 && $2" </dev/null
}

# The commit under test, cloned by the root's own git.
clone()
{
	src=$scratch/src
	git clone -q --shared --no-checkout "$top" "$src" &&
		git -C "$src" update-ref --no-deref HEAD "$sha" &&
		git -C "$src" bundle create -q "$root/root/ratelimit.bundle" HEAD &&
		rm -rf "$src" &&
		inroot /root "git -c advice.detachedHead=false clone -q ratelimit.bundle ratelimit" &&
		[ "$(inroot /root/ratelimit 'git rev-parse HEAD')" = "$sha" ]
}

# After the inner make check: its summary, results and guest logs.
keep_logs()
{
	b=$root/root/ratelimit/build
	mkdir -p "$out/inner"
	for f in summary.txt results.txt; do
		[ ! -f "$b/$f" ] || cp "$b/$f" "$out/inner/"
	done
	[ ! -d "$b/vm" ] ||
		(cd "$b" && find vm -name '*.log*' -exec cp --parents {} "$out/inner/" \;)
}

# inclone CMD SUMMARY: run CMD in the clone; its summary line (of the
# results it counted) goes with the step's result.
inclone()
{
	irc=0
	inroot /root/ratelimit "$1" || irc=$?
	[ ! -f "$root/root/ratelimit/$2" ] || detail=$(cat "$root/root/ratelimit/$2")
	return "$irc"
}

# Each step only after the one before it passed.
steps()
{
	step "$prereq" inroot /root "$prereq" || return
	detail=$(echo "$sha" | cut -c1-12)
	step "git clone" clone || return
	step "$run_cmd" inclone "$run_cmd" build/vm/summary.txt || return
	step "$check_cmd" inclone "$check_cmd" build/summary.txt
}
steps || true
keep_logs
finish
