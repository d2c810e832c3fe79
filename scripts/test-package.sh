#!/usr/bin/env bash
# The Debian package's test, as root on Debian 12 (no systemd as PID 1 needed):
#
#   scripts/test-package.sh                                  # packages .build/release/pushgate
#   PUSHGATE_BIN=/path/to/pushgate scripts/test-package.sh   # another binary
#
# Installs what it needs (scripts/setup.sh --package), builds the package (scripts/package.sh),
# purges an earlier installation, installs it with dpkg -i and checks the unit with
# systemd-analyze verify (after checking that verify does flag a broken unit here), the user, the
# files, their owners and modes; then starts `pushgate serve` from the installed files the way
# pushgate.service would: ExecStart, User/Group, WorkingDirectory, UMask, Environment and
# EnvironmentFile read from the installed unit, and the unit's sandbox emulated (see
# run_like_the_unit) with the Swift toolchain hidden; waits for GET /healthz = 200, checks the
# SQLite store it created, sends SIGTERM and checks it exits 0 within the shutdown deadline;
# finally purges the package and checks that the user, /etc/pushgate and /var/lib/pushgate are
# gone. Exit 0 only if every check held; re-runnable.
#
# SIGHUP (systemctl reload) must reload the configuration ("configuration reloaded" in the log)
# and leave it serving.
set -euo pipefail
cd "$(dirname "$0")/.."

unit=/lib/systemd/system/pushgate.service
pidfile=.build/package/test-package.pid
step() { echo "== $*"; }
ok() { echo "   ok: $*"; }
fail() {
  echo "test-package: FAILED: $*" >&2
  if [ -n "${log:-}" ] && [ -s "$log" ]; then
    echo "-- the gateway's log ($log), last 30 lines:" >&2
    tail -30 "$log" >&2
  fi
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "run as root (it installs and purges the package)"
scripts/setup.sh --package

# A gateway a previous run left running (interrupted) would keep its user from being removed.
stop_previous() {
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = /usr/bin/pushgate ]; then
    echo "   stopping the gateway a previous run left running (pid $pid)"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 1
  fi
  rm -f "$pidfile"
}
stop_previous

step "build the package"
# gzip: the same package, built in seconds rather than the 2 minutes of xz.
deb=$(PUSHGATE_DEB_COMPRESSION=${PUSHGATE_DEB_COMPRESSION:-gzip} nice -n 10 scripts/package.sh | tail -n 1)
[ -f "$deb" ] || fail "scripts/package.sh printed no package path"
ok "$deb"

step "purge an earlier installation"
status=$(dpkg-query -W -f='${db:Status-Abbrev}' pushgate 2>/dev/null || true)
if [ -n "$status" ] && [ "${status:0:2}" != "un" ]; then
  dpkg --purge pushgate >/dev/null
  ok "purged (was: $status)"
else
  ok "none"
fi

step "install: dpkg -i"
dpkg -i "$deb"
[ "$(dpkg-query -W -f='${db:Status-Abbrev}' pushgate)" = "ii " ] || fail "pushgate is not installed after dpkg -i"
ok "installed $(dpkg-query -W -f='${Version} ${Architecture}' pushgate)"

