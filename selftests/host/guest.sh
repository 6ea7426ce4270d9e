#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-host, inside the Debian 12 guest (selftests/host/run.sh boots
# it; the image's rl-check-host.service runs this as part of
# multi-user.target, and powers off when it ends). The second disk, mounted on /mnt, holds this
# script and the packages in debs/. rl.stage= on the command line says
# which boot this is:
#   1  as a sysadmin would: apt install ./*.deb (offline), DKMS builds the
#      module, ratelimit.service starts
#   2  after the reboot: the module loaded at boot, the udev rule, the
#      example limiters, a normal user's tools and a program built with
#      pkg-config, systemctl reload with a waiter asleep, a broken file,
#      the udev override for group ratelimit, apt remove and purge
# Every check prints "@@rl PASS|FAIL what"; "@@rl stage N done" ends a
# stage, after the kernel log between "@@rl dmesg-begin/-end".

# shellcheck disable=SC2086 # $pkgs and $left are lists

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

pkgs="ratelimit-dkms libratelimit1 libratelimit-dev ratelimit-tools"
user=rluser		# a normal user
member=rlmember		# a normal user in group ratelimit
conf=/etc/ratelimit.d
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

# attr NAME FILE: a sysfs attribute of a named limiter.
attr() { cat "$sys/$1/$2" 2>/dev/null; }

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

stage1()
{
	settle
	mkdir -p $work
	# The users and group of the test exist before the "before" list,
	# as an admin's would.
	groupadd --system ratelimit
	useradd --create-home --shell /bin/sh $user
	useradd --create-home --shell /bin/sh --groups ratelimit $member
	files > $work/files-before.txt
	check "no ratelimit module for $kver before the install" \
		sh -c "! modinfo -k $kver ratelimit >/dev/null 2>&1"

	mkdir -p $work/debs
	cp /mnt/debs/*.deb $work/debs/
	say "installing $(cd $work/debs && echo ./*.deb)"
	(cd $work/debs && timeout 2400 apt-get install -y ./*.deb) > $work/apt.log 2>&1
	rc=$?
	cat $work/apt.log
	check "apt install ./*.deb succeeds offline" [ "$rc" -eq 0 ]
	for p in $pkgs; do
		check "$p is installed" \
			[ "$(dpkg-query -W -f='${db:Status-Status}' "$p")" = installed ]
	done
	dkms status
	check "DKMS built and installed ratelimit for $kver" \
		sh -c "dkms status -m ratelimit -k $kver | grep ': installed' >/dev/null"
	f=$(modinfo -k "$kver" -F filename ratelimit 2>/dev/null)
	say "modinfo: $f"
	check "modinfo finds DKMS's ratelimit.ko for $kver" \
		sh -c "echo '$f' | grep -q '^/lib/modules/$kver/updates/dkms/ratelimit.ko'"
	check "ratelimit.service is active after the install" \
		systemctl is-active -q ratelimit.service
	check "the module is loaded after the install" loaded
	systemctl status -l --no-pager ratelimit.service | sed 's/^/  /'
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

	# The shipped example's limiters.
	ls -l $conf
	names=$(conf_names)
	say "limiters of $conf: $(echo "$names" | tr '\n' ' ')"
	check "the shipped $conf declares limiters" [ -n "$names" ]
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

	reload_test
	override_test
	remove_test
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
	check "a waiter sleeps on $t" wait_for 120 sh -c "[ \"\$(cat $sys/$t/waiters)\" = 1 ]"
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
			[ \"\$(cat $sys/$t/rate)/\$(cat $sys/$t/period_ns)\" = 5/1000000000 ]"
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
	rm -f $o
	udevadm control --reload
	udevadm trigger --action=change --settle /dev/ratelimit
	check "without the override /dev/ratelimit is back to root:root 0666" \
		[ "$(stat -c '%U:%G %a' /dev/ratelimit)" = "root:root 666" ]
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
