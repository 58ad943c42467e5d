#!/usr/bin/env bash
# Regenerates every .proto the project generates from upstream wire facts, with
# tools/proto-from-facts.py. With --check, writes nothing and fails if a checked-in .proto differs
# from what the facts (and comments) give.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = "--check" ] && check=true

status=0
generate() { # OUTPUT FACTS JAVA_PACKAGE OUTER_CLASSNAME [--comments FILE]
  local out=$1; shift
  local tmp
  tmp=$(mktemp)
  python3 tools/proto-from-facts.py "$@" > "$tmp"
  if $check; then
    if ! diff -u "$out" "$tmp"; then
      echo "$out is not what tools/proto-from-facts.py generates; run tools/regenerate-protos.sh" >&2
      status=1
    fi
    rm -f "$tmp"
  else
    mv "$tmp" "$out"
  fi
}

cri=cri-api/src/main/proto/runtime
facts=cri-api/src/test/resources/wire-facts
generate $cri/v1/api.proto $facts/cri-runtime-v1.facts io.cri4j.cri.v1 CriApiV1 \
  --comments $cri/v1/api.comments
generate $cri/v1alpha2/api.proto $facts/cri-runtime-v1alpha2.facts io.cri4j.cri.v1alpha2 CriApiV1alpha2 \
  --comments $cri/v1/api.comments
generate hook-api/src/main/proto/nri/pkg/api/v1alpha1/api.proto \
  hook-api/src/test/resources/wire-facts/nri-api-v0.12.2.facts io.cri4j.hook.nri.v1alpha1 Api
exit $status