step "systemd-analyze verify"
# verify prints problems as warnings and still exits 0, so any output fails. First show that it
# does check here, without a running systemd: a copy with an unknown key and a bad value must be
# flagged.
scratch=$(mktemp -d)
running=""
cleanup() {
  if [ -n "$running" ] && kill -0 "$running" 2>/dev/null; then kill -KILL "$running" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
sed -e 's/^ProtectSystem=strict$/ProtectSystem=bogus\nNoSuchKey=1/' "$unit" >"$scratch/pushgate.service"
broken=$(systemd-analyze verify "$scratch/pushgate.service" 2>&1 || true)
grep -q "NoSuchKey" <<<"$broken" && grep -q "bogus" <<<"$broken" ||
  fail "systemd-analyze verify did not flag a broken copy of the unit here, so it checks nothing: $broken"
ok "flags a broken copy ($(wc -l <<<"$broken") lines)"
rc=0
out=$(systemd-analyze verify "$unit" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && [ -z "$out" ] || fail "systemd-analyze verify $unit (exit $rc):"$'\n'"$out"
ok "systemd-analyze verify $unit: exit 0, no output"
exposure=$(systemd-analyze security --offline=true "$unit" 2>&1 | sed -n 's/.*Overall exposure level for pushgate.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze security --offline=true printed no exposure level"
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "exposure level $exposure (systemd-analyze security), more than 2.0: was hardening removed?"
ok "systemd-analyze security --offline: exposure $exposure"

step "user, files, owners, modes"
getent passwd pushgate >/dev/null || fail "no user pushgate"
IFS=: read -r _ _ uid gid _ home shell <<<"$(getent passwd pushgate)"
[ "$uid" -lt 1000 ] || fail "pushgate has uid $uid, not a system user"
[ "$home" = /var/lib/pushgate ] || fail "pushgate's home is $home"
[ "$shell" = /usr/sbin/nologin ] || fail "pushgate's shell is $shell"
[ "$(getent group pushgate | cut -d: -f3)" = "$gid" ] || fail "pushgate's primary group is not pushgate"
ok "user pushgate: uid $uid, group pushgate ($gid), home $home, shell $shell"
expect() { # path owner:group mode
  [ -e "$1" ] || fail "$1 is missing"
  local got
  got=$(stat -c '%U:%G %a' "$1")
  [ "$got" = "$2 $3" ] || fail "$1 is $got, expected $2 $3"
  ok "$1 $2 $3"
}
expect /usr/bin/pushgate root:root 755
expect "$unit" root:root 644
expect /etc/pushgate root:pushgate 750
expect /etc/pushgate/config.json root:pushgate 640
expect /etc/pushgate/templates root:root 755
for t in templates/*; do expect "/etc/pushgate/templates/$(basename "$t")" root:root 644; done
expect /etc/default/pushgate root:root 600
expect /var/lib/pushgate pushgate:pushgate 750
for kind in State Configuration; do
  dir=$(awk -v key="${kind}Directory=" 'index($0, key) == 1 { print substr($0, length(key) + 1) }' "$unit")
  want=$(awk -v key="${kind}DirectoryMode=" 'index($0, key) == 1 { print substr($0, length(key) + 1) }' "$unit")
  [ "$kind" = State ] && path=/var/lib/$dir || path=/etc/$dir
  [ "$((8#${want:-755}))" -eq "$((8#$(stat -c %a "$path")))" ] ||
    fail "${kind}DirectoryMode=${want:-0755 (the default)} in the unit, but $path is $(stat -c %a "$path"): systemd would change or warn about it"
done
ok "StateDirectoryMode and ConfigurationDirectoryMode match the folders"
conffiles=$(dpkg-query -W -f='${Conffiles}\n' pushgate | awk 'NF { print $1 }' | sort)
[ "$conffiles" = "$(find /etc/pushgate /etc/default/pushgate -type f | sort)" ] ||
  fail "the conffiles are not exactly the files under /etc/pushgate and /etc/default/pushgate: $conffiles"
ok "conffiles: $(wc -l <<<"$conffiles") files"
if command -v deb-systemd-helper >/dev/null; then
  [ "$(readlink /etc/systemd/system/multi-user.target.wants/pushgate.service)" = "$unit" ] ||
    fail "the unit is not enabled (no multi-user.target.wants/pushgate.service)"
  ok "enabled: multi-user.target.wants/pushgate.service"
fi
# Self-contained: nothing from the build machine's toolchain (/opt/swift).
libs=$(ldd /usr/bin/pushgate)
if grep -q 'not found' <<<"$libs"; then fail "unresolved libraries: $(grep 'not found' <<<"$libs")"; fi
if awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$libs" | grep -v -E '^/(usr/)?lib(64)?/'; then
  fail "/usr/bin/pushgate loads the libraries above from outside the system's and the package's folders"
fi
ok "/usr/bin/pushgate resolves every library from the system or /usr/lib/pushgate"

# --- the unit, read from the installed file --------------------------------------------------
service_values() { # every value of KEY= in [Service], in order
  awk -v key="$1" '/^\[/ { section = $0; next } section == "[Service]" && index($0, key "=") == 1 { print substr($0, length(key) + 2) }' "$unit"
}
service_value() { service_values "$1" | tail -n 1; }
exec_start=$(service_value ExecStart)
exec_start=${exec_start#[-@:+!]}
read -r -a argv <<<"$exec_start"
[ "$(service_value User)" = pushgate ] && [ "$(service_value Group)" = pushgate ] || fail "the unit does not run as pushgate:pushgate"
workdir=$(service_value WorkingDirectory)
umask_value=$(service_value UMask)
state_dir=/var/lib/$(service_value StateDirectory)
config=""
for ((i = 0; i < ${#argv[@]}; i++)); do [ "${argv[$i]}" = --config ] && config=${argv[$((i + 1))]}; done
[ -n "$config" ] || fail "ExecStart names no --config: $exec_start"
# The process's environment: what systemd sets for User=, then Environment=, then EnvironmentFile=.
environment=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" USER=pushgate LOGNAME=pushgate SHELL="$shell")
while read -r line; do
  read -r -a words <<<"$line"
  for w in "${words[@]}"; do w=${w#\"}; environment+=("${w%\"}"); done
done < <(service_values Environment)
while read -r file; do
  optional=0
  [ "${file:0:1}" = - ] && optional=1 && file=${file:1}
  if [ ! -r "$file" ]; then [ "$optional" -eq 1 ] && continue || fail "EnvironmentFile $file is missing"; fi
  while IFS= read -r line; do
    [[ "$line" =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
    value=${BASH_REMATCH[2]}
    value=${value#\"}; value=${value%\"}; value=${value#\'}; value=${value%\'}
    environment+=("${BASH_REMATCH[1]}=$value")
  done <"$file"
done < <(service_values EnvironmentFile)
deadline=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("listener", {}).get("shutdownDeadlineSeconds", 10))' "$config")
timeout_stop=$(service_value TimeoutStopSec)
timeout_stop=${timeout_stop%s}
[[ "$timeout_stop" =~ ^[0-9]+$ ]] || fail "TimeoutStopSec=$timeout_stop is not in seconds"
# The gateway's own worst case after SIGTERM: the deadline, 5 s of service-group backstop, 5 s for cancelled work.
[ "$timeout_stop" -ge $((deadline + 10)) ] ||
  fail "TimeoutStopSec=$timeout_stop is shorter than the shutdown deadline ($deadline s) + 10 s: systemd would SIGKILL a gateway still draining"
ok "unit: ${argv[*]} as pushgate, in $workdir, umask $umask_value, ${#environment[@]} environment variables; TimeoutStopSec $timeout_stop s for a $deadline s deadline"

# --- running it the way the unit does -----------------------------------------------------------
# Emulates, without systemd: User=/Group= (setpriv: uid, gid, supplementary groups),
# NoNewPrivileges=, CapabilityBoundingSet= and AmbientCapabilities= (all dropped), UMask=,
# WorkingDirectory=, and in a mount namespace of its own ProtectSystem=strict with
# StateDirectory= writable, ProtectKernelTunables=/ProtectControlGroups= (/sys read-only too),
# PrivateTmp=, ProtectHome=, PrivateDevices= (a /dev of null, zero, full, random, urandom, tty),
# ProtectProc=invisible and ProcSubset=pid; and as seccomp filters (libseccomp through Python's
# ctypes) SystemCallFilter=@system-service ~@privileged with SystemCallErrorNumber=EPERM,
# MemoryDenyWriteExecute=, RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX and
# RestrictNamespaces=. /opt/swift is hidden: the package must not need the toolchain.
# Not emulated: ProtectClock, ProtectHostname, ProtectKernelModules/Logs beyond the above,
# RestrictRealtime, RestrictSUIDSGID, LockPersonality, RemoveIPC, SystemCallArchitectures.

# Run in the new mount namespace: "$1" the writable state folder, "$2" the working folder, then
# the command. Only ever "remount,bind,ro" (per-mount flags of this namespace's copies), never
# a plain remount, which would change the file system for the whole machine.
# shellcheck disable=SC2016
sandbox_sh='
set -eu
[ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] || { echo "sandbox: not in a mount namespace of its own" >&2; exit 97; }
state=$1 workdir=$2
shift 2
awk "{ print \$5 }" /proc/self/mountinfo | sort -u | while read -r mp; do
  case "$mp" in *\\*) continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || case "$mp" in
    /proc | /proc/* | /dev | /dev/*) ;;
    *) echo "sandbox: cannot make $mp read-only" >&2; exit 98 ;;
  esac
done
mount -t tmpfs -o mode=0755,nosuid,noexec tmpfs /dev
node() { mknod -m 0666 "/dev/$1" c "$2" "$3"; }
node null 1 3; node zero 1 5; node full 1 7; node random 1 8; node urandom 1 9; node tty 5 0
mkdir /dev/shm /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/0 /dev/stdin; ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
mount -t proc -o nosuid,nodev,noexec,hidepid=invisible,subset=pid proc /proc
for d in /tmp /var/tmp; do mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$d"; done
for d in /home /root /run/user /opt/swift; do
  if [ -d "$d" ]; then mount -t tmpfs -o mode=0000,nosuid,nodev,noexec tmpfs "$d"; fi
done
mount --bind "$state" "$state"
mount -o remount,bind,rw,nosuid,nodev "$state"
cd "$workdir"
exec "$@"
'

# Loads the seccomp filters, then executes argv[1:].
seccomp_py='
import ctypes, errno, os, subprocess, sys
lib = ctypes.CDLL("libseccomp.so.2")
class Cmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(Cmp)]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
ALLOW, EQ, GT, MASKED_EQ = 0x7FFF0000, 4, 6, 7
def ERRNO(e): return 0x00050000 | e
def nr(name): return lib.seccomp_syscall_resolve_name(name.encode())
def rule(ctx, action, name, *cmps):
    n = nr(name)
    if n < 0: return
    array = (Cmp * max(len(cmps), 1))(*[Cmp(*c) for c in cmps])
    rc = lib.seccomp_rule_add_array(ctx, action, n, len(cmps), array)
    if rc != 0: sys.exit("seccomp: rule for %s: %d" % (name, rc))
def load(ctx):
    rc = lib.seccomp_load(ctx)
    if rc != 0: sys.exit("seccomp: load: %d" % rc)

# The groups as this systemd defines them.
groups, current = {}, None
for line in subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout.splitlines():
    if line.startswith("@"): current = groups.setdefault(line.split()[0], [])
    elif line.strip() and not line.strip().startswith("#") and current is not None and line.startswith(" "): current.append(line.split()[0])
    elif not line.strip(): current = None
def expand(name, seen=()):
    if not name.startswith("@"): return {name}
    if name not in groups: sys.exit("seccomp: systemd has no group " + name)
    return set().union(*[expand(m, seen + (name,)) for m in groups[name] if m not in seen])

# MemoryDenyWriteExecute=yes
mdwe = lib.seccomp_init(ALLOW)
W, X, SHM_EXEC = 0x2, 0x4, 0o100000
rule(mdwe, ERRNO(errno.EPERM), "mmap", (2, MASKED_EQ, W | X, W | X))
for name in ("mprotect", "pkey_mprotect"): rule(mdwe, ERRNO(errno.EPERM), name, (2, MASKED_EQ, X, X))
rule(mdwe, ERRNO(errno.EPERM), "shmat", (2, MASKED_EQ, SHM_EXEC, SHM_EXEC))
load(mdwe)
# RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX (1, 2, 10)
families = lib.seccomp_init(ALLOW)
for family in [0] + list(range(3, 10)): rule(families, ERRNO(errno.EAFNOSUPPORT), "socket", (0, EQ, family, 0))
rule(families, ERRNO(errno.EAFNOSUPPORT), "socket", (0, GT, 10, 0))
load(families)
# RestrictNamespaces=yes
namespaces = lib.seccomp_init(ALLOW)
rule(namespaces, ERRNO(errno.EPERM), "setns")
# clone3 passes its flags in memory, where no filter sees them: systemd answers ENOSYS, so glibc falls back to clone.
rule(namespaces, ERRNO(errno.ENOSYS), "clone3")
for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080):
    for name in ("unshare", "clone"): rule(namespaces, ERRNO(errno.EPERM), name, (0, MASKED_EQ, flag, flag))
load(namespaces)
# SystemCallFilter=@system-service, SystemCallFilter=~@privileged, SystemCallErrorNumber=EPERM
allowed = expand("@system-service") - expand("@privileged")
allow = lib.seccomp_init(ERRNO(errno.EPERM))
for name in sorted(allowed): rule(allow, ALLOW, name)
load(allow)
os.execv(sys.argv[1], sys.argv[1:])
'

# "$@": the command. Runs it in the unit's sandbox, as the unit's user, with its environment.
run_like_the_unit() {
  umask "$umask_value"
  exec unshare --mount --propagation private -- /bin/sh -c "$sandbox_sh" sandbox "$state_dir" "$workdir" \
    /usr/bin/setpriv --reuid="$uid" --regid="$gid" --init-groups --no-new-privs \
    --bounding-set=-all --inh-caps=-all --ambient-caps=-all -- \
    /usr/bin/env -i "${environment[@]}" /usr/bin/python3 -c "$seccomp_py" "$@"
}

step "the sandbox holds (a probe run in it)"
# shellcheck disable=SC2016
probe_py='
import ctypes, errno, mmap, os, socket, sys
problems = []
def expect_error(what, call, codes):
    try: call()
    except OSError as e:
        if e.errno in codes: return
        problems.append("%s: %s" % (what, e))
        return
    problems.append(what + ": allowed")
def write(path):
    with open(path, "w") as f: f.write("x")
os.getuid() == int(sys.argv[1]) or problems.append("uid %d" % os.getuid())
open("/proc/self/status").read().count("NoNewPrivs:\t1") or problems.append("no_new_privs not set")
"CapBnd:\t0000000000000000" in open("/proc/self/status").read() or problems.append("capabilities left in the bounding set")
expect_error("writing /etc", lambda: write("/etc/pushgate-probe"), (errno.EROFS, errno.EACCES))
expect_error("writing /usr", lambda: write("/usr/pushgate-probe"), (errno.EROFS, errno.EACCES))
expect_error("reading /root", lambda: os.listdir("/root"), (errno.EACCES,))
expect_error("the toolchain", lambda: os.listdir("/opt/swift"), (errno.EACCES,))
expect_error("W+X memory", lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC), (errno.EPERM,))
expect_error("a netlink socket", lambda: socket.socket(16, socket.SOCK_RAW, 0), (errno.EAFNOSUPPORT,))
def unshare_mount_namespace():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x00020000) != 0: raise OSError(ctypes.get_errno(), "unshare")
expect_error("a new namespace", unshare_mount_namespace, (errno.EPERM,))
expect_error("chown", lambda: os.chown(sys.argv[2], os.getuid(), os.getgid()), (errno.EPERM,))
expect_error("/proc/cpuinfo", lambda: open("/proc/cpuinfo").read(), (errno.ENOENT,))
extra = set(os.listdir("/dev")) - {"null", "zero", "full", "random", "urandom", "tty", "shm", "pts", "fd", "stdin", "stdout", "stderr"}
extra and problems.append("/dev has " + ", ".join(sorted(extra)))
write(os.path.join(sys.argv[2], ".probe")); os.unlink(os.path.join(sys.argv[2], ".probe"))
write("/tmp/probe"); os.unlink("/tmp/probe")
socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
if problems: sys.exit("sandbox probe: " + "; ".join(problems))
print("probe: uid %d, read-only /etc and /usr, private /tmp, writable %s, W+X refused, netlink refused, namespaces refused, chown refused, no /proc/cpuinfo" % (os.getuid(), sys.argv[2]))
'
probe_out=$( (run_like_the_unit /usr/bin/python3 -c "$probe_py" "$uid" "$state_dir") 2>&1) || fail "the sandbox probe failed: $probe_out"
ok "${probe_out#probe: }"

# Starts the installed gateway like the unit, on a port of its own choosing (--port 0; the port
# is read from its log). Sets $running and $port.
start_gateway() {
  log=$1
  (run_like_the_unit "${argv[@]}" --port 0) </dev/null >"$log" 2>&1 &
  running=$!
  echo "$running" >"$pidfile"
  port=""
  for _ in $(seq 1 300); do
    kill -0 "$running" 2>/dev/null || { cat "$log" >&2; fail "pushgate serve exited during its start (log above)"; }
    [ -n "$port" ] || port=$(sed -n 's|.*listening on http://[^ ]*:\([0-9][0-9]*\)$|\1|p' "$log" | head -n 1)
    if [ -n "$port" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/healthz")" = 200 ]; then
      return 0
    fi
    sleep 0.1
  done
  cat "$log" >&2
  fail "no GET /healthz = 200 within 30 s (port ${port:-not logged})"
}

step "pushgate serve as the unit runs it"
log=$scratch/serve.log
start_gateway "$log"
ok "GET http://127.0.0.1:$port/healthz = 200 (pid $running, $(stat -c %U "/proc/$running"))"
[ "$(stat -c %U "/proc/$running")" = pushgate ] || fail "the gateway runs as $(stat -c %U "/proc/$running"), not pushgate"
store=$(python3 -c '
import json, os, sys
store = json.load(open(sys.argv[1])).get("store", {"sqlite": {"path": "pushgate.sqlite"}})
path = store["sqlite"]["path"]
print(path if path.startswith("/") else os.path.join(os.path.dirname(sys.argv[1]), path))' "$config")
case "$store" in "$state_dir"/*) ;; *) fail "the configured SQLite store $store is not under $state_dir" ;; esac
[ -f "$store" ] || fail "no SQLite store at $store"
read -r owner mode <<<"$(stat -c '%U:%G %a' "$store")"
[ "$owner" = pushgate:pushgate ] || fail "$store is owned by $owner"
[ $((8#$mode & 8#007)) -eq 0 ] || fail "$store is readable by everyone (mode $mode)"
ok "$store: $owner $mode"
grep -q 'store: SQLite' "$log" || fail "the log does not name the SQLite store"
# A refused system call or file would show as a warning or an error, not as a failed start.
if grep -E '^[^ ]+ (warning|error|critical) ' "$log"; then fail "the gateway logged the warnings or errors above in the sandbox"; fi
ok "log: $(wc -l <"$log") lines, no warnings or errors"
# The package's configuration serves /metrics on a loopback listener of its own, not on the API's.
metrics_port=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("metrics", {}).get("port", ""))' "$config")
if [ -n "$metrics_port" ]; then
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/metrics")
  [ "$code" = 404 ] || fail "GET /metrics on the API's listener answered $code, not 404"
  # Its listener starts beside the API's: wait for it to be bound (its log line), then read it.
  metrics_bound=
  for _ in $(seq 1 300); do
    if grep -q "metrics: http://127.0.0.1:$metrics_port/metrics" "$log"; then metrics_bound=1; break; fi
    sleep 0.1
  done
  [ -n "$metrics_bound" ] || fail "the metrics listener on 127.0.0.1:$metrics_port did not start in 30 s: $(tail -5 "$log")"
  # Read whole, then searched: `curl | grep -q` fails under pipefail when grep stops reading
  # before curl has written everything (curl exits 23 on the closed pipe).
  exposition=$(curl -sS -f --max-time 5 "http://127.0.0.1:$metrics_port/metrics" 2>&1) \
    || fail "GET http://127.0.0.1:$metrics_port/metrics failed: ${exposition:0:300}"
  grep -q '^pushgate_http_requests_in_flight' <<<"$exposition" \
    || fail "no pushgate_http_requests_in_flight at http://127.0.0.1:$metrics_port/metrics: ${exposition:0:300}"
  ok "/metrics: 404 on the API's listener, served on 127.0.0.1:$metrics_port"
fi

kill -TERM "$running"
started=$SECONDS
for _ in $(seq 1 $((deadline * 10))); do
  kill -0 "$running" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$running" 2>/dev/null; then
  cat "$log" >&2
  fail "still running $deadline s (the shutdown deadline) after SIGTERM"
fi
rc=0
wait "$running" || rc=$?
running=""
[ "$rc" -eq 0 ] || { cat "$log" >&2; fail "exit status $rc after SIGTERM (log above)"; }
grep -q 'stopped' "$log" || fail "no \"stopped\" in the log after SIGTERM"
ok "SIGTERM: exit 0 after $((SECONDS - started)) s (deadline $deadline s)"

step "systemctl reload (SIGHUP)"
start_gateway "$scratch/reload.log"
# bash reports a child ended by SIGHUP ("Hangup") on standard error: not a failure here.
exec 3>&2 2>/dev/null
kill -HUP "$running"
for _ in $(seq 1 100); do
  grep -q 'configuration reloaded\|reload refused' "$scratch/reload.log" && break
  kill -0 "$running" 2>/dev/null || break
  sleep 0.1
done
reloaded=0
if kill -0 "$running" 2>/dev/null && grep -q 'configuration reloaded' "$scratch/reload.log" \
  && [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/healthz")" = 200 ]; then
  reloaded=1
  kill -TERM "$running"
fi
rc=0
wait "$running" || rc=$?
exec 2>&3 3>&-
if [ "$reloaded" -eq 1 ]; then
  [ "$rc" -eq 0 ] || fail "exit status $rc after SIGTERM following the SIGHUP"
  ok "still serving after SIGHUP; SIGTERM then: exit 0"
else
  cat "$scratch/reload.log" >&2
  fail "SIGHUP did not reload the configuration and leave the gateway serving (exit status $rc, log above)"
fi
running=""
rm -f "$pidfile"

step "purge: dpkg --purge pushgate"
dpkg --purge pushgate >/dev/null
[ -z "$(dpkg-query -W -f='${db:Status-Abbrev}' pushgate 2>/dev/null | tr -d ' ' | grep -v '^un$' || true)" ] || fail "pushgate is still known to dpkg"
! getent passwd pushgate >/dev/null || fail "the user pushgate is still there"
! getent group pushgate >/dev/null || fail "the group pushgate is still there"
for path in /etc/pushgate /var/lib/pushgate /etc/default/pushgate "$unit" /usr/bin/pushgate /usr/lib/pushgate \
  /etc/systemd/system/multi-user.target.wants/pushgate.service; do
  [ ! -e "$path" ] && [ ! -L "$path" ] || fail "$path is still there after the purge"
done
! dpkg-statoverride --list | grep -q pushgate || fail "dpkg-statoverride still lists: $(dpkg-statoverride --list | grep pushgate)"
ok "user, group, /etc/pushgate, /var/lib/pushgate, the unit and its enablement are gone"

echo "test-package: all checks passed ($deb)"
