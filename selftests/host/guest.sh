#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-host, inside the Debian 12 guest (selftests/host/run.sh boots
# it; the image's rl-check-host.service runs this as part of
# multi-user.target, and powers off when it ends). The second disk, mounted on /mnt, holds this
# script and the packages in debs/. rl.stage= on the command line says
# which boot this is:
#   1  as a sysadmin would: apt install ./*.deb (offline), first the
#      userland packages alone (no DKMS: they run, and ratelimit.service
#      fails visibly on a file without the module), then ratelimit-dkms:
#      DKMS builds the module, its postinst loads it; no limiter exists
#      and ratelimit.service does nothing until the admin copies the
#      example from /usr/share/doc/ratelimit-tools/examples and starts it;
#      the units' systemd-analyze security, the installed docs and man
#      pages
#   2  after the reboot: the module loaded at boot, the udev rule, the
#      example limiters, a normal user's tools and a program built with
#      pkg-config, Python, systemctl reload with a waiter asleep, a broken
#      file, rlsyncd.service as user rlsyncd with and without its Redis,
#      the udev override for group ratelimit, apt remove and purge
# Every check prints "@@rl PASS|FAIL what"; "@@rl stage N done" ends a
# stage, after the kernel log between "@@rl dmesg-begin/-end".

# shellcheck disable=SC2086,SC2016 # $pkgs and $left are lists; sh -c scripts

exec </dev/null >/dev/console 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive SYSTEMD_URLIFY=0 \
	SYSTEMD_PAGER='' SYSTEMD_COLORS=0

