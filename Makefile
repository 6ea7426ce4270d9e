# SPDX-License-Identifier: GPL-2.0-only
#
# ratelimit: out-of-tree kernel module, libratelimit, tools and tests.
#
#   make            module (against KDIR), library, tools; make selftests unit:
#                   the tests (they need linux-source: make ksrc)
#   make node       the Node.js package's addon (node/, Documentation/node.md),
#                   after what it needs (scripts/deps.sh node); not part of
#                   make, run, shell or bench, which need no Node.js; check
#                   builds it
#   make check      all + static checks + unit tests + selftests in a QEMU guest
#                   booting Debian's 6.1 kernel; KVER= picks the guest kernel(s):
#                   6.1, 6.12, 6.12-rt (PREEMPT_RT), debug, or a list of them
#   make check-matrix   the same for 6.1, 6.12 and 6.12-rt (static checks once)
#   make check-debug    selftests on a KASAN/lockdep/UBSAN/kmemleak kernel built
#                   from linux-source-6.12 (cached in /var/cache/ratelimit)
#   make check-all  check-matrix and check-debug in one run (what CI runs),
#                   but 6.12's guest: its module is built with W=1 and not
#                   booted (RL_NO_BOOT=6.12; RL_NO_BOOT= boots it too)
#   make check-fresh    the README's install and development.md's first
#                   commands, as written, in chroots of pristine Debian 12
#                   roots (mmdebstrap, from this machine's apt sources;
#                   cached in /var/cache/ratelimit) from a clone of HEAD;
#                   needs root. CI runs it too
#   make check-host the Debian packages (make deb) installed, rebooted, used,
#                   reloaded, removed and purged in a Debian 12 guest with
#                   systemd (selftests/host/; RL_APPEND=1 adds its results
#                   to build/results.txt; CI runs it after check-all)
#   make check-containers   names per IPC namespace and the CDI spec in
#                   Debian's podman (rootful, rootless), crun and docker,
#                   in check-host's guest with them (selftests/host/containers.sh; RL_APPEND=1 as
#                   check-host's); CI runs it after check-host
#   make check-lockup   the rig's own test: a CPU stuck in the guest's kernel
#                   ends the guest within 60 s with every CPU's backtrace
#                   (selftests/vm/lockup.sh; make check runs it too)
#   make run        a pacing demo in a QEMU guest (ends by itself; KVER= too)
#   make shell      an interactive QEMU guest with the module loaded (KVER= too)
#   make bench      the benchmark in a QEMU guest, results and plots in
#                   build/bench (Documentation/performance.md); not in check
#   make style      checkpatch, and the names that comments give
#                   (scripts/namecheck.py);  make static: style + W=1
#                   build + sparse
#   make mancheck   every function the library exports has a man page
#   make install    module, library, headers, tools (not rlbench), man pages,
#                   the systemd unit, udev rule and modules-load.d entry,
#                   the docs and the example configuration in DOCDIR
#                   (PREFIX, DESTDIR), then ldconfig; install-user: all of it
#                   but the module (install-lib, install-tools, install-man:
#                   the man pages only, install-doc); uninstall
#   make deb        the Debian packages (scripts/deb.sh) in build/deb. It
#                   first installs debian/control's Build-Depends and
#                   nothing else (apt-get build-dep ./, scripts/deps.sh
#                   build-dep; needs root or sudo). lintian checks them
#                   when it is installed; LINTIAN=1 makes it required (make
#                   check-host and CI install it: scripts/deps.sh deb)
#   make deps       install the Debian packages all of this needs (KVER= too;
#                   deps-matrix, deps-all: all of the guest kernels)
#   make check-global-redis   global limits without the module, against
#                   private redis-servers (selftests/global/, about 2.5
#                   min; make check runs it too): the Redis library,
#                   rlsyncd's errors, AUTH/ACLs, TLS, three agents on
#                   simulated limiters, a Sentinel failover, pipelining,
#                   batch mode, a Redis Cluster resharded under load.
#                   make global: rlsyncd (needs libhiredis-dev, libssl-dev,
#                   libsystemd-dev); install-global: it, its Lua library,
#                   man page and systemd unit (rlsyncd.service);
#                   bench-global: its Redis round trips and CPU for 1 to
#                   1000 resources per host

VERSION := 0.1.0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
# systemd, udev and modules-load.d read /usr/local/lib/... too, so the
# default PREFIX works for them.
UNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
MODULESLOADDIR ?= $(PREFIX)/lib/modules-load.d
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# Documentation/*.md and the example configuration (examples/); the man
# pages cite them there (@DOCDIR@, substituted by install-man).
DOCDIR ?= $(PREFIX)/share/doc/ratelimit
# rlsyncd's Redis Function library, ratelimit.lua.
PKGDATADIR ?= $(PREFIX)/share/ratelimit
# The group ratelimit and rlsyncd's user (dist/*.sysusers); systemd-sysusers
# reads no /usr/local, and runs after an install without DESTDIR.
SYSUSERSDIR ?= /usr/lib/sysusers.d

