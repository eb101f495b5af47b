#!/usr/bin/env bash
# Wait until no other process holds Debian's package-manager locks (an unattended upgrade, a
# second apt-get, the machine's own start-up installs), then return. Sourced by setup scripts;
# `apt-get -o DPkg::Lock::Timeout` alone does not cover `apt-get update`'s lists lock.
#
# Environment: ENGRAM_APT_LOCKS (space-separated lock files; the default is apt's and dpkg's),
# ENGRAM_APT_WAIT (seconds to wait at most, default 900).

wait_for_apt() {
  local locks=${ENGRAM_APT_LOCKS:-"/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock"}
  local limit=${ENGRAM_APT_WAIT:-900}
  # apt and dpkg take fcntl (POSIX) locks; probing one with a non-blocking lockf tells whether
  # another process holds it, without keeping it (the probe's lock goes with its process).
  python3 - "$limit" $locks <<'PY'
import fcntl, os, sys, time

limit, paths = float(sys.argv[1]), sys.argv[2:]
deadline = time.monotonic() + limit
announced = False

def held(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False  # no such lock file (or not ours to open): nothing to wait for
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)

while True:
    busy = [p for p in paths if held(p)]
    if not busy:
        sys.exit(0)
    if time.monotonic() > deadline:
        print(f"wait-for-apt: {busy[0]} still held after {limit:.0f} s; giving up", file=sys.stderr)
        sys.exit(1)
    if not announced:
        print(f"wait-for-apt: another process holds {busy[0]}; waiting for it", file=sys.stderr)
        announced = True
    time.sleep(1)
PY
}
