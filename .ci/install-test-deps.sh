#!/usr/bin/env bash
# Installs the Debian packages the real-runtime integration tests (cri-testing) need:
# a private containerd + runc, CNI plugins, a private docker-registry, and the tools that build
# test images offline (busybox-static, umoci, skopeo, gcc -static for the pause image,
# htpasswd for registry basic auth). Idempotent: does nothing when everything is present.
set -euo pipefail

packages=(
  containerd runc containernetworking-plugins
  docker-registry apache2-utils
  skopeo umoci busybox-static
  gcc libc6-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-test-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

echo "install-test-deps: installing ${missing[*]}"
$SUDO apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"

# The Debian packages start system services on install; the tests start their own private
# instances and do not need them.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now containerd.service docker-registry.service >/dev/null 2>&1 || true
fi