# The module is built against the running kernel, else the newest one
# installed (resolved when make starts: make and make install need the
# headers installed beforehand). check, run, shell and bench build it for
# the kernel that the QEMU rig boots, KVER, which scripts/deps.sh installs
# (or scripts/kdebug.sh builds) in their first recipe lines. So nothing
# about that kernel may be in a $(shell) or a variable: make expands a
# recipe as a whole before its first line runs. selftests/vm/kernel.sh
# tells where it is, run in the recipe line that needs it.
ifeq ($(origin KDIR),undefined)
KDIR := $(shell for d in /lib/modules/$$(uname -r)/build \
	$$(ls -d /lib/modules/*/build 2>/dev/null | sort -rV); do \
	[ -d "$$d" ] && { echo "$$d"; break; }; done)
endif
KVER ?= 6.1
MATRIX := 6.1 6.12 6.12-rt
VM_ENV = RL_KVER=$(KVER)$(if $(filter debug,$(KVER)), RL_VM_MEM=2048)
KBUILD = $(MAKE) -C $(KDIR) M=$(CURDIR) W=1

B := build
CFLAGS ?= -O2 -g
WFLAGS := -Wall -Wextra $(if $(WERROR),-Werror)
USER_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(WFLAGS) -I uapi -I lib -I tools/common
DEPS = -MMD -MP -MF $@.d

LIB_OBJS := $(patsubst lib/%.c,$(B)/lib/obj/%.o,$(wildcard lib/*.c))
LIB_SO := $(B)/lib/libratelimit.so.1
LIB_A := $(B)/lib/libratelimit.a
LIB_PC := $(B)/lib/libratelimit.pc
# tools/NAME.c is the tool NAME; tools/NAME_PART.c are parts of it, linked
# into it (rlctl_apply.c, rlctl_conf.c: rlctl); tools/common/*.c are linked
# into every tool (tool.h).
TOOL_PARTS := $(wildcard tools/*_*.c)
TOOLS := $(patsubst tools/%.c,$(B)/tools/%,\
	$(filter-out $(TOOL_PARTS),$(wildcard tools/*.c)))
TOOL_COMMON := $(patsubst tools/%.c,$(B)/tools/obj/%.o,$(wildcard tools/common/*.c))
# The benchmark of make bench, tools/bench/*.c: built for the QEMU rig
# (make all, check, bench), never installed (install-user, the Debian
# packages).
RLBENCH := $(B)/tools/rlbench
BENCH_OBJS := $(patsubst tools/%.c,$(B)/tools/obj/%.o,$(wildcard tools/bench/*.c))
# TOOLS_LINK=shared (the default) links the tools against libratelimit.so.1,
# as make install and the Debian packages want; static is what the QEMU
# rig's busybox guest needs, and its targets ask for it. The mode is
# kept in $(B)/tools/link-mode, which the tools depend on: a change of
# mode links them again.
# TOOLS_RPATH, where a shared tool looks for libratelimit.so.1 first:
# $ORIGIN/../lib, build/lib for build/tools/NAME, so that the tools run
# from the tree, and PREFIX/lib for PREFIX/bin/NAME after make install.
# The Debian packages set it empty (debian/rules): no rpath there.
# rlctl looks owners and groups up through NSS (getpwnam_r, getgrnam_r):
# linked shared, every module of nsswitch.conf (LDAP, SSSD, systemd-homed)
# works; linked static, glibc's built-in files service (/etc/passwd,
# /etc/group) does, which is what the guest needs, and other modules only
# where the glibc it was linked with is installed: the linker's warning
# about getpwnam_r in a static link says so, and is expected.
TOOLS_LINK ?= shared
TOOLS_RPATH ?= $$ORIGIN/../lib
ifeq ($(TOOLS_LINK),shared)
TOOL_DEPS = $(LIB_SO) $(B)/lib/libratelimit.so
TOOL_LIBS = -L$(B)/lib -lratelimit -pthread \
	$(if $(TOOLS_RPATH),-Xlinker -rpath -Xlinker '$(TOOLS_RPATH)')
else ifeq ($(TOOLS_LINK),static)
TOOL_DEPS = $(LIB_A)
TOOL_LIBS = -static -pthread $(LIB_A)
else
$(error TOOLS_LINK is static or shared, not $(TOOLS_LINK))
endif
SELFTESTS := $(patsubst selftests/%.c,$(B)/selftests/%,$(wildcard selftests/*_test.c))
# The library's tests, one program per feature: selftests/lib/NAME_test.c
# is build/selftests/lib_NAME_test, run in the guest with the others.
LIB_TESTS := $(patsubst selftests/lib/%.c,$(B)/selftests/lib_%,\
	$(wildcard selftests/lib/*_test.c))
# The kernel's kselftest headers, as system headers: under -Wextra their
# macros would warn about an unused parameter in every TEST().
KSFT := $(B)/ksrc/include/kselftest_harness.h
KSFT_CFLAGS := -isystem $(B)/ksrc/include
CHECKPATCH := $(B)/ksrc/scripts/checkpatch.pl

# Host unit tests: the pure token arithmetic of the driver, built against
# the kernel API shims in selftests/unit/shim/, lib/ code, and the command
# lines of the tools (tools_usage_test runs build/tools/*). The library's
# header is "libratelimit.h" and the driver's "ratelimit.h": no name is in
# two of the -I directories, so their order does not matter.
UNIT_DRIVER_SRCS := $(wildcard driver/bucket.c)
UNIT_DRIVER_OBJS := $(patsubst driver/%.c,$(B)/unit/obj/%.o,$(UNIT_DRIVER_SRCS))
# Tool code without ioctls, tested on the host too: rlctl's file parser,
# the reader of ratelimit.d files it shares with rlsyncd, and rlctl's
# table of tunables.
UNIT_TOOL_OBJS := $(patsubst tools/%.c,$(B)/unit/obj/tools/%.o,\
	$(wildcard tools/rlctl_conf*.c tools/common/ratelimit_d.c \
	tools/rlctl_keys.c))
UNIT := $(if $(UNIT_DRIVER_SRCS),$(patsubst selftests/unit/%.c,$(B)/unit/%,\
	$(wildcard selftests/unit/*_test.c)))
UNIT_CFLAGS = $(CFLAGS) $(WFLAGS) -I selftests/unit/shim -I uapi -I lib \
	-I driver -I tools -I tools/common $(KSFT_CFLAGS)
# The version the tools' --version prints (tool.h) and the tests expect;
# Kbuild reads VERSION from this file for the module's MODULE_VERSION.
USER_CFLAGS += -D'RL_VERSION="$(VERSION)"'
UNIT_CFLAGS += -D'RL_VERSION="$(VERSION)"'

.PHONY: all module lib tools selftests unit ksrc deps deps-matrix deps-all \
	check check-matrix check-debug check-all check-fresh check-host vm-build \
	check-lockup check-containers \
	run shell bench style w1 sparse static install install-module \
	install-user install-lib install-tools install-man install-doc mancheck \
	uninstall deb clean rlbench
.DELETE_ON_ERROR:

# The selftests and unit tests need kselftest_harness.h (make ksrc, from
# linux-source): only the check targets and vm-build ask for them.
all: module lib tools rlbench

module:
	$(if $(KDIR),,$(error no kernel build dir: make deps, or set KDIR))
	$(KBUILD) modules

lib: $(LIB_SO) $(B)/lib/libratelimit.so $(LIB_A) $(LIB_PC)
tools: $(TOOLS)
rlbench: $(RLBENCH)
selftests: $(SELFTESTS) $(LIB_TESTS)
unit: $(UNIT_DRIVER_OBJS) $(UNIT_TOOL_OBJS) $(UNIT)

$(B)/lib/obj/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -fPIC $(DEPS) -c -o $@ $<

$(LIB_SO): $(LIB_OBJS) lib/libratelimit.map
	$(CC) $(USER_CFLAGS) -shared -pthread -Wl,-soname,libratelimit.so.1 \
		-Wl,--version-script=lib/libratelimit.map -Wl,-z,defs \
		$(LDFLAGS) -o $@ $(LIB_OBJS)

$(B)/lib/libratelimit.so: | $(LIB_SO)
	ln -sf libratelimit.so.1 $@

$(LIB_A): $(LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# Files that name install paths, made from their .in templates, and the
# man pages (install-man, install-global): no page cites a path of
# another layout.
SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	-e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	-e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	-e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@PKGDATADIR@|$(PKGDATADIR)|g' \
	-e 's|@UDEVRULESDIR@|$(UDEVRULESDIR)|g' \
	-e 's|@MODULESLOADDIR@|$(MODULESLOADDIR)|g'

$(LIB_PC): lib/libratelimit.pc.in
	@mkdir -p $(@D)
	$(SUBST) $< > $@

$(B)/tools/obj/%.o: tools/%.c
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(DEPS) -c -o $@ $<

# A tool's parts: the objects of tools/NAME_*.c.
tool_parts = $(patsubst tools/%.c,$(B)/tools/obj/%.o,$(filter tools/$(1)_%,$(TOOL_PARTS)))
$(foreach t,$(TOOLS),$(eval $(t): $(call tool_parts,$(notdir $(t))) $(TOOL_COMMON)))

# Rewritten only when TOOLS_LINK or TOOLS_RPATH changes, so that the
# tools follow them.
TOOL_MODE := $(B)/tools/link-mode
$(TOOL_MODE): FORCE
	@mkdir -p $(@D)
	@echo '$(TOOLS_LINK) $(TOOLS_RPATH)' | cmp -s - $@ || \
		echo '$(TOOLS_LINK) $(TOOLS_RPATH)' > $@

.PHONY: FORCE
FORCE:

$(B)/tools/%: tools/%.c $(TOOL_DEPS) $(TOOL_MODE)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(DEPS) $(LDFLAGS) -o $@ $< $(filter %.o,$^) \
		$(TOOL_LIBS)

$(RLBENCH): $(BENCH_OBJS) $(TOOL_COMMON) $(TOOL_DEPS) $(TOOL_MODE)
	$(CC) $(USER_CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(TOOL_LIBS) \
		-luring

$(B)/selftests/%: selftests/%.c $(LIB_A) $(KSFT)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(DEPS) -static -pthread \
		$(LDFLAGS) -o $@ $< $(LIB_A) $(SELFTEST_LIBS)

# Acquires through io_uring, on liburing (liburing-dev: scripts/deps.sh).
$(B)/selftests/ratelimit_uring_test $(B)/selftests/ratelimit_fuzz_test: \
	SELFTEST_LIBS := -luring
# The library's mmap() and mremap() made to fail midway (swap_fails_midway).
$(B)/selftests/ratelimit_fast_test: \
	SELFTEST_LIBS := -Wl,--wrap=mmap -Wl,--wrap=mremap

$(B)/selftests/lib_%: selftests/lib/%.c $(LIB_A) $(KSFT)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(KSFT_CFLAGS) $(DEPS) -static -pthread \
		$(LDFLAGS) -o $@ $< $(LIB_A)

$(B)/unit/obj/%.o: driver/%.c
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) $(DEPS) -c -o $@ $<

$(B)/unit/obj/tools/%.o: tools/%.c
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) $(DEPS) -c -o $@ $<

$(B)/unit/%: selftests/unit/%.c $(UNIT_DRIVER_OBJS) $(UNIT_TOOL_OBJS) \
		$(LIB_A) $(KSFT)
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) $(DEPS) -pthread $(LDFLAGS) -o $@ $< \
		$(UNIT_DRIVER_OBJS) $(UNIT_TOOL_OBJS) $(LIB_A)

# The Python package (python/): its tests run in the QEMU guest as a
# selftest (selftests/vm/python.sh gives the guest Debian's python3), its
# ABI check against uapi/ on the host as a unit test; pystyle, part of
# style, byte-compiles it and runs pyflakes where Debian's is installed.
PY_SELFTEST := $(B)/selftests/ratelimit_python_test
PY_UNIT := $(B)/unit/python_abi_test
PY_SRCS = $(wildcard python/kratelimit/*.py python/_build/*.py python/tests/*.py python/examples/*.py) \
	selftests/vm/python_files.py selftests/vm/output_check.py \
	selftests/vm/monitor.py scripts/namecheck.py selftests/global/paced.py
selftests: $(PY_SELFTEST)
unit: $(PY_UNIT)
$(PY_SELFTEST): selftests/ratelimit_python_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@
$(PY_UNIT): selftests/unit/python_abi_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@

# The Node.js package (node/, Documentation/node.md). make node: its addon,
# node/build/Release/kratelimit.node, built by node-gyp against the
# installed Node.js headers (NODE_DIR/include/node: nothing downloaded) and
# $(B)/lib's libratelimit.so.1; make node and make check first install what
# it needs (scripts/deps.sh node). Not in make (all) nor in selftests, so
# that make run, shell and bench need no Node.js; make check builds it and
# runs its tests (node/test, node --test) in the guest, which
# selftests/vm/node.sh gives the node binary.
NODE_DIR ?= $(firstword $(foreach d,/usr /usr/local,$(if \
	$(wildcard $(d)/include/node/node_api.h),$(d))))
NODE_GYP ?= $(firstword $(wildcard /usr/bin/node-gyp \
	/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js))
NODE_ADDON := node/build/Release/kratelimit.node
NODE_SELFTEST := $(B)/selftests/ratelimit_node_test
.PHONY: node
node:
	@scripts/deps.sh node
	@$(MAKE) --no-print-directory $(NODE_ADDON)
selftests: $(NODE_SELFTEST)
$(NODE_ADDON): node/src/kratelimit.cc node/binding.gyp node/scripts/paths.js \
		lib/libratelimit.h uapi/linux/ratelimit_dev.h $(LIB_SO) \
		$(B)/lib/libratelimit.so
	$(if $(NODE_DIR),,$(error no Node.js headers (include/node/node_api.h): scripts/deps.sh node))
	$(if $(NODE_GYP),,$(error no node-gyp: scripts/deps.sh node))
	cd node && KRATELIMIT_LIBDIR=$(CURDIR)/$(B)/lib \
		CXXFLAGS="$(if $(WERROR),-Werror)" node $(NODE_GYP) rebuild \
		--nodedir=$(NODE_DIR) --loglevel=warn
$(NODE_SELFTEST): selftests/ratelimit_node_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@

# The tree's SPDX lines and the README's promises (license per part,
# length, package list): a host unit test too.
DOCS_UNIT := $(B)/unit/docs_test
unit: $(DOCS_UNIT)
$(DOCS_UNIT): selftests/unit/docs_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@

# The bash completions (dist/*.bash-completion) against the tools' --help,
# a host unit test in bash.
COMPLETION_UNIT := $(B)/unit/completion_test
unit: $(COMPLETION_UNIT)
$(COMPLETION_UNIT): selftests/unit/completion_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@

# mypy --strict on the package (py.typed: its types are its users'):
# a static check of make check (selftests/vm/check.sh), Debian's mypy.
.PHONY: pystyle mypy
mypy:
	@/usr/bin/python3 -c 'import mypy' 2>/dev/null || \
		{ echo "mypy: not installed (make deps installs Debian's mypy)"; exit 1; }
	cd python && /usr/bin/python3 -m mypy --strict --no-incremental kratelimit

style: pystyle
pystyle:
	@/usr/bin/python3 -c 'import sys; [compile(open(f).read(), f, "exec") \
		for f in sys.argv[1:]]' $(PY_SRCS)
	@if /usr/bin/python3 -c 'import pyflakes' 2>/dev/null; then \
		/usr/bin/python3 -m pyflakes $(PY_SRCS); fi

# Not $(RLBENCH).d: a build of rlbench from the one file it was once
# would send make looking for tools/rlbench.c.
-include $(filter-out $(RLBENCH).d,\
	$(wildcard $(B)/*/*.d $(B)/*/obj/*.d $(B)/*/obj/*/*.d))

$(KSFT) $(CHECKPATCH):
	scripts/ksrc.sh

ksrc:
	@scripts/ksrc.sh

deps:
	@scripts/deps.sh $(KVER)

deps-matrix:
	@scripts/deps.sh matrix

deps-all:
	@scripts/deps.sh all

# checkpatch on all C sources. Userspace (uapi/, lib/, tools/, selftests/)
# skips kernel-only advice: kernel types (u64), BIT() and __printf(), which
# userspace lacks, and CamelCase, which <inttypes.h>'s PRIu64 & co. trip.
CHECKPATCH_FLAGS := --strict --no-tree --root=$(B)/ksrc --terse --show-types
USER_IGNORE := PREFER_KERNEL_TYPES,BIT_MACRO,CAMELCASE,PREFER_DEFINED_ATTRIBUTE_MACRO
# The trace header is laid out as the kernel's TRACE_EVENT()s are, which
# --strict takes for open-ended lines and misaligned parentheses.
TRACE_IGNORE := OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT
# scripts/namecheck.py: the files and functions that comments name exist,
# and a comment tying a function to a file is right; in driver/, the files
# and the rl_*() functions (the kernel's own are not in the tree).
NAMECHECK := uapi lib tools selftests python --kernel driver
# The files that expand the table of tunables (driver/tunables.h): its
# RL_TUNABLE() names a field twice, for its offset and its size (an
# identifier, no side effects).
TABLE_IGNORE := MACRO_ARG_REUSE
TABLE_USERS = $(shell grep -rl --include='*.c' '^\#include ".*tunables\.h"' \
	driver tools selftests)
style: $(CHECKPATCH)
	@rc=0; \
	k=$$(find driver -name '*.[ch]' ! -name '*_trace.h' | sort); \
	t=$$(find driver -name '*_trace.h' | sort); \
	u=$$(find uapi lib tools selftests -name '*.[ch]' 2>/dev/null | sort); \
	x='$(TABLE_USERS)'; \
	k=$$(echo "$$k" | grep -vxF "$$(echo $$x | tr ' ' '\n')"); \
	u=$$(echo "$$u" | grep -vxF "$$(echo $$x | tr ' ' '\n')"); \
	xk=$$(echo $$x | tr ' ' '\n' | grep '^driver/'); \
	xu=$$(echo $$x | tr ' ' '\n' | grep -v '^driver/'); \
	scripts/checkpatch.sh $(CHECKPATCH) '$(CHECKPATCH_FLAGS)' \
		$(TABLE_IGNORE) "$$xk" $(TABLE_IGNORE),$(USER_IGNORE) "$$xu" \
		- "$$k" $(TRACE_IGNORE) "$$t" $(USER_IGNORE) "$$u" || rc=1; \
	/usr/bin/python3 scripts/namecheck.py $(NAMECHECK) || rc=1; \
	exit $$rc

# A fresh W=1 build of the module; any warning fails.
w1:
	@mkdir -p $(B)
	@find driver -name '*.o' -delete 2>/dev/null; rm -f ratelimit.ko
	@rc=0; $(KBUILD) modules > $(B)/w1.log 2>&1 || rc=1; cat $(B)/w1.log; \
	! grep -i 'warning:' $(B)/w1.log >/dev/null && exit $$rc; \
	echo "w1: warnings in the module build"; exit 1

# sparse on every module source; any report about driver/ fails.
sparse:
	@mkdir -p $(B)
	@rc=0; $(KBUILD) C=2 modules > $(B)/sparse.log 2>&1 || rc=1; \
	cat $(B)/sparse.log; \
	! grep -E 'driver/[^ :]*:[0-9]+:' $(B)/sparse.log >/dev/null && exit $$rc; \
	echo "sparse: reports about driver/"; exit 1

static: style w1 sparse

# Build everything for the kernel (one KVER) the QEMU rig boots, but the
# Node.js addon: run, shell and bench install no Node.js and put node and
# the addon into the guest only when make node or make check built it
# (selftests/vm/run.sh).
vm-build:
	$(if $(word 2,$(KVER)),$(error KVER=$(KVER): run shell and bench boot one kernel))
	@scripts/deps.sh $(KVER)
	$(if $(filter debug,$(KVER)),@scripts/kdebug.sh)
	@$(MAKE) --no-print-directory ksrc
	@kdir=$$(selftests/vm/kernel.sh $(KVER) dir) && \
		$(MAKE) --no-print-directory all selftests KDIR="$$kdir" \
		TOOLS_LINK=static
	@[ -f $(NODE_ADDON) ] || echo "vm-build: no Node.js addon in the guest:" \
		"run, shell and bench need none (make node builds it)"

run: vm-build
	@$(VM_ENV) selftests/vm/run.sh run

shell: vm-build
	@$(VM_ENV) selftests/vm/run.sh shell

# The benchmark (Documentation/performance.md), not part of check: timings
# are no assertions. One boot of the guest on the TSC clocksource (the
# guest's default, HPET, makes every clock read an emulated device access);
# result files and PNGs in build/bench. BENCH_SCALE scales durations and
# sample counts, BENCH_SECTIONS picks sections (comma-separated).
BENCH_SCALE ?= 1
BENCH_SECTIONS ?=
BENCH_APPEND = tsc=reliable clocksource=tsc rl.bench.scale=$(BENCH_SCALE) \
	$(if $(BENCH_SECTIONS),rl.bench.sections=$(BENCH_SECTIONS))
bench: vm-build
	@scripts/deps.sh bench
	@rm -rf $(B)/bench
	@$(VM_ENV) RL_VM_OUT=$(B)/vm/bench RL_BENCH_OUT=$(B)/bench \
		RL_TEST_TIMEOUT=3000 RL_VM_TIMEOUT=3600 \
		RL_VM_APPEND="$(strip $(BENCH_APPEND))" selftests/vm/run.sh bench
	gnuplot -e "dir='$(B)/bench'" scripts/bench.gp
	@echo "bench: CSV, JSON and PNGs in $(B)/bench"

# The rig's own test (selftests/vm/lockup.sh): a CPU stuck in the guest's
# kernel (a test module spinning with preemption off) ends the guest at
# the first soft lockup or RCU stall, within 60 s, with every CPU's
# backtrace. make check runs it on its first kernel.
check-lockup: vm-build
	@$(VM_ENV) selftests/vm/lockup.sh "$$(selftests/vm/kernel.sh $(KVER) dir)"

# The checks: userspace once, then check.sh builds the module for each
# guest kernel and boots it. The last line is "N passed, N failed".
check: CHECK_KVERS = $(KVER)
check-matrix: CHECK_KVERS = $(MATRIX)
check-debug: CHECK_KVERS = debug
check-all: CHECK_KVERS = $(MATRIX) debug
# Debian's stock 6.12 is the one kernel whose suites run on another
# kernel of the same version and Debian's configuration (6.12-rt) and on
# a debug build of it: CI builds its module and leaves its guest (about
# 250 s) to make check-matrix (Documentation/development.md, "CI").
check-all: RL_NO_BOOT ?= 6.12
check check-matrix check-debug check-all:
	@scripts/deps.sh $(CHECK_KVERS) global node
	@$(MAKE) --no-print-directory ksrc
	@$(MAKE) --no-print-directory lib tools rlbench selftests unit \
		$(NODE_ADDON) WERROR=1 TOOLS_LINK=static
	@MAKE="$(MAKE)" RL_KVERS="$(CHECK_KVERS)" RL_NO_BOOT="$(RL_NO_BOOT)" \
		selftests/vm/check.sh

# The README's install and development.md's first commands on fresh
# Debian 12 machines, from a clone of HEAD (selftests/fresh.sh). The last
# line is "N passed, N failed".
check-fresh:
	@scripts/deps.sh fresh
	@selftests/fresh.sh

# install-user: the library, headers, tools but rlbench, man pages (with a
# link per function of libratelimit(3)), bash completion, systemd unit,
# udev rule, modules-load.d entry, CDI spec ($(SYSCONFDIR)/cdi), an empty
# $(SYSCONFDIR)/ratelimit.d (no limiter until an admin declares one), the
# docs and the example configuration in $(DOCDIR). Debian's packages are built from it
# (debian/rules), and take DKMS's dkms.conf from $(B)/dist.
$(B)/dist/dkms.conf: dist/dkms.conf.in Makefile
	@mkdir -p $(@D)
	$(SUBST) $< > $@

install: install-module install-user
install-user: install-lib install-tools install-man install-doc

# Debian's headers ship no System.map, so kbuild skips depmod: run it, or
# modprobe would not find the module.
install-module: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) $(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) \
		modules_install
	@rel=$$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$$/\1/p' \
		$(KDIR)/include/generated/utsrelease.h) && [ -n "$$rel" ] && \
	echo "depmod $$rel" && depmod $(if $(DESTDIR),-b $(DESTDIR)) "$$rel"

# install-lib: the library (then ldconfig, unless into a DESTDIR), its
# headers and pkg-config file.
install-lib: lib
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libratelimit.so.1 $(DESTDIR)$(LIBDIR)/libratelimit.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	$(SUBST) lib/libratelimit.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libratelimit.pc
	install -m 644 uapi/linux/ratelimit_dev.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 644 lib/libratelimit.h $(DESTDIR)$(INCLUDEDIR)/
	$(if $(DESTDIR),,ldconfig)

# install-tools: the tools (linked as TOOLS_LINK says: shared by default)
# and the rest of the system integration.
install-tools: tools
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(MODULESLOADDIR) \
		$(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(SYSCONFDIR)/ratelimit.d \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/cdi
	$(if $(TOOLS),install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/)
	@for t in $(notdir $(TOOLS)); do \
		echo "install dist/$$t.bash-completion $(DESTDIR)$(COMPLETIONDIR)/$$t"; \
		install -m 644 dist/$$t.bash-completion \
			$(DESTDIR)$(COMPLETIONDIR)/$$t || exit 1; \
	done
	$(SUBST) dist/ratelimit.service.in > $(DESTDIR)$(UNITDIR)/ratelimit.service
	install -m 644 dist/60-ratelimit.rules $(DESTDIR)$(UDEVRULESDIR)/
	install -m 644 dist/modules-load.conf $(DESTDIR)$(MODULESLOADDIR)/ratelimit.conf
	install -m 644 dist/ratelimit.sysusers $(DESTDIR)$(SYSUSERSDIR)/ratelimit.conf
	install -m 644 dist/ratelimit.cdi.yaml $(DESTDIR)$(SYSCONFDIR)/cdi/ratelimit.yaml
	$(if $(DESTDIR),,systemd-sysusers ratelimit.conf)

# install-doc: Documentation/*.md and its ABI file, which the man pages
# cite, and the example configuration, which an admin copies into
# $(SYSCONFDIR)/ratelimit.d.
install-doc:
	install -d $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR)/ABI/testing
	install -m 644 $(wildcard Documentation/*.md) $(DESTDIR)$(DOCDIR)/
	install -m 644 Documentation/ABI/testing/sysfs-kernel-ratelimit \
		$(DESTDIR)$(DOCDIR)/ABI/testing/
	install -m 644 dist/example.conf $(DESTDIR)$(DOCDIR)/examples/

# uninstall: what install put there, but the files of /etc/ratelimit.d
# (an admin's); the module too when KDIR's release has it.
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libratelimit.so.1 \
		$(DESTDIR)$(LIBDIR)/libratelimit.so $(DESTDIR)$(LIBDIR)/libratelimit.a \
		$(DESTDIR)$(LIBDIR)/pkgconfig/libratelimit.pc \
		$(DESTDIR)$(INCLUDEDIR)/linux/ratelimit_dev.h \
		$(DESTDIR)$(INCLUDEDIR)/libratelimit.h \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
		$(addprefix $(DESTDIR)$(COMPLETIONDIR)/,$(notdir $(TOOLS))) \
		$(DESTDIR)$(UNITDIR)/ratelimit.service \
		$(DESTDIR)$(UDEVRULESDIR)/60-ratelimit.rules \
		$(DESTDIR)$(MODULESLOADDIR)/ratelimit.conf \
		$(DESTDIR)$(SYSUSERSDIR)/ratelimit.conf \
		$(DESTDIR)$(SYSCONFDIR)/cdi/ratelimit.yaml
	rm -rf $(DESTDIR)$(DOCDIR)
	@for m in $(filter-out $(GLOBAL_MANS),$(wildcard Documentation/man/*.[1-8])); do \
		rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}; \
	done
	@sed -n '/^\.SH NAME/,/^\\-/p' Documentation/man/libratelimit.3 | \
		tr ', ' '\n\n' | grep -x 'rl_[a-z_]*' | while read -r f; do \
		rm -f $(DESTDIR)$(MANDIR)/man3/$$f.3; \
	done
	@rel=$$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$$/\1/p' \
		$(KDIR)/include/generated/utsrelease.h 2>/dev/null); \
	m=$(DESTDIR)/lib/modules/$$rel/extra/ratelimit.ko; \
	if [ -n "$$rel" ] && [ -e "$$m" ]; then \
		echo "rm $$m; depmod $$rel"; rm -f "$$m" && \
		depmod $(if $(DESTDIR),-b $(DESTDIR)) "$$rel"; fi
	$(if $(DESTDIR),,ldconfig)

# The man pages, with this layout's paths (SUBST), and a link to
# libratelimit(3) for every function its NAME section lists, so that man
# rl_acquire finds it.
install-man:
	@for m in $(filter-out $(GLOBAL_MANS),$(wildcard Documentation/man/*.[1-8])); do \
		d=$(DESTDIR)$(MANDIR)/man$${m##*.}; \
		echo "install $$m $$d/"; \
		install -d $$d && $(SUBST) $$m > $$d/$${m##*/} || exit 1; \
	done
	@sed -n '/^\.SH NAME/,/^\\-/p' Documentation/man/libratelimit.3 | \
		tr ', ' '\n\n' | grep -x 'rl_[a-z_]*' | while read -r f; do \
		ln -sf libratelimit.3 $(DESTDIR)$(MANDIR)/man3/$$f.3 || exit 1; \
	done

# Every function the library exports has a man page once installed
# (scripts/mancheck.sh, on a scratch install-man); part of make check.
mancheck: $(LIB_SO)
	@rm -rf $(B)/mancheck
	@$(MAKE) --no-print-directory -s install-man \
		DESTDIR=$(CURDIR)/$(B)/mancheck >/dev/null
	@scripts/mancheck.sh $(LIB_SO) $(B)/mancheck$(MANDIR)

# The Debian packages, built in a copy of the tree (build/deb): first the
# Build-Depends of debian/control, then lintian if installed (LINTIAN=1:
# required).
deb:
	@scripts/deps.sh build-dep
	@LINTIAN="$(LINTIAN)" scripts/deb.sh

# Global limits (Documentation/global.md): rlsyncd, in build/global as
# it links libhiredis (the protocol) and OpenSSL (TLS), and the test of
# the Redis library.
RLSYNCD_SRCS := $(wildcard tools/global/*.c) $(wildcard tools/common/*.c)
RLSYNCD_LUA := $(PKGDATADIR)/ratelimit.lua
# Its man page goes with it (install-global), not with install-user.
GLOBAL_MANS := Documentation/man/rlsyncd.8
.PHONY: global install-global
global: $(B)/global/rlsyncd

$(B)/global/rlsyncd: $(RLSYNCD_SRCS) $(wildcard tools/global/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -I tools -I tools/common \
		-D'RLS_LUA_PATH="$(RLSYNCD_LUA)"' \
		$(LDFLAGS) -o $@ $(RLSYNCD_SRCS) $(LIB_A) -lhiredis -lssl -lcrypto -lsystemd -lm \
		-pthread

# rlsyncd on a simulated limiter (selftests/global/fake_kernel.c), for
# check-global-redis on a host without the module.
$(B)/global/rlsyncd-fake: $(RLSYNCD_SRCS) $(wildcard tools/global/*.h) \
		selftests/global/fake_kernel.c $(B)/lib/obj/ratespec.o
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -DRLS_FAKE -I tools -I tools/common $(LDFLAGS) \
		-o $@ $(RLSYNCD_SRCS) selftests/global/fake_kernel.c $(B)/lib/obj/ratespec.o \
		-lhiredis -lssl -lcrypto -lsystemd -lm

install-global: global
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(dir $(RLSYNCD_LUA)) \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(SYSUSERSDIR)
	install -m 755 $(B)/global/rlsyncd $(DESTDIR)$(BINDIR)/
	install -m 644 dist/rlsyncd.bash-completion $(DESTDIR)$(COMPLETIONDIR)/rlsyncd
	install -m 644 tools/global/ratelimit.lua $(DESTDIR)$(RLSYNCD_LUA)
	$(SUBST) dist/rlsyncd.service.in > $(DESTDIR)$(UNITDIR)/rlsyncd.service
	install -m 644 dist/rlsyncd.sysusers $(DESTDIR)$(SYSUSERSDIR)/rlsyncd.conf
	$(if $(DESTDIR),,systemd-sysusers rlsyncd.conf)
	install -d $(DESTDIR)$(MANDIR)/man8
	$(SUBST) $(GLOBAL_MANS) > $(DESTDIR)$(MANDIR)/man8/$(notdir $(GLOBAL_MANS))

# The in-guest test of global limits, a selftest: the script, its client
# (static, as the selftests) and rlsyncd (selftests/vm/run.sh copies it
# and redis-server into the guest with their shared libraries). Without
# libhiredis-dev, libssl-dev and libsystemd-dev only the script: it skips.
GLOBAL_SELFTEST := $(B)/selftests/ratelimit_rlsyncd_test
selftests: $(GLOBAL_SELFTEST) $(B)/global/rlgclient \
	$(if $(wildcard /usr/include/hiredis/hiredis.h),$(if \
	$(wildcard /usr/include/systemd/sd-daemon.h),$(if \
	$(wildcard /usr/include/openssl/ssl.h),$(B)/global/rlsyncd)))
$(GLOBAL_SELFTEST): selftests/ratelimit_rlsyncd_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@

# Sentinel failover in the guest (issue #25): the same binaries.
SENTINEL_SELFTEST := $(B)/selftests/ratelimit_sentinel_test
selftests: $(SENTINEL_SELFTEST)
$(SENTINEL_SELFTEST): selftests/ratelimit_sentinel_test.sh
	@mkdir -p $(@D)
	install -m 755 $< $@

$(B)/global/rlgclient: selftests/global/client.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(DEPS) -static $(LDFLAGS) -o $@ $< $(LIB_A)

$(B)/global/lease_test: selftests/global/lease_test.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WFLAGS) $(DEPS) $(LDFLAGS) -o $@ $< -lhiredis -lm

.PHONY: check-global-redis
check-global-redis:
	@scripts/deps.sh global
	@$(MAKE) --no-print-directory global $(B)/global/rlsyncd-fake \
		$(B)/global/lease_test WERROR=1
	@selftests/global/run.sh $(B)

# Lease renewals of 1..1000 resources per agent, in slots of their own
# and co-located by a hash tag: calls, round trips and CPU
# (selftests/global/bench.sh), and fleets of 300 and 1,000 agents on one
# resource of a Redis Cluster at 100 calls/s, and of 100 agents with 100
# resources each, in slots of their own and behind three hash tags
# (selftests/global/fleet.sh; FLEET="HOSTS:REFRESH_MS[:RESOURCES[:TAGS]]
# ..."); Documentation/global.md; not in check.
FLEET ?= 300:3000 1000:10000 100:10000:100 100:10000:100:yes
.PHONY: bench-global
bench-global:
	@scripts/deps.sh global
	@$(MAKE) --no-print-directory $(B)/global/rlsyncd-fake WERROR=1
	@selftests/global/bench.sh $(B)/global/rlsyncd-fake
	@for f in $(FLEET); do \
		RLSYNCD_FAKE=$(B)/global/rlsyncd-fake \
			selftests/global/fleet.sh $$(echo $$f | tr : ' ') || exit 1; \
	done

check-host:
	@MAKE="$(MAKE)" RL_APPEND="$(RL_APPEND)" selftests/host/run.sh

check-containers:
	@MAKE="$(MAKE)" RL_APPEND="$(RL_APPEND)" selftests/host/containers.sh

clean:
	$(if $(wildcard $(KDIR)/Makefile),$(MAKE) -C $(KDIR) M=$(CURDIR) clean)
	rm -rf $(B) node/build .checkpatch-camelcase.*
