#!/usr/bin/env bash
# Micro-benchmarks (ordo-one/benchmark): template rendering and tag-expression evaluation.
# Built in its own scratch folder so the normal build never compiles the benchmark package.
#   scripts/bench.sh                 # run all
#   scripts/bench.sh --filter 'render.*'
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
export PUSHGATE_BENCHMARKS=1
exec swift package --scratch-path .build-bench --allow-writing-to-package-directory benchmark "$@"
