#!/usr/bin/env bash
# Builds the Debian package of Pushgate from an already-built binary (it never runs swift build):
#
#   scripts/package.sh                                   # .build/release/pushgate
#   PUSHGATE_BIN=/path/to/pushgate scripts/package.sh    # another binary
#
# Writes .build/package/pushgate_<version>_<arch>.deb and prints its path on the last line.
# The version is the one `pushgate version` prints (else `git describe`); PUSHGATE_DEB_VERSION
# overrides it. The package holds /usr/bin/pushgate, the systemd unit
# (/lib/systemd/system/pushgate.service), /etc/pushgate/{config.json,templates/} and
# /etc/default/pushgate as conffiles, and the docs; packaging/ has the sources.
#
# The Swift runtime: a binary built with `swift build -c release --static-swift-stdlib` needs only
# Debian's libraries. A binary linked against the toolchain's shared Swift runtime (the default;
# its RUNPATH points at /opt/swift/...) gets those libraries bundled under /usr/lib/pushgate and
# its RUNPATH rewritten to that folder (patchelf). Depends comes from dpkg-shlibdeps.
#
# Needs dpkg-dev and patchelf (scripts/setup.sh --package); lintian only if it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "package: $*" >&2; exit 1; }

bin=${PUSHGATE_BIN:-.build/release/pushgate}
[ -x "$bin" ] || die "no executable at $bin (build it: scripts/build-release.sh --static-swift-stdlib, or set PUSHGATE_BIN)"
for tool in dpkg-deb dpkg-shlibdeps objcopy readelf; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh --package)"
done

arch=$(dpkg --print-architecture)
version=${PUSHGATE_DEB_VERSION:-}
if [ -z "$version" ]; then
  # "pushgate 0.1.0" on the first line of `pushgate version`.
  version=$("$bin" version 2>/dev/null | awk 'NR == 1 && $1 == "pushgate" { print $2 }') || true
fi
if [ -z "$version" ]; then
  version=$(git describe --tags --always 2>/dev/null | sed 's/^v//; s/-/+/g') || true
fi
[ -n "$version" ] || die "cannot tell the version: neither \`$bin version\` nor git describe answered; set PUSHGATE_DEB_VERSION"
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "'$version' is not a Debian version; set PUSHGATE_DEB_VERSION"