stage=0
# shellcheck disable=SC2013 # the words of the command line are wanted
for arg in $(cat /proc/cmdline); do
	case $arg in
	rl.stage=*) stage=${arg#*=} ;;
	esac
done

# The userland packages, which install without DKMS, then the module's.
user_pkgs="libratelimit1 libratelimit-dev ratelimit-tools ratelimit-global python3-kratelimit"
pkgs="$user_pkgs ratelimit-dkms"
user=rluser		# a normal user
member=rlmember		# a normal user in group ratelimit
conf=/etc/ratelimit.d
doc=/usr/share/doc/ratelimit-tools
example=$doc/examples/example.conf
sys=/sys/kernel/ratelimit
work=/var/tmp/rl		# state across the two boots
kver=$(uname -r)

mark() { echo "@@rl $*"; }
pass() { mark PASS "$*"; }
fail() { mark FAIL "$*"; }
# check WHAT CMD...: CMD's status is the result.
check() { what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
as() { u=$1; shift; runuser -u "$u" -- "$@"; }
say() { echo "guest: $*"; }

# wait_for SECONDS CMD...: until CMD succeeds, at most SECONDS.
wait_for()
{
	wait_left=$1
	shift
	while ! "$@"; do
		wait_left=$((wait_left - 1))
		[ "$wait_left" -gt 0 ] || return 1
		sleep 1
	done
}

# The boot is over when no job runs but this one's, for some seconds in a
# row: those still waiting wait for it (multi-user.target and what is
# ordered after it).
busy()
{
	systemctl list-jobs --no-legend |
		awk '$4 != "waiting" && $2 != "rl-check-host.service"' | grep -q .
}
settled()
{
	for _ in 1 2 3; do
		! busy || return 1
		sleep 1
	done
}
settle()
{
	wait_for 300 settled || { say "boot jobs still queued:"; systemctl list-jobs; }
	say "up after $(cut -d' ' -f1 /proc/uptime) s"
}

# The files of the root file system, less what churns by itself (logs,
# caches, apt's and dpkg's own state, the journal, /var/tmp).
files()
{
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run \
		-o -path /tmp -o -path /var/tmp -o -path /var/log \
		-o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \
		-o -path /var/lib/systemd/timers -o -path /var/lib/systemd/random-seed \
		-o -path /mnt -o -path /lost+found \) -prune -o -print | LC_ALL=C sort
}

loaded() { grep -q '^ratelimit ' /proc/modules; }

# attr NAME KEY: line KEY of a named limiter's sysfs config or stat.
attr() { sed -n "s/^$2 //p" "$sys/$1/config" "$sys/$1/stat" 2>/dev/null; }

# The limiters of the files in $conf, one name a line.
conf_names() { sed -n 's/^[[:space:]]*\[[[:space:]]*\([^]#[:space:]]*\)[[:space:]]*\].*/\1/p' "$conf"/*.conf; }

# The named limiters: the directories of $sys.
limiters() { find $sys -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | LC_ALL=C sort; }

# Every limiter's configuration, for before/after comparisons.
limiters_state()
{
	for d in "$sys"/*/; do
		[ -d "$d" ] || continue
		printf '%s:' "$(basename "$d")"
		for a in rate period_ns burst unlimited concurrency fairness catchup \
			backlog mode owner group; do
			printf ' %s=%s' "$a" "$(cat "$d$a" 2>/dev/null)"
		done
		echo
	done
}

dmesg_dump()
{
	mark dmesg-begin
	dmesg
	mark dmesg-end
}

# apt_install LOG DEB...: apt install of the .debs, offline, logged.
apt_install()
{
	log=$1
	shift
	say "installing $*"
	(cd $work/debs && timeout 2400 apt-get install -y "$@") > "$log" 2>&1
	rc=$?
	cat "$log"
	return $rc
}

# unit_state UNIT: ActiveState/Result/ConditionResult, e.g.
# "inactive/success/no" for a unit its condition skipped.
unit_state()
{
	echo "$(systemctl show -P ActiveState "$1")/$(systemctl show -P Result "$1")/$(systemctl show -P ConditionResult "$1")"
}

# security UNIT MAX: systemd-analyze security's table, its overall
# exposure at most MAX.
security()
{
	systemd-analyze security --no-pager "$1" > $work/sec.txt 2>&1
	sed 's/^/  /' $work/sec.txt
	level=$(sed -n 's/^.*Overall exposure level for [^:]*: \([0-9.]*\).*$/\1/p' $work/sec.txt)
	say "systemd-analyze security $1: ${level:-none} (at most $2)"
	check "systemd-analyze security $1: exposure ${level:-unknown} <= $2" \
		awk -v l="${level:-99}" -v m="$2" 'BEGIN { exit !(l + 0 <= m + 0) }'
}

# The man pages of the packages, as text sources.
man_sources()
{
	for p in $pkgs; do dpkg -L "$p"; done | grep '^/usr/share/man/.*\.gz$' |
		while read -r m; do [ -L "$m" ] || zcat "$m"; done
}

stage1()
{
	settle
	mkdir -p $work
	# The users of the test exist before the "before" list, as an admin's
	# would; the group ratelimit is the packages'.
	check "no group ratelimit before the install" sh -c '! getent group ratelimit'
	useradd --create-home --shell /bin/sh $user
	useradd --create-home --shell /bin/sh $member
	files > $work/files-before.txt
	check "no ratelimit module for $kver before the install" \
		sh -c "! modinfo -k $kver ratelimit >/dev/null 2>&1"

	mkdir -p $work/debs
	cp /mnt/debs/*.deb $work/debs/
	debs() { for p in "$@"; do echo ./"$p"_*.deb; done; }

	# The userland packages, without DKMS or a compiler's help.
	# shellcheck disable=SC2046 # the list of files
	apt_install $work/apt-user.log $(cd $work/debs && debs $user_pkgs)
	check "apt install of $user_pkgs succeeds offline without ratelimit-dkms" [ $? -eq 0 ]
	# (The image has DKMS and gcc for the second step: check-fresh
	# installs these packages in a root without either.)
	check "ratelimit-dkms is not installed with them" \
		sh -c "! dpkg-query -W -f='\${db:Status-Status}' ratelimit-dkms 2>/dev/null | grep -qx installed"
	for t in rlctl rlpace rlpipe rlrun rlsyncd; do
		check "$t --help runs without the module" sh -c "$t --help >/dev/null"
	done
	check "python3 imports ratelimit without the module" python3 -c 'import kratelimit'
	check "the group ratelimit exists (sysusers)" getent group ratelimit
	check "the system user rlsyncd exists, group ratelimit" \
		sh -c '[ "$(id -gn rlsyncd)" = ratelimit ] && [ "$(id -u rlsyncd)" -lt 1000 ]'
	usermod -aG ratelimit $member
	check "$conf exists and is empty" \
		sh -c "[ -d $conf ] && [ -z \"\$(ls -A $conf)\" ]"
	check "the example is $example" [ -f $example ]
	check "ratelimit.service is enabled" systemctl is-enabled -q ratelimit.service
	check "ratelimit.service is not started by the install ($(unit_state ratelimit.service))" \
		sh -c '[ "$(systemctl show -P ActiveState ratelimit.service)" = inactive ]'
	check "rlsyncd.service is neither enabled nor started" \
		sh -c '! systemctl is-enabled -q rlsyncd.service && ! systemctl is-active -q rlsyncd.service'

	# Nothing configured: the start does nothing and does not fail.
	systemctl start ratelimit.service
	rc=$?
	say "ratelimit.service with an empty $conf: status $rc, $(unit_state ratelimit.service)"
	check "ratelimit.service with an empty $conf: condition-skipped, not failed" \
		sh -c "[ $rc -eq 0 ] && [ \"\$(systemctl show -P ConditionResult ratelimit.service)\" = no ] &&
			! systemctl is-failed -q ratelimit.service"

	# Configured, but no module: the start fails, and says why.
	cp $example $conf/
	since=$(date '+%Y-%m-%d %H:%M:%S')
	sleep 1
	systemctl start ratelimit.service
	rc=$?
	systemctl status -l --no-pager ratelimit.service | sed 's/^/  /'
	check "ratelimit.service with a file but no module fails (status $rc)" \
		sh -c "[ $rc -ne 0 ] && systemctl is-failed -q ratelimit.service"
	journalctl -u ratelimit.service --since "$since" -o cat --no-pager > $work/nomod.txt
	check "its journal says /dev/ratelimit is missing" \
		grep -q '/dev/ratelimit' $work/nomod.txt
	rm -f $conf/example.conf
	systemctl reset-failed ratelimit.service

	# Then the module's package: DKMS builds it, its postinst loads it.
	# shellcheck disable=SC2046 # the file
	apt_install $work/apt-dkms.log $(cd $work/debs && debs ratelimit-dkms)
	check "apt install ./ratelimit-dkms_*.deb succeeds offline" [ $? -eq 0 ]
	for p in $pkgs; do
		check "$p is installed" \
			[ "$(dpkg-query -W -f='${db:Status-Status}' "$p")" = installed ]
	done
	check "ratelimit-dkms provides ratelimit-modules" \
		sh -c "dpkg-query -W -f='\${Provides}' ratelimit-dkms | grep -q 'ratelimit-modules'"
	dkms status
	check "DKMS built and installed ratelimit for $kver" \
		sh -c "dkms status -m ratelimit -k $kver | grep ': installed' >/dev/null"
	f=$(modinfo -k "$kver" -F filename ratelimit 2>/dev/null)
	say "modinfo: $f"
	check "modinfo finds DKMS's ratelimit.ko for $kver" \
		sh -c "echo '$f' | grep -q '^/lib/modules/$kver/updates/dkms/ratelimit.ko'"
	check "the module is loaded after the install (ratelimit-dkms's postinst)" loaded
	udevadm settle
	check "/dev/ratelimit is root:ratelimit 0666 after the install" \
		[ "$(stat -c '%U:%G %a' /dev/ratelimit)" = "root:ratelimit 666" ]
	check "installing created no limiter ($(limiters | tr '\n' ' '))" \
		sh -c "[ -d $sys ] && [ -z \"\$(limiters)\" ]"
	check "$conf is still empty" sh -c "[ -z \"\$(ls -A $conf)\" ]"
	check "ratelimit.service is condition-skipped or active, not failed ($(unit_state ratelimit.service))" \
		sh -c '! systemctl is-failed -q ratelimit.service'

	# The admin copies the example and applies it.
	cp $example $conf/
	check "systemctl start ratelimit applies the copied example" \
		systemctl start ratelimit.service
	check "ratelimit.service is active with the example" \
		systemctl is-active -q ratelimit.service
	for n in $(conf_names); do
		check "limiter $n of the example exists, mode $(attr "$n" mode)" [ -d "$sys/$n" ]
	done
	systemctl status -l --no-pager ratelimit.service | sed 's/^/  /'

	security ratelimit.service 4.5
	security rlsyncd.service 2.5

	# The docs the man pages cite, installed; no other layout's paths.
	man_sources > $work/man.txt
	check "the packages' man pages name no /usr/local path" \
		sh -c "! grep -n '/usr/local' $work/man.txt"
	check "the packages' man pages have no @TOKEN@ left" \
		sh -c "! grep -n '@[A-Z]*@' $work/man.txt"
	sed 's/\\-/-/g' $work/man.txt |
		grep -o '/usr/share/\(doc\|ratelimit\)/[A-Za-z0-9._/-]*[A-Za-z0-9_/]' |
		LC_ALL=C sort -u > $work/cited.txt
	sed 's/^/  cited: /' $work/cited.txt
	check "the man pages cite docs in /usr/share/doc" \
		grep -q "^$doc/" $work/cited.txt
	while read -r f; do
		check "$f, cited by a man page, exists" [ -e "$f" ]
	done < $work/cited.txt
	for f in global.md hierarchy.md python.md performance.md; do
		check "$doc/$f is installed" [ -f $doc/$f ]
	done
}

stage2()
{
	settle
	# systemd-modules-load runs before journald: its lines may reach the
	# journal through the kernel's log, without a unit, so by its name.
	journalctl -b -o short-monotonic --no-pager -t systemd-modules-load \
		-u ratelimit.service | sed 's/^/  /'
	check "systemd-modules-load loaded ratelimit at boot" \
		sh -c "journalctl -b -o cat -t systemd-modules-load |
			grep -q \"Inserted module 'ratelimit'\""
	check "ratelimit.service is active after the boot" \
		systemctl is-active -q ratelimit.service
	# Started once systemd-modules-load had finished (monotonic us).
	loaded_at=$(systemctl show -P ActiveEnterTimestampMonotonic systemd-modules-load.service)
	started_at=$(systemctl show -P InactiveExitTimestampMonotonic ratelimit.service)
	say "systemd-modules-load done at $loaded_at us, ratelimit.service started at $started_at us"
	check "ratelimit.service started after systemd-modules-load.service" \
		sh -c "[ ${loaded_at:-0} -gt 0 ] && [ ${started_at:-0} -ge ${loaded_at:-0} ]"

	# /dev/ratelimit: the owner, group and mode of the shipped rule.
	rule=/lib/udev/rules.d/60-ratelimit.rules
	want=$(sed -n 's/^KERNEL=="ratelimit".*OWNER="\([^"]*\)".*GROUP="\([^"]*\)".*MODE="0*\([0-7]*\)".*/\1:\2 \3/p' $rule)
	have=$(stat -c '%U:%G %a' /dev/ratelimit)
	say "/dev/ratelimit: $have, the rule says: $want"
	check "/dev/ratelimit has the udev rule's owner and mode ($want)" \
		[ "$have" = "${want:-none}" ]

	# The limiters of the example the admin copied in stage 1.
	ls -l $conf
	names=$(conf_names)
	say "limiters of $conf: $(echo "$names" | tr '\n' ' ')"
	check "the copied example in $conf declares limiters" [ -n "$names" ]
	for n in $names; do
		check "limiter $n of $conf exists in $sys" [ -d "$sys/$n" ]
	done
	rlctl apply $conf > $work/apply2.txt 2>&1
	rc=$?
	sed 's/^/  /' $work/apply2.txt
	check "rlctl apply at once again succeeds" [ "$rc" -eq 0 ]
	check "rlctl apply at once again says it has nothing to change" \
		grep -q 'nothing to change' $work/apply2.txt

	# A normal user and the tools on them: rlrun on a limiter with a
	# concurrency limit, rlpipe on the one of the highest rate.
	n=$(echo "$names" | head -n 1)
	jobs=$n
	for x in $names; do
		[ "$(attr "$x" concurrency)" -gt 0 ] 2>/dev/null && { jobs=$x; break; }
	done
	bytes=$(for x in $names; do
		[ "$(attr "$x" unlimited)" = 1 ] || echo "$(attr "$x" rate) $x"
	done | sort -n | tail -n 1 | cut -d' ' -f2)
	bytes=${bytes:-$n}
	as $user rlctl show "$n" | sed 's/^/  /'
	check "$user: rlctl show $n" as $user rlctl show "$n"
	check "$user: rlctl list shows $n" \
		sh -c "runuser -u $user -- rlctl list | grep -q '$n'"
	check "$user: rlrun -n $jobs -- true" as $user rlrun -n "$jobs" -- true
	check "$user: rlrun -n $jobs passes on the command's exit status" \
		sh -c "runuser -u $user -- rlrun -n '$jobs' -- sh -c 'exit 3'; [ \$? = 3 ]"
	out=$(as $user sh -c "head -c 3000 /dev/zero | rlpipe -n '$bytes' | wc -c")
	check "$user: rlpipe -n $bytes copies its input ($out of 3000 bytes)" [ "$out" = 3000 ]

	# libratelimit-dev's header name, and a man page per function.
	check "libratelimit-dev: <libratelimit.h>, no <ratelimit.h>" \
		sh -c '[ -f /usr/include/libratelimit.h ] && [ ! -e /usr/include/ratelimit.h ]'
	check "libratelimit-dev: rl_acquire(3) is libratelimit(3)" \
		[ /usr/share/man/man3/rl_acquire.3.gz -ef /usr/share/man/man3/libratelimit.3.gz ]

	# A program built with pkg-config against libratelimit-dev.
	mkdir -p /tmp/pc && chmod 777 /tmp/pc
	cat > /tmp/pc/rlpc.c <<-'EOF'
	#include <stdio.h>
	#include <string.h>
	#include <linux/ratelimit_dev.h>
	#include <libratelimit.h>

	int main(int argc, char **argv)
	{
		int fd, ret;

		if (argc != 2)
			return 2;
		fd = rl_open_named(argv[1], 0, 0, NULL);
		if (fd < 0) {
			fprintf(stderr, "rlpc: open %s: %s\n", argv[1], strerror(-fd));
			return 1;
		}
		ret = rl_acquire(fd, 1);
		if (ret) {
			fprintf(stderr, "rlpc: acquire: %s\n", strerror(-ret));
			return 1;
		}
		printf("rlpc: one token of %s (%s)\n", argv[1], RL_DEVICE_PATH);
		rl_close(fd);
		return 0;
	}
	EOF
	say "pkg-config --cflags --libs libratelimit: $(pkg-config --cflags --libs libratelimit)"
	check "pkg-config's libdir is the multiarch one" \
		[ "$(pkg-config --variable=libdir libratelimit)" = "/usr/lib/$(gcc -print-multiarch)" ]
	# shellcheck disable=SC2016 # the user's shell expands it
	check "$user: gcc rlpc.c \$(pkg-config --cflags --libs libratelimit)" \
		as $user sh -c 'cd /tmp/pc && gcc -Wall -Werror -o rlpc rlpc.c $(pkg-config --cflags --libs libratelimit)'
	ldd /tmp/pc/rlpc
	check "rlpc is linked against libratelimit.so.1" \
		sh -c "ldd /tmp/pc/rlpc | grep -q 'libratelimit.so.1 => /lib/'"
	check "$user: rlpc takes a token of $n" as $user /tmp/pc/rlpc "$n"
	check "the packaged tools use libratelimit.so.1" \
		sh -c "ldd /usr/bin/rlctl | grep -q 'libratelimit.so.1 => /lib/'"

	# python3-kratelimit on the same limiter.
	# shellcheck disable=SC2016 # Python's code
	check "$user: python3 takes a token of $n (python3-kratelimit)" \
		as $user python3 -c 'import sys
from kratelimit import Limiter
lim = Limiter.attach(sys.argv[1])
lim.acquire(timeout=60)
print("python3: one token of", sys.argv[1])' "$n"

	reload_test
	override_test
	remove_test
}

# rlsyncd.service, hardened, as the user rlsyncd: a limiter declared for
# it (group ratelimit, mode 0664) linked to a Redis of the test's own;
# Redis gone while it runs (it stays, the kernel's lease ends), then a
# start without Redis (it fails, and says why).
rlsyncd_test()
{
	g=rlglobal
	port=6390
	printf '# make check-host\n[%s]\nrate = 10/s\ngroup = ratelimit\nmode = 0664\n\n[global %s]\nredis = 127.0.0.1:%s\nrate = 100/s\n' \
		$g $g $port > $conf/70-$g.conf
	gid=$(getent group ratelimit | cut -d: -f3)
	check "systemctl reload ratelimit creates $g, group ratelimit, mode 0664" \
		sh -c "systemctl reload ratelimit && [ \"\$(sed -n 's/^group //p; s/^mode //p' $sys/$g/stat | tr '\\n' ' ')\" = '$gid 0664 ' ]"
	redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
		--dir /tmp --daemonize yes --logfile /tmp/rlredis.log
	check "a redis-server listens on port $port" \
		wait_for 30 sh -c "redis-cli -p $port ping | grep -q PONG"

	systemctl start rlsyncd.service
	rc=$?
	systemctl status -l --no-pager rlsyncd.service | sed 's/^/  /'
	check "systemctl start rlsyncd succeeds: ready (Type=notify)" \
		sh -c "[ $rc -eq 0 ] && systemctl is-active -q rlsyncd.service &&
			[ \"\$(systemctl show -P Type rlsyncd.service)\" = notify ]"
	pid=$(systemctl show -P MainPID rlsyncd.service)
	say "rlsyncd: pid $pid, $(ps -o user:20=,group:20= -p "$pid")"
	check "rlsyncd runs as user rlsyncd, group ratelimit" \
		[ "$(ps -o user:20=,group:20= -p "$pid" | awk '{ print $1, $2 }')" = "rlsyncd ratelimit" ]
	check "rlsyncd has no capability" \
		sh -c "grep -q '^CapEff:[[:space:]]*0*\$' /proc/$pid/status && grep -q '^CapBnd:[[:space:]]*0*\$' /proc/$pid/status"
	check "rlsyncd's state of $g says Redis is up" \
		wait_for 30 grep -q '^redis_up=1$' /run/rlsyncd/$g
	sed 's/^/  /' /run/rlsyncd/$g
	check "the kernel holds rlsyncd's lease on $g" grep -q '^kernel_lease=1$' /run/rlsyncd/$g

	redis-cli -p $port shutdown nosave >/dev/null 2>&1
	check "rlsyncd sees Redis go" wait_for 30 grep -q '^redis_up=0$' /run/rlsyncd/$g
	sleep 12	# beyond the lease (10 s): the kernel's fallback holds $g
	say "$g without Redis: rate $(attr $g rate) per $(attr $g period_ns) ns"
	sed 's/^/  /' /run/rlsyncd/$g
	check "rlsyncd.service stays active without Redis" systemctl is-active -q rlsyncd.service
	check "$g is still there" [ -d $sys/$g ]
	check "systemctl stop rlsyncd stops it cleanly" \
		sh -c "systemctl stop rlsyncd.service && ! systemctl is-failed -q rlsyncd.service"

	since=$(date '+%Y-%m-%d %H:%M:%S')
	sleep 1
	timeout 60 systemctl start rlsyncd.service
	rc=$?
	sleep 1
	systemctl status -l --no-pager rlsyncd.service | sed 's/^/  /'
	journalctl -u rlsyncd.service --since "$since" -o cat --no-pager > $work/noredis.txt
	check "rlsyncd.service without Redis does not start (status $rc, $(unit_state rlsyncd.service))" \
		sh -c "[ $rc -ne 0 ] && ! systemctl is-active -q rlsyncd.service"
	check "its journal names the Redis it cannot reach" \
		grep -q "redis 127.0.0.1:$port" $work/noredis.txt
	systemctl stop rlsyncd.service
	systemctl reset-failed rlsyncd.service
	rm -f $conf/70-$g.conf
}

# Edit the configuration and reload while a waiter sleeps; then a broken
# file, which must change nothing.
reload_test()
{
	t=rltest
	printf '# make check-host\n[%s]\nrate = 1/1000s\nburst = 1\nmode = 0666\n' $t \
		> $conf/50-$t.conf
	check "systemctl reload ratelimit creates $t" \
		sh -c "systemctl reload ratelimit && test -d $sys/$t"
	say "$t: rate $(attr $t rate) per $(attr $t period_ns) ns"
	# The bucket starts full: the first token at once, the second in
	# 1000 s.
	as $user rlpace -N $t -n 2 > $work/pace.txt 2>&1 &
	pace=$!
	check "a waiter sleeps on $t" wait_for 120 sh -c "[ \"\$(sed -n 's/^waiters //p' $sys/$t/stat)\" = 1 ]"
	granted=$(attr $t granted)
	sed -i 's|^rate = .*|rate = 100/s|' $conf/50-$t.conf
	check "systemctl reload ratelimit after the edit" systemctl reload ratelimit
	say "$t: rate $(attr $t rate) per $(attr $t period_ns) ns"
	check "the reload changed the live rate of $t to 100/s" \
		[ "$(attr $t rate)/$(attr $t period_ns)" = "100/1000000000" ]
	check "the waiter is served after the reload" wait_for 120 sh -c "! kill -0 $pace 2>/dev/null"
	wait $pace
	rc=$?
	cat $work/pace.txt
	check "the waiter got its token (rlpace exit status $rc)" [ "$rc" -eq 0 ]
	check "$t granted its token to the waiter, none waits" \
		[ "$(attr $t granted) $(attr $t waiters)" = "$((granted + 1)) 0" ]

	# A broken file next to a valid edit: the reload fails, says where,
	# and applies nothing, the valid edit included.
	limiters_state > $work/state-before.txt
	sed -i 's|^rate = .*|rate = 5/s|' $conf/50-$t.conf
	printf '[broken]\nrate = 10/s\ncolour = blue\n' > $conf/60-broken.conf
	since=$(date '+%Y-%m-%d %H:%M:%S')
	sleep 1
	systemctl reload ratelimit
	rc=$?
	check "systemctl reload ratelimit fails on a broken file (status $rc)" [ "$rc" -ne 0 ]
	journalctl -u ratelimit.service --since "$since" -o cat --no-pager > $work/broken.txt
	sed 's/^/  /' $work/broken.txt
	check "the failed reload names $conf/60-broken.conf:3" \
		grep -q "$conf/60-broken.conf:3:" $work/broken.txt
	limiters_state > $work/state-after.txt
	check "the failed reload changed no limiter" cmp $work/state-before.txt $work/state-after.txt
	check "the failed reload created nothing" [ ! -e $sys/broken ]
	check "ratelimit.service stays active after the failed reload" \
		systemctl is-active -q ratelimit.service
	rm -f $conf/60-broken.conf
	check "systemctl reload ratelimit works again without the broken file" \
		sh -c "systemctl reload ratelimit &&
			[ \"\$(sed -n 's/^rate //p; s/^period_ns //p' $sys/$t/config | tr '\\n' /)\" = 5/1000000000/ ]"
}

# The documented override: /dev/ratelimit for group ratelimit only.
override_test()
{
	o=/etc/udev/rules.d/60-ratelimit.rules
	echo 'KERNEL=="ratelimit", SUBSYSTEM=="misc", GROUP="ratelimit", MODE="0660"' > $o
	udevadm control --reload
	udevadm trigger --action=change --settle /dev/ratelimit
	have=$(stat -c '%U:%G %a' /dev/ratelimit)
	say "/dev/ratelimit with the override: $have"
	check "the override in $o makes /dev/ratelimit root:ratelimit 0660" \
		[ "$have" = "root:ratelimit 660" ]
	check "$member (group ratelimit) still uses $n" as $member /tmp/pc/rlpc "$n"
	check "$user (not in the group) may no longer open /dev/ratelimit" \
		sh -c "runuser -u $user -- /tmp/pc/rlpc '$n' 2>&1 | grep -q 'Permission denied'"
	# rlsyncd reaches the device through the group.
	rlsyncd_test
	rm -f $o
	udevadm control --reload
	udevadm trigger --action=change --settle /dev/ratelimit
	check "without the override /dev/ratelimit is back to root:ratelimit 0666" \
		[ "$(stat -c '%U:%G %a' /dev/ratelimit)" = "root:ratelimit 666" ]
}

# apt remove, then purge: the module stays loaded with its limiters (nothing
# is unloaded under its users), DKMS's module is gone, and no file is left.
remove_test()
{
	for p in $pkgs; do
		dpkg -L "$p"
	done | LC_ALL=C sort -u > $work/dpkg-L.txt
	while read -r f; do
		[ -d "$f" ] || echo "$f"
	done < $work/dpkg-L.txt > $work/owned.txt
	say "the packages own $(wc -l < $work/owned.txt) files"
	rm -f $conf/50-$t.conf	# the test's own file
	before=$(limiters | tr '\n' ' ')

	timeout 1200 apt-get remove -y $pkgs > $work/remove.log 2>&1
	rc=$?
	cat $work/remove.log
	check "apt remove succeeds" [ "$rc" -eq 0 ]
	check "DKMS knows no ratelimit after the remove" \
		[ -z "$(dkms status -m ratelimit 2>/dev/null)" ]
	check "no ratelimit.ko is left in /lib/modules" \
		[ -z "$(find /lib/modules -name 'ratelimit.ko*')" ]
	check "apt remove leaves the loaded module loaded" loaded
	check "apt remove leaves the limiters ($before)" \
		[ "$(limiters | tr '\n' ' ')" = "$before" ]

	# What the remove left: the packages with conffiles.
	left=$(for p in $pkgs; do
		dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$p" 2>/dev/null
	done | sed -n 's/^config-files //p')
	say "apt purge $(echo "$left" | tr '\n' ' ')"
	timeout 1200 apt-get purge -y $left > $work/purge.log 2>&1
	rc=$?
	cat $work/purge.log
	check "apt purge succeeds" [ "$rc" -eq 0 ]
	for p in $pkgs; do
		st=$(dpkg-query -W -f='${db:Status-Status}' $p 2>/dev/null)
		check "$p is purged (dpkg: ${st:-unknown})" \
			[ "${st:-not-installed}" = not-installed ]
	done
	while read -r f; do
		[ -e "$f" ] || [ -L "$f" ] && echo "$f"
	done < $work/owned.txt > $work/left.txt
	sed 's/^/  left: /' $work/left.txt
	check "no file of dpkg -L is left" [ ! -s $work/left.txt ]

	# The admin's copy of the example is the admin's: dpkg leaves it
	# (and so its directory); the admin removes it.
	check "apt purge leaves the admin's $conf/example.conf" [ -f $conf/example.conf ]
	rm -rf $conf

	files > $work/files-after.txt
	# DKMS keeps the key it signs modules with (/var/lib/dkms/mok.*), made
	# on its first build: the machine's, for every DKMS module.
	diff $work/files-before.txt $work/files-after.txt |
		grep '^[<>]' | grep -v '^> /var/lib/dkms/mok\.' > $work/files-diff.txt
	sed 's/^/  /' $work/files-diff.txt
	check "after the purge the file system holds the files it had before" \
		[ ! -s $work/files-diff.txt ]
	check "the module unloads after the purge" rmmod ratelimit
}

say "stage $stage on $kver"
case $stage in
1) stage1 ;;
2) stage2 ;;
*) fail "unknown stage $stage" ;;
esac
dmesg_dump
mark "stage $stage done"
sync
