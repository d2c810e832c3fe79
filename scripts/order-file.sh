#!/usr/bin/env bash
# Writes linker/pushgate.order: the functions `pushgate serve` runs while it starts, in the order
# the release link lays them out (Package.swift's releaseLink). Start-up then maps a few MiB of
# the binary's code instead of 64 KiB windows strewn over all of it (the kernel maps the pages
# around each one touched: "fault-around").
#
# How: the release binary starts on a sandbox configuration with the page cache dropped and the
# disk's read-ahead off, so that only the pages start-up touches are read and mapped; its text pages
# present in /proc/<pid>/pagemap name the functions on them (nm). A page shows up whole, so its
# neighbours come along: each round keeps the list so far and appends what is new, relinks, and
# looks again; ROUNDS rounds (default 3). Functions without a symbol (assembler-local `.L` helpers)
# cannot be listed and stay where they are.
#
# Needs root (drop_caches, read_ahead_kb) and changes nothing for good: read-ahead is restored.
# PUSHGATE_BUILD_ARGS go to scripts/build-release.sh, split on spaces (e.g. "--scratch-path
# /var/tmp/build", on a disk). A build folder whose objects were compiled without
# -function-sections is best rebuilt from scratch: here SwiftPM kept such objects when only the
# flags changed. The order file is not an input SwiftPM tracks: after changing it, delete the
# binary to relink (this script does).
#   sudo scripts/order-file.sh            # then commit linker/pushgate.order
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "order-file: needs root (it drops the page cache and turns read-ahead off)" >&2; exit 1; }
rounds=${ROUNDS:-3}
order=linker/pushgate.order
read -r -a build_args <<< "${PUSHGATE_BUILD_ARGS:-}"
build() { scripts/build-release.sh "${build_args[@]}" "$@"; }
bin=$(build --show-bin-path)/pushgate
binary=$bin
# The disk the binary is read from: a page cache it can be evicted from, and its read-ahead.
folder=$(dirname "$bin")
mkdir -p "$folder"
case "$(findmnt -no FSTYPE -T "$folder")" in
tmpfs | ramfs | overlay) echo "order-file: $folder is on $(findmnt -no FSTYPE -T "$folder"): its pages cannot be dropped; build on a disk" >&2; exit 1 ;;
esac
source_device=$(findmnt -no SOURCE -T "$folder")
device=$(lsblk -no pkname "$source_device" 2>/dev/null | head -n 1 || true)
[ -n "$device" ] || device=$(lsblk -no kname "$source_device" 2>/dev/null | head -n 1 || basename "$source_device")
readahead=/sys/block/$device/queue/read_ahead_kb
[ -w "$readahead" ] || { echo "order-file: cannot set $readahead (the disk of $folder)" >&2; exit 1; }
# One run at a time: a second would save read-ahead as 0 and "restore" that. While it runs,
# read-ahead is off for the whole disk and the page cache is dropped for everyone; a run killed
# with SIGKILL leaves read-ahead at 0 (its value is kept in linker/.read_ahead_kb to put back).
exec 9> linker/.order-file.lock
flock -n 9 || { echo "order-file: another run holds linker/.order-file.lock" >&2; exit 1; }
saved=$(cat "$readahead")
[ -f linker/.read_ahead_kb ] && saved=$(cat linker/.read_ahead_kb)
echo "$saved" > linker/.read_ahead_kb
work=$(mktemp -d)
gateway=""
sandbox=""
cleanup() {
  echo "$saved" > "$readahead"
  rm -f linker/.read_ahead_kb linker/.order-file.lock
  [ -z "$gateway" ] || kill "$gateway" 2>/dev/null || true
  [ -z "$sandbox" ] || kill "$sandbox" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p linker
touch "$order"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for round in $(seq 1 "$rounds"); do
  rm -f "$bin"  # the order file is not an input SwiftPM tracks: relink
  build > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
  if [ ! -f "$work/sandbox/config.json" ]; then
    "$bin" sandbox --dir "$work/sandbox" > "$work/sandbox.out" 2>&1 &
    sandbox=$!
    for _ in $(seq 1 100); do grep -q gateway "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
    kill "$sandbox" 2>/dev/null || true; wait "$sandbox" 2>/dev/null || true
    sandbox=""
  fi
  port=$(free_port)
  python3 - "$work/sandbox/config.json" "$port" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["listener"]["port"] = int(sys.argv[2])
config["listener"].pop("tls", None)
config["store"] = {"sqlite": {"path": "order.sqlite"}}
json.dump(config, open(sys.argv[1], "w"), indent=2)
PY
  rm -f "$work/sandbox/order.sqlite"*
  echo 0 > "$readahead"
  sync
  echo 3 > /proc/sys/vm/drop_caches
  (cd "$work/sandbox" && exec "$binary" serve --config config.json > "$work/gateway.log" 2>&1) &
  gateway=$!
  up=""
  for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && { up=1; break; }; sleep 0.1; done
  [ -n "$up" ] || { cat "$work/gateway.log" >&2; echo "order-file: the gateway did not answer /healthz" >&2; exit 1; }
  sleep 2
  # The binary's text pages present, as addresses relative to its first mapping.
  python3 - "$gateway" "$(realpath "$binary")" > "$work/pages.txt" <<'PY'
import struct, sys
pid, path = sys.argv[1], sys.argv[2]
maps = [line.split() for line in open(f"/proc/{pid}/maps") if line.rstrip().endswith(path)]
base = int(maps[0][0].split("-")[0], 16)
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for fields in maps:
        if "x" not in fields[1]:
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        for page in range(low, high, 4096):
            pagemap.seek(page // 4096 * 8)
            if struct.unpack("Q", pagemap.read(8))[0] >> 63:
                print(page - base)
PY
  kill "$gateway" 2>/dev/null || true; wait "$gateway" 2>/dev/null || true
  gateway=""
  echo "$saved" > "$readahead"
  nm -S --defined-only "$bin" > "$work/symbols.txt"
  python3 - "$work/pages.txt" "$work/symbols.txt" "$order" <<'PY'
import sys
pages = {int(line) // 4096 for line in open(sys.argv[1])}
touched = []
for line in open(sys.argv[2]):
    fields = line.split()
    if len(fields) != 4 or fields[2] not in "tTwW":
        continue
    address, size = int(fields[0], 16), int(fields[1], 16)
    if size and any(page in pages for page in range(address // 4096, (address + size - 1) // 4096 + 1)):
        touched.append((address, fields[3]))
known = [line.strip() for line in open(sys.argv[3]) if line.strip()]
seen = set(known)
new = []
for _, name in sorted(touched):
    if name not in seen:
        seen.add(name)
        new.append(name)
open(sys.argv[3], "w").write("".join(name + "\n" for name in known + new))
print(f"order-file: {len(pages)} text pages touched at start-up; {len(known)} functions listed, {len(new)} added", file=sys.stderr)
PY
done
rm -f "$bin"
build > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
echo "order-file: $order ($(wc -l < "$order") functions); $bin relinked with it" >&2
