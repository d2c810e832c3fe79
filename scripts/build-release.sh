#!/usr/bin/env bash
# The release build of what ships: `swift build -c release --product pushgate`, with every Swift and
# C function (ours and the dependencies') in a section of its own, so that the link drops unused
# functions one by one (`--gc-sections`) and places each by itself. Extra arguments go to swift
# build (e.g. --static-swift-stdlib).
#
#   scripts/build-release.sh                 # .build/release/pushgate
set -euo pipefail
cd "$(dirname "$0")/.."
exec swift build -c release --product pushgate \
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections "$@"
