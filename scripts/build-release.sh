#!/usr/bin/env bash
# The release build of what ships: `swift build -c release --product pushgate`, with every Swift and
# C function (ours and the dependencies') in a section of its own, so that the link drops unused
# functions one by one (`--gc-sections`) and places each by itself. Extra arguments go to swift
# build (e.g. --static-swift-stdlib).
#
# `--with-tests` builds every target instead, the tests included (CI's one build): the tests import
# no module `@testable` (what they reach is `package`), so each module is compiled with exactly the
# flags of the shipped build, and the `pushgate` it links is the one that ships.
#
#   scripts/build-release.sh                 # .build/release/pushgate
#   scripts/build-release.sh --with-tests    # and .build/release/PushgatePackageTests.xctest
set -euo pipefail
cd "$(dirname "$0")/.."
what=(--product pushgate)
if [ "${1:-}" = "--with-tests" ]; then
  what=(--build-tests)
  shift
fi
exec swift build -c release "${what[@]}" \
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections "$@"
