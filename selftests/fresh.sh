#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-fresh: the README's install and the developer's page's first
# commands, exactly as they write them, on fresh Debian 12 machines. A
# machine is a pristine root that mmdebstrap makes (variant important:
# what debootstrap and a minimal install have) from the apt sources this
# machine uses, as its apt configuration names them, entered with chroot.
# Two are unpacked from one base root:
#   the build root, with the host's /dev (read-only), /dev/pts, /proc and
#   /sys (read-only) bound in for QEMU and /etc/resolv.conf copied in. In
#   it, as root: the README's install of git and make (a minimal install
#   has neither), a git clone of the commit under test (RL_FRESH_REV,
#   default HEAD), and the README's make deb;
#   the user's root, with no compiler and no DKMS: the .debs are copied to
#   its /root/ratelimit/build/deb, and it runs apt-get update and the
#   README's install lines of the library and tools and of the optional
#   packages (the DKMS line is check-host's), then checks that no
#   compiler, DKMS or kernel headers came with them, that every tool's
#   --help exits 0 and that python3 imports the package;
# then the build root runs make vm-build (make run's build: the rig's
# packages, the module, tools and selftests) with no Node.js, and takes
# two Node.js that a developer's machine may have, neither of which make
# run may need: first a copy of this machine's Node.js when it is
# another vendor's (NodeSource's: the binary, its headers and npm), with
# which it runs make vm-build again and
# make node (the addon, with the node-addon-api that this machine's
# scripts/deps.sh node put in /var/cache/ratelimit/npm, copied in: the
# root reaches Debian's archive, not npm's registry), and which it then
# removes; then Debian's nodejs, libnode-dev and node-gyp without
# node-addon-api, as apt-get installs them; then it runs
# Documentation/development.md's make run and make check (with
# RL_TESTS=$fresh_tests: no suite that make check-all runs), and make tools and
# build/tools/rlctl --version: the tools run from the tree as built, with
# no LD_LIBRARY_PATH.
# RL_FRESH_ONLY=node runs only the build root's steps up to make run
# (prerequisites, clone, the Node.js steps, make run), without make deb, the
# user's root, make check and make tools.
# A command that the documents stop saying fails the run at once: the
# list below must follow them. Every step's wall time is printed; any
# failure fails. Results go to build/fresh/results.txt and the last line
# is "N passed, N failed"; the inner make check's results and the guest
# logs go to build/fresh/inner/.
#
# The base root is cached as a tarball in $RL_CACHE, else
# /var/cache/ratelimit, keyed by what went into it: the apt sources, the
# suite, variant and architecture, mmdebstrap's version and options, and
# the month (the archive moves on). The roots are unpacked into a scratch
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

# What the documents say, checked below: a change there must come here too.
readme=README.md
prereq='apt-get update && apt-get install -y git make'
deb_cmd='make deb'
user_cmd='apt-get install -y ./build/deb/libratelimit1_*.deb ./build/deb/ratelimit-tools_*.deb'
opt_cmd='apt-get install -y ./build/deb/ratelimit-global_*.deb ./build/deb/python3-kratelimit_*.deb'
devdoc=Documentation/development.md
run_cmd='make run'
check_cmd='make check'
tools_cmd='make tools'
# The inner make check runs none of the suites (RL_TESTS=none: no guest
# selftest, unit test, global-redis, two guests or lockup test), which
# make check-all runs on the same commit and kernel; it installs its
# packages, builds everything, runs the static checks and the install
# path, and boots the guest, which loads and unloads the module, with its
# kernel log checked.
fresh_tests=none
version_cmd='build/tools/rlctl --version'
# Debian's Node.js without the addon's node-addon-api, as a developer may
# have it.
debian_node='nodejs libnode-dev node-gyp'
# What the user's root must not have, and the tools whose --help it runs.
not_installed='gcc cc dkms'
tools='rlctl rlpace rlpipe rlrun rlsyncd'

