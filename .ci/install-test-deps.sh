#!/usr/bin/env bash
# Installs the real peers the integration tests drive: containerd + runc, a registry, the tools
# that build test images offline, htpasswd for the authenticated-registry tests, and Go with
# grpc-go's sources for the grpc-go client (kubelet's gRPC stack, GrpcGoClient), and node with the
# grpc-js packages of the Koordinator hook peer. Idempotent.
# kubectl is not installable here: the machine image ships /usr/lib/google-cloud-sdk/bin/kubectl.*.
set -euo pipefail
packages=(containerd runc containernetworking-plugins docker-registry skopeo umoci busybox-static
          gcc libc6-dev apache2-utils iproute2 docker.io golang-go golang-google-grpc-dev)
packages+=(python3) # runs tools/proto-from-facts.py for cri-api's ProtoFromFactsTest
packages+=(chromium) # headless, loads the image pull progress page in proxy-core's PullProgressPageIT
packages+=(prometheus) # prometheus scrapes ./cri4j proxy --metrics-address and promtool lints it (cli's ProxyPrometheusIT)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Debian's kubernetes-client (kubectl 1.20, SPDY only) is a third real streaming client. It is
# unpacked, not installed, so it never shadows the machine's own kubectl.
kc_dir=/opt/cri4j/kubernetes-client
if [[ ! -x "$kc_dir/usr/bin/kubectl" ]]; then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download kubernetes-client >/dev/null 2>&1 \
     || { $sudo apt-get update -q && apt-get download kubernetes-client; })
  $sudo mkdir -p "$kc_dir"
  $sudo dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$kc_dir"
  rm -rf "$tmp"
fi
"$kc_dir/usr/bin/kubectl" version --client 2>/dev/null | head -1 || true

# node + npm and the grpc-js packages of the Koordinator hook peer (KoordinatorHookPeer in
# proxy-core's tests), installed from its lock file into a fixed directory the tests look in.
# The machine image may bring its own nodejs (with npm); Debian's packages otherwise.
sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  $sudo apt-get update -q
  node_pkgs=(npm); command -v node >/dev/null 2>&1 || node_pkgs+=(nodejs)
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${node_pkgs[@]}"
fi
peer_src="$(cd "$(dirname "$0")/.." && pwd)/proxy-core/src/test/resources/io/cri4j/proxy/koordinator-peer"
peer_dir=/opt/cri4j/koordinator-peer
if ! cmp -s "$peer_src/package-lock.json" "$peer_dir/node_modules/.cri4j-package-lock.json"; then
  $sudo mkdir -p "$peer_dir"
  $sudo cp "$peer_src/package.json" "$peer_src/package-lock.json" "$peer_dir/"
  (cd "$peer_dir" && $sudo npm ci --ignore-scripts --no-audit --no-fund)
  $sudo cp "$peer_src/package-lock.json" "$peer_dir/node_modules/.cri4j-package-lock.json"
fi
echo "grpc-js peer packages in $peer_dir: $(ls "$peer_dir/node_modules/@grpc")"

# containerd 2.1.4 (NRI v0.8) and 2.3.4 (NRI v0.12) with NRI's own Go plugins, and critest with its CRI and NRI
# conformance specs, are not in Debian 12: ../shared/peers carries them beside the repository (CI has it); the tests
# that need them skip without them (fail with CI=true).
shared="$(cd "$(dirname "$0")/.." && pwd)/../shared"
for peer in install-containerd2.sh install-containerd23.sh install-critest.sh; do
  if [[ -f "$shared/peers/$peer" ]]; then
    sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo bash "$shared/peers/$peer"
  fi
done

# The Debian packages enable services we do not want competing with the private instances the
# tests start; stop them if a service manager started them.
for svc in containerd docker-registry docker docker.socket; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done
echo "test dependencies present: ${packages[*]}"
