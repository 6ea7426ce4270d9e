#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# make check-containers, inside the Debian 12 guest with podman, crun and
# docker.io (selftests/host/containers.sh boots it; the image's
# rl-check-host.service runs this as /mnt/guest.sh and powers off when it
# ends). /mnt holds the module, the CDI spec and rootfs.tar (a root of
# static rlctl and rlpace). Names per IPC namespace in a real runtime: two
# containers that each create "api" get two limiters; a container cannot
# see, attach to or unlink the host's or the other's; --ipc=container:
# shares one, --ipc=host sees the host's; rlctl share is the only way
# across; the CDI device name gives the device; a rootless container (uid
# 1000) creates its own names, owned by uid 1000, and its root cannot
# change the mode of, or unlink, the host's limiter shared into it; docker
# run --device gives the device and a namespace of its own; a container's
# exit takes its names, and the module unloads after. Every check prints
# "@@rl PASS|FAIL what".

exec </dev/null >/dev/console 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8

sys=/sys/kernel/ratelimit
img=localhost/rl:test
dev=--device=/dev/ratelimit
t0=$(date +%s)

mark() { echo "@@rl $*"; }
check() { what=$1; shift; if "$@"; then mark PASS "$what"; else mark FAIL "$what"; fi; }
say() { echo "guest: $* (+$(($(date +%s) - t0)) s)"; }
# run ARGS...: a container of the image that goes when done.
run() { podman run --rm --network none "$@"; }
# not CMD...: CMD fails.
not() { ! "$@"; }
# The inode number of the IPC namespace of container $1.
ns_of() { stat -L -c %i "/proc/$(podman inspect -f '{{.State.Pid}}' "$1")/ns/ipc"; }
# wait_for SECONDS CMD...: until CMD succeeds, at most SECONDS.
wait_for()
{
	n=$(($1 * 10))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.1
	done
}

say "podman $(podman --version | cut -d' ' -f3), crun $(crun --version | sed -n 's/^crun version //p')"
check "the module loads" insmod /mnt/ratelimit.ko
udevadm settle
check "/dev/ratelimit is there" [ -c /dev/ratelimit ]
mkdir -p /etc/cdi
cp /mnt/ratelimit.cdi.yaml /etc/cdi/ratelimit.yaml
cp /mnt/rlctl /usr/local/bin/rlctl
check "podman import of the tools' root" podman import -q /mnt/rootfs.tar $img
say "image imported"
rlctl create hostonly 5/s >/dev/null
check "the host has its own limiter hostonly" [ -d $sys/hostonly ]

# Two containers that each create api at their own rate, held by rlpace.
podman run -d --name a --network none "$dev" $img /rlpace -N api -r 1/s -n 1000000 -q >/dev/null
podman run -d --name b --network none "$dev" $img /rlpace -N api -r 2/s -n 1000000 -q >/dev/null
wait_for 60 sh -c 'podman exec a /rlctl list | grep -q "^api "'
wait_for 60 sh -c 'podman exec b /rlctl list | grep -q "^api "'
say "containers a and b up"
check "container a's api is its own (1/s)" sh -c 'podman exec a /rlctl list | grep -Eq "^api +1/s"'
check "container b's api is its own (2/s)" sh -c 'podman exec b /rlctl list | grep -Eq "^api +2/s"'
ia=$(ns_of a)
ib=$(ns_of b)
check "two IPC namespaces ($ia, $ib)" [ "$ia" != "$ib" ]
check "the host's root sees them under ipc:INUM" test -d "$sys/ipc:$ia/api" -a -d "$sys/ipc:$ib/api"
check "the host has no api of its own" [ ! -e $sys/api ]
check "rlctl list on the host shows hostonly, not api" \
	sh -c 'rlctl list | grep -q "^hostonly " && ! rlctl list | grep -q "^api "'

# The host's limiter is out of reach.
check "a container does not list the host's limiter" sh -c '! podman exec a /rlctl list | grep -q "^hostonly "'
check "a container cannot attach to the host's limiter" not podman exec a /rlctl show hostonly
check "a container cannot unlink the host's limiter" not podman exec a /rlctl rm hostonly
check "the host's limiter is still there" [ -d $sys/hostonly ]

# Sharing an IPC namespace shares its names; --ipc=host is the host's.
check "--ipc=container:a sees a's api" sh -c "podman run --rm --network none --ipc container:a $dev $img /rlctl list | grep -Eq '^api +1/s'"
check "--ipc=host sees the host's names" sh -c "podman run --rm --network none --ipc host $dev $img /rlctl list | grep -q '^hostonly '"