die() { echo "fresh: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, mount, chroot)"
for c in mmdebstrap git; do
	command -v "$c" >/dev/null || die "no $c (scripts/deps.sh fresh)"
done

# in_doc FILE CMD: CMD is a line of a code block of FILE (a trailing
# comment aside).
in_doc()
{
	awk -v c="$2" '
		/^```/ { code = !code; next }
		code { sub(/[ \t]+#.*$/, ""); sub(/[ \t]+$/, ""); if ($0 == c) found = 1 }
		END { exit !found }' "$top/$1"
}
for c in "$prereq" "$deb_cmd" "$user_cmd" "$opt_cmd"; do
	in_doc "$readme" "$c" || die "$readme no longer says \"$c\": update $0"
done
for c in "$run_cmd" "$check_cmd" "$tools_cmd" "$version_cmd"; do
	in_doc "$devdoc" "$c" || die "$devdoc no longer says \"$c\": update $0"
done

only=${RL_FRESH_ONLY:-}
case $only in
'' | node) ;;
*) die "RL_FRESH_ONLY=$only: only node (or nothing: every step)" ;;
esac

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
user=$scratch/user
mounts=

# inroot_pids: the processes whose root is one of the scratch roots.
inroot_pids()
{
	for p in /proc/[0-9]*; do
		case $(readlink "$p/root" 2>/dev/null) in
		"$root" | "$user") echo "${p#/proc/}" ;;
		esac
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

# bind ROOT DIR [ro]: host's /DIR at the same place in ROOT.
bind()
{
	mount --bind "/$2" "$1/$2" || return 1
	mounts="$1/$2 $mounts"	# unmounted in reverse order
	[ "${3:-}" != ro ] || mount -o remount,bind,ro "$1/$2"
}

# unpack ROOT: a fresh copy of the base root, with the host's /dev, /proc
# and /sys and a copy of its resolv.conf.
unpack()
{
	mkdir "$1" || return 1
	tar -C "$1" --numeric-owner -xpf "$tarball" || return 1
	cp -L /etc/resolv.conf "$1/etc/resolv.conf" || return 1
	# /dev and /sys read-only: nothing in the root may change the host's
	# (devices still open for writing).
	bind "$1" dev ro && bind "$1" dev/pts && bind "$1" proc && bind "$1" sys ro &&
		bind_vm_lock "$1"
}

# bind_vm_lock ROOT: the host's guests' lock (RL_VM_LOCK, if set: .ci/run
# runs this beside make check-all) as ROOT's /run/ratelimit-vm.lock, which
# inroot gives the build root's commands: the guests of its make run and
# make check boot one at a time with the host's (rl_vm_lock).
vm_lock=/run/ratelimit-vm.lock
bind_vm_lock()
{
	[ -n "${RL_VM_LOCK:-}" ] || return 0
	touch "$RL_VM_LOCK" "$1$vm_lock" || return 1
	mount --bind "$RL_VM_LOCK" "$1$vm_lock" || return 1
	mounts="$1$vm_lock $mounts"
}
step "unpack the build root, mount /dev, /proc, /sys" unpack "$root" ||
	{ finish; exit 1; }

# inroot [-u] DIR CMD: run the shell command CMD in DIR of the build root
# (-u: of the user's root), as root with a login's environment (and in the
# build root the guests' lock, bind_vm_lock), no terminal and no input.
inroot()
{
	r=$root
	lock=${RL_VM_LOCK:+$vm_lock}
	[ "$1" != -u ] || { r=$user; lock=; shift; }
	chroot "$r" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
		SHELL=/bin/bash TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		${DEBIAN_FRONTEND:+DEBIAN_FRONTEND=$DEBIAN_FRONTEND} \
		${lock:+RL_VM_LOCK=$lock} \
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

# The user's root: a second fresh root with the packages that make deb
# left in the build root's build/deb, where the README's lines find them.
user_root()
{
	unpack "$user" || return 1
	mkdir -p "$user/root/ratelimit/build/deb" || return 1
	set -- "$root"/root/ratelimit/build/deb/*.deb
	[ -f "$1" ] || { echo "fresh: make deb left no .deb in build/deb" >&2; return 1; }
	detail="$# packages"
	cp "$@" "$user/root/ratelimit/build/deb/"
}

# none_installed: the user's root has no compiler, DKMS or kernel headers.
none_installed()
{
	bad=
	for c in $not_installed; do
		! inroot -u / "command -v $c" >/dev/null || bad="$bad $c"
	done
	h=$(inroot -u / "dpkg-query -W -f='\${db:Status-Abbrev} \${Package}\n' \
		'linux-headers-*' dkms gcc 'gcc-[0-9]*' 2>/dev/null |
		awk '/^ii/ && \$2 !~ /-base\$/ { print \$2 }'")
	bad="$bad${h:+ $(echo "$h" | tr '\n' ' ')}"
	[ -z "$bad" ] || { echo "fresh: installed in the user's root:$bad" >&2; detail="has$bad"; return 1; }
}

# helps: every tool's --help exits 0 in the user's root.
helps()
{
	bad=
	for t in $tools; do
		inroot -u / "$t --help" >/dev/null || bad="$bad $t"
	done
	[ -z "$bad" ] || { echo "fresh: --help failed:$bad" >&2; detail="failed:$bad"; return 1; }
	detail=$(echo "$tools" | tr ' ' ,)
}

# tree_version: rlctl as make built it in the tree, linked against the
# tree's libratelimit.so.1, which it finds without LD_LIBRARY_PATH.
tree_version()
{
	inroot /root/ratelimit "$version_cmd" || return 1
	l=$(inroot /root/ratelimit "ldd build/tools/rlctl" | awk '/libratelimit/ { print $3 }')
	detail="libratelimit.so.1 from ${l:-nowhere}"
	case $l in
	/root/ratelimit/build/*) ;;
	*) echo "fresh: build/tools/rlctl does not use the tree's library ($l)" >&2; return 1 ;;
	esac
}

# vendor_node: this machine's node, when not Debian's (dpkg's nodejs has
# no +dfsg), as $vnode with its prefix's headers and npm, the files it
# takes in $vfiles; else nothing.
vendor_node()
{
	vnode=''
	vprefix=''
	vfiles=''
	n=$(command -v node) || return 0
	! dpkg-query -W -f='${Version}' nodejs 2>/dev/null | grep -q dfsg || return 0
	vnode=$(readlink -f "$n")
	vprefix=${vnode%/bin/*}
	vfiles=$vnode
	for f in "$vprefix/include/node" "$vprefix/lib/node_modules/npm"; do
		[ ! -e "$f" ] || vfiles="$vfiles $f"
	done
}

# vendor_in: copy this machine's Node.js into the build root, at its own
# paths, with npm's command; not registered with dpkg there, as a
# vendor's tarball would not be.
vendor_in()
{
	# shellcheck disable=SC2086 # one path each
	printf '%s\n' $vfiles | sed 's|^/||' | tar -C / -cf - -T - | tar -C "$root" -xpf - &&
		{ [ ! -e "$root$vprefix/lib/node_modules/npm" ] ||
			ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root$vprefix/bin/npm"; } &&
		detail="node $(inroot / 'node -v'), $(du -sm "$root$vprefix/include/node" \
			"$root$vprefix/lib/node_modules/npm" "$root$vnode" 2>/dev/null |
			awk '{ s += $1 } END { print s }') MiB" &&
		! inroot / "dpkg-query -W nodejs" >/dev/null 2>&1
}

# vendor_make_node: make node in the root, with node-addon-api's headers
# as this machine's deps.sh node keeps them, copied into the root's cache.
napi_cache=/var/cache/ratelimit/npm
vendor_make_node()
{
	mkdir -p "$root$napi_cache" &&
		cp -a "$napi_cache/node_modules" "$root$napi_cache/" &&
		inroot /root/ratelimit "make node"
}

# vendor_out: the vendor's Node.js, node-addon-api and the addon leave the
# root as a vendor's uninstall would.
vendor_out()
{
	# shellcheck disable=SC2086 # one path each
	for f in $vfiles "$vprefix/bin/npm" "$napi_cache" /root/ratelimit/node/build; do
		rm -rf "${root:?}$f"
	done
	! inroot / "command -v node"
}

# debian_node: Debian's Node.js without node-addon-api.
debian_node()
{
	inroot / "apt-get install -y --no-install-recommends $debian_node" &&
		! inroot / "dpkg-query -W -f='\${db:Status-Status}' node-addon-api 2>/dev/null | grep -qx installed" &&
		detail="node $(inroot / 'node -v'), no node-addon-api"
}

# The Node.js cases, before make run: none (make run's build, which the
# next make vm-build and make run find done), the vendor's and Debian's.
node_steps()
{
	step "make vm-build (no Node.js)" inroot /root/ratelimit \
		"! command -v node && make vm-build" || return
	vendor_node
	if [ -z "$vnode" ]; then
		echo "fresh: this machine's Node.js is Debian's, or none: no vendor's Node.js to copy"
	else
		step "this machine's vendor Node.js copied in" vendor_in || return
		step "make vm-build (vendor Node.js)" inroot /root/ratelimit "make vm-build" || return
		if [ -f "$napi_cache/node_modules/node-addon-api/napi.h" ]; then
			detail="node-addon-api from this machine's $napi_cache"
			step "make node (vendor Node.js)" vendor_make_node || return
		else
			echo "fresh: no node-addon-api in $napi_cache (scripts/deps.sh node): no make node with the vendor's Node.js"
		fi
		step "the vendor's Node.js removed" vendor_out || return
	fi
	step "Debian's $debian_node, no node-addon-api" debian_node
}

# Each step only after the one before it passed; the user's root after
# make deb, the developer's commands after that.
steps()
{
	step "$prereq" inroot /root "$prereq" || return
	detail=$(echo "$sha" | cut -c1-12)
	step "git clone" clone || return
	if [ "$only" = node ]; then
		node_steps || return
		step "$run_cmd" inclone "$run_cmd" build/vm/summary.txt
		return
	fi
	step "$deb_cmd" inroot /root/ratelimit "$deb_cmd" || return
	step "unpack the user's root, copy the .debs" user_root || return
	step "apt-get update (user's root)" inroot -u /root/ratelimit "apt-get update" || return
	step "$user_cmd" inroot -u /root/ratelimit "$user_cmd" || return
	step "$opt_cmd" inroot -u /root/ratelimit "$opt_cmd" || return
	step "no $not_installed or linux-headers in the user's root" none_installed
	step "every tool's --help" helps
	step "python3 -c 'import kratelimit'" inroot -u / "python3 -c 'import kratelimit'"
	node_steps || return
	step "$run_cmd" inclone "$run_cmd" build/vm/summary.txt || return
	step "$check_cmd" inclone "RL_TESTS='$fresh_tests' $check_cmd" build/summary.txt
	step "$tools_cmd" inroot /root/ratelimit "$tools_cmd" || return
	step "$version_cmd" tree_version
}
steps || true
keep_logs
finish