out=.build/package
mkdir -p "$out"
work=$(mktemp -d "$root/$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/pushgate
mkdir -p "$stage"

# --- files -------------------------------------------------------------------------------------
install -d -m 0755 "$stage/usr/bin" "$stage/lib/systemd/system" "$stage/usr/share/doc/pushgate" "$stage/etc/default"
# Debug info stripped (a third of the size); the symbol table stays for crash backtraces.
objcopy --strip-debug "$bin" "$stage/usr/bin/pushgate"
chmod 0755 "$stage/usr/bin/pushgate"

# Shared libraries resolved outside the system's library folders are the toolchain's Swift
# runtime: bundle them, and point the binary's RUNPATH at them instead of the build machine's.
bundled=()
while read -r lib; do
  case "$lib" in
  /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) ;;
  /*) bundled+=("$lib") ;;
  esac
done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
# Searched whole (`ldd | grep -q` can fail under pipefail when grep stops reading first).
libraries=$(ldd "$bin")
if grep -q 'not found' <<<"$libraries"; then
  grep 'not found' <<<"$libraries" >&2
  die "$bin has unresolved libraries on this machine"
fi
if [ "${#bundled[@]}" -gt 0 ]; then
  command -v patchelf >/dev/null || die "patchelf is missing (scripts/setup.sh --package); $bin needs the shared Swift runtime"
  install -d -m 0755 "$stage/usr/lib/pushgate"
  for lib in "${bundled[@]}"; do
    objcopy --strip-debug "$lib" "$stage/usr/lib/pushgate/$(basename "$lib")"
    chmod 0644 "$stage/usr/lib/pushgate/$(basename "$lib")"
  done
  patchelf --set-rpath /usr/lib/pushgate "$stage/usr/bin/pushgate"
  echo "package: $bin uses the shared Swift runtime: bundling ${#bundled[@]} libraries in /usr/lib/pushgate (RUNPATH /usr/lib/pushgate)" >&2
  echo "package: (a binary built with scripts/build-release.sh --static-swift-stdlib needs none)" >&2
else
  echo "package: $bin needs no libraries outside the system's (static Swift runtime)" >&2
fi

install -m 0644 packaging/pushgate.service "$stage/lib/systemd/system/pushgate.service"

# /etc/pushgate may come to hold secrets (files a config points at, {"value"} secrets): the folder
# is root:pushgate 0750 and config.json 0640 (group set by postinst through dpkg-statoverride).
install -d -m 0750 "$stage/etc/pushgate"
install -d -m 0755 "$stage/etc/pushgate/templates"
install -m 0640 packaging/config.json "$stage/etc/pushgate/config.json"
for t in templates/*; do install -m 0644 "$t" "$stage/etc/pushgate/templates/"; done
install -m 0600 packaging/default "$stage/etc/default/pushgate"

install -m 0644 README.md "$stage/usr/share/doc/pushgate/README.md"
for d in deployment configuration postgresql api cli templates live-activities huawei unifiedpush; do
  install -m 0644 "docs/$d.md" "$stage/usr/share/doc/pushgate/$d.md"
done

# --- control -----------------------------------------------------------------------------------
install -d -m 0755 "$stage/DEBIAN"
# dpkg-shlibdeps wants a debian/control in its working folder.
mkdir -p "$work/src/debian"
printf 'Source: pushgate\n\nPackage: pushgate\nArchitecture: any\n' >"$work/src/debian/control"
objects=("$stage/usr/bin/pushgate")
[ -d "$stage/usr/lib/pushgate" ] && objects+=("$stage"/usr/lib/pushgate/*.so*)
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O ${bundled:+-l"$stage/usr/lib/pushgate"} "${objects[@]/#/-e}" 2>"$work/shlibdeps.log") || {
  cat "$work/shlibdeps.log" >&2
  die "dpkg-shlibdeps failed"
}
# The bundled Swift libraries have unversioned names (libswiftCore.so) and no shlibs entries of
# their own: dpkg-shlibdeps says so for each, and rightly skips them. Anything else is shown.
grep -v -e "can't extract name and version from library name" -e 'could avoid a useless dependency' \
  -e 'binaries to analyze should already be installed in their package' "$work/shlibdeps.log" | grep -v '^$' >&2 || true
depends=${shlibs#shlibs:Depends=}
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies"
# HTTP/2 fan-outs need libcurl 8 (bookworm-backports on Debian 12; README, scripts/setup.sh).
depends=$(echo "$depends" | sed -E 's/libcurl4 \([^)]*\)/libcurl4 (>= 8.0.0)/; t; s/$/, libcurl4 (>= 8.0.0)/')
depends="adduser, $depends"
installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)

sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends/" \
  -e "s/@INSTALLED_SIZE@/$installed_size/" packaging/debian/control >"$stage/DEBIAN/control"
install -m 0644 packaging/debian/conffiles "$stage/DEBIAN/conffiles"
for script in postinst prerm postrm; do install -m 0755 "packaging/debian/$script" "$stage/DEBIAN/$script"; done
# Every conffile must be in the package and every /etc file a conffile.
diff <(sort "$stage/DEBIAN/conffiles") <(cd "$stage" && find etc -type f | sed 's|^|/|' | sort) >&2 ||
  die "packaging/debian/conffiles does not list exactly the files under /etc (above)"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"

deb="$out/pushgate_${version}_${arch}.deb"
# xz for what ships; PUSHGATE_DEB_COMPRESSION=gzip for a quicker build (the test's).
dpkg-deb --root-owner-group -Z"${PUSHGATE_DEB_COMPRESSION:-xz}" --build "$stage" "$deb" >&2

if command -v lintian >/dev/null; then
  echo "package: lintian (advisory):" >&2
  lintian --no-tag-display-limit "$deb" >&2 || true
fi
echo "$root/$deb"