# An explicit share, only into a.
check "rlctl share hostonly into a" rlctl share hostonly "$(podman inspect -f '{{.State.Pid}}' a)"
check "a finds the shared hostonly" podman exec a /rlctl show hostonly
check "b still does not" not podman exec b /rlctl show hostonly

# The CDI spec gives the device; without a device there is none.
check "--device ratelimit/device=ratelimit (CDI) gives /dev/ratelimit" \
	run --device ratelimit/device=ratelimit $img /rlpace -r 1000/s -n 1 -q
check "without --device the container has no /dev/ratelimit" \
	not run $img /rlpace -r 1000/s -n 1 -q

# Rootless: user rl (uid 1000), one uid mapped (no newuidmap in the
# image), its own storage. Root inside is host uid 1000 to the module.
useradd -m -u 1000 rl
sed -i '/^rl:/d' /etc/subuid /etc/subgid 2>/dev/null
install -d -o rl -g rl -m 0700 /run/user/1000
upodman()
{
	runuser -u rl -- env HOME=/home/rl XDG_RUNTIME_DIR=/run/user/1000 \
		podman --storage-driver vfs --cgroup-manager cgroupfs "$@"
}
rapi_listed() { upodman exec r /rlctl list | grep -Eq "^rapi +3/s"; }
check "rootless: podman import as uid 1000" upodman import -q /mnt/rootfs.tar $img
upodman run -d --name r --network none --cgroups disabled "$dev" $img \
	/rlpace -N rapi -r 3/s -n 1000000 -q >/dev/null
check "rootless: the container creates its own rapi through --device" wait_for 60 rapi_listed
ir=$(stat -L -c %i "/proc/$(upodman inspect -f '{{.State.Pid}}' r)/ns/ipc")
say "rootless container r up"
check "rootless: its rapi is owned by host uid 1000" \
	grep -qx "owner 1000" "$sys/ipc:$ir/rapi/stat"
check "rootless: rlctl share hostonly into it" \
	rlctl share hostonly "$(upodman inspect -f '{{.State.Pid}}' r)"
check "rootless: root inside reads the shared hostonly (mode 0644)" upodman exec r /rlctl show hostonly
check "rootless: root inside cannot change its mode (not its owner)" \
	not upodman exec r /rlctl set hostonly --mode 0666
check "rootless: root inside cannot unlink the share (no host CAP_SYS_ADMIN)" \
	not upodman exec r /rlctl rm hostonly
check "rootless: hostonly is still there, mode 0644" grep -qx "mode 0644" $sys/hostonly/stat
upodman rm -f r >/dev/null
check "rootless: its names went with it" wait_for 10 sh -c "[ ! -e $sys/ipc:$ir ]"

# Docker (Debian's docker.io, started at boot): --device, as documented.
dapi_listed() { docker exec dk /rlctl list | grep -Eq "^api +4/s"; }
check "docker: dockerd answers" wait_for 120 docker info -f '{{.ServerVersion}}'
check "docker: docker import of the tools' root" sh -c "docker import /mnt/rootfs.tar rl:test >/dev/null"
docker run -d --name dk --network none --device /dev/ratelimit rl:test \
	/rlpace -N api -r 4/s -n 1000000 -q >/dev/null
check "docker: the container creates its own api through --device" wait_for 60 dapi_listed
id=$(stat -L -c %i "/proc/$(docker inspect -f '{{.State.Pid}}' dk)/ns/ipc")
say "docker container dk up"
check "docker: in an IPC namespace of its own" test -d "$sys/ipc:$id/api" -a "$id" != "$ia"
check "docker: the host's limiter is out of reach" not docker exec dk /rlctl show hostonly
check "docker: without --device the container has no /dev/ratelimit" \
	not docker run --rm --network none rl:test /rlpace -r 1000/s -n 1 -q
docker rm -f dk >/dev/null
check "docker: its names went with it" wait_for 10 sh -c "[ ! -e $sys/ipc:$id ]"

# The containers' exit takes their names; the host's stays.
podman rm -f a b >/dev/null
say "containers a and b removed"
check "a's names went with it" wait_for 10 sh -c "[ ! -e $sys/ipc:$ia ]"
check "b's names went with it" wait_for 10 sh -c "[ ! -e $sys/ipc:$ib ]"
check "the host's limiter stays" [ -d $sys/hostonly ]
rlctl rm hostonly
check "nothing holds the module: it unloads" rmmod ratelimit
say "done"
mark dmesg-begin
dmesg
mark dmesg-end
mark "stage containers done"
sync
