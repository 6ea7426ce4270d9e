#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""What a guest that stopped answering was doing (selftests/vm/run.sh).

  monitor.py watch SECS SOCKET [FLAG]
      Wait SECS seconds; if QEMU's monitor still answers on SOCKET then,
      print its "info registers -a" and send it "nmi": the guest's kernel,
      booted with unknown_nmi_panic, panics with the backtraces of its
      CPUs (panic_print=0x40), and the panic ends QEMU. Sooner if the file
      FLAG appears (run.sh makes it at the kernel's first soft lockup or
      RCU stall, which the kernel itself turns into a panic): GRACE seconds
      after it, if QEMU still runs, the same, and GRACE seconds later
      "quit".
  monitor.py where REGISTERS SYSTEM_MAP KERNEL_TEXT MODULE_KO MODULE_TEXT
      Name the function each CPU was in, from the registers printed by
      watch: the kernel's System.map moved to where its _text was loaded
      (KASLR), and the module's symbols at the address its .text was
      loaded at (empty when not known).
"""
import os
import re
import socket
import subprocess
import sys
import time


def monitor(sock, cmd, timeout=5.0):
    """Send @cmd (if any) to the monitor, return what it printed up to its
    next prompt."""
    if cmd:
        sock.sendall(cmd.encode() + b"\n")
    buf = b""
    end = time.monotonic() + timeout
    while b"(qemu)" not in buf and time.monotonic() < end:
        sock.settimeout(max(0.1, end - time.monotonic()))
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        if not data:
            break
        buf += data
    return buf.decode(errors="replace").replace("\r", "")


GRACE = 15


def connect(path):
    """The monitor on @path, at its first prompt, or None: QEMU ended."""
    if not os.path.exists(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        return None	# QEMU has just ended
    monitor(sock, None)	# its banner, up to its first prompt
    return sock


def watch(secs, path, flag=None):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if flag and os.path.exists(flag):
            break
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
    stuck = bool(flag and os.path.exists(flag))
    if stuck:
        time.sleep(GRACE)	# for the kernel's own panic
    sock = connect(path)
    if not sock:
        return 0
    print(monitor(sock, "info registers -a"), flush=True)
    monitor(sock, "nmi")
    sock.close()
    if stuck:
        time.sleep(GRACE)	# for the NMI's panic
        sock = connect(path)
        if sock:
            print("monitor: QEMU still ran %d s after the NMI: quit" % GRACE,
                  flush=True)
            monitor(sock, "quit")
            sock.close()
    return 0


def symbols(system_map, ktext, ko, text):
    """(address, name) of the kernel's and the module's text symbols."""
    syms = []
    try:
        with open(system_map) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "tTwW":
                    syms.append((int(parts[0], 16), parts[2]))
    except OSError:
        pass
    base = [a for a, s in syms if s == "_text"]
    if ktext and base:
        syms = [(a + ktext - base[0], s) for a, s in syms]
    if text:
        out = subprocess.run(["nm", "-n", "--defined-only", ko],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tT":
                syms.append((text + int(parts[0], 16),
                             parts[2] + " [ratelimit]"))
    syms.sort()
    return syms


def name(syms, addr):
    lo, hi = 0, len(syms)
    while lo < hi:
        mid = (lo + hi) // 2
        if syms[mid][0] <= addr:
            lo = mid + 1
        else:
            hi = mid
    if not lo:
        return hex(addr)
    base, sym = syms[lo - 1]
    return "%s+%#x" % (sym, addr - base)


def where(regs, system_map, ktext, ko, text):
    syms = symbols(system_map, int(ktext or "0", 16), ko, int(text or "0", 16))
    cpu = None
    found = []
    with open(regs) as f:
        for line in f:
            m = re.match(r"CPU#(\d+)", line)
            if m:
                cpu = m.group(1)
            m = re.search(r"RIP=([0-9a-f]{16})", line)
            if m and cpu is not None:
                found.append("CPU%s %s" % (cpu, name(syms, int(m.group(1), 16))))
                cpu = None
    print("; ".join(found) if found else "no registers")
    return 0


def main(argv):
    if len(argv) in (4, 5) and argv[1] == "watch":
        return watch(float(argv[2]), argv[3], *argv[4:])
    if len(argv) == 7 and argv[1] == "where":
        return where(*argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
