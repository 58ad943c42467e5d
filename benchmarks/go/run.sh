#!/usr/bin/env bash
# Proxy latency measured with kubelet's own gRPC stack (grpc-go) as the client, in a process of
# its own, as kubelet is: direct and through the proxy, interleaved round by round.
#
#   benchmarks/go/run.sh builtin [ROUNDS]          built-in backend: Version and CreateContainer,
#                                                  relayed, with hooks and interceptors
#   benchmarks/go/run.sh runtime SOCKET [ROUNDS]   Version against a runtime (e.g. containerd):
#                                                  direct, bare byte relays, the proxy
#
# Needs Debian's golang-go and golang-google-grpc-dev (installed when missing, as root).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="${1:?builtin or runtime SOCKET}"
if [[ "$mode" == runtime ]]; then
  socket="${2:?the unix socket path of the runtime}"
  rounds="${3:-20}"
else
  rounds="${2:-20}"
fi

if ! command -v go >/dev/null || [[ ! -d /usr/share/gocode/src/google.golang.org/grpc ]]; then
  apt-get install -y golang-go golang-google-grpc-dev >&2
fi
# the client's source ships in cri-testing (GrpcGoClient builds it for tests the same way)
mkdir -p "$here/target/src/grpcgolatency"
cp "$root/cri-testing/src/main/resources/io/cri4j/testing/real/grpcgo/main.go" \
  "$here/target/src/grpcgolatency/main.go"
(cd "$here/target/src/grpcgolatency" && GO111MODULE=off GOPATH="$here/target:/usr/share/gocode" \
  GOCACHE="$here/target/gocache" go build -o "$here/target/grpcgolatency" .)
jar="$root/benchmarks/target/benchmarks.jar"
if [[ ! -f "$jar" ]]; then
  (cd "$root" && mvn -B -q -pl benchmarks -am package -DskipTests >&2)
fi

out="$(mktemp)"
trap 'kill "$server" 2>/dev/null || true; rm -f "$out"' EXIT
if [[ "$mode" == runtime ]]; then
  java -cp "$jar" io.cri4j.benchmarks.RelayFloor serve "$socket" >"$out" 2>"$out.log" &
  want=3
else
  java -cp "$jar" io.cri4j.benchmarks.ProxyLatencyRatio serve >"$out" 2>"$out.log" &
  want=9
fi
server=$!
for _ in $(seq 300); do # up to 30 s for the JVM to print its sockets
  [[ "$(wc -l <"$out")" -ge "$want" ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$out.log" >&2; exit 1; }
  sleep 0.1
done
get() { sed -n "s/^$1=//p" "$out"; }
bench="$here/target/grpcgolatency"

if [[ "$mode" == runtime ]]; then
  "$bench" -rounds "$rounds" "direct=$socket" "blocking-relay=$(get 'blocking relay')" \
    "netty-relay=$(get 'netty relay')" "cri4j-proxy=$(get 'cri4j proxy')"
else
  echo "Version (64-byte request)"
  "$bench" -rounds "$rounds" -request "0a40$(printf 'x%.0s' {1..64} | xxd -p | tr -d '\n')" \
    "direct=$(get direct)" "relayed=$(get relayed)"
  echo "CreateContainer (against the changed request sent directly: the last line)"
  "$bench" -rounds "$rounds" -method /runtime.v1.RuntimeService/CreateContainer \
    -request "$(get request)" "direct=$(get direct)" "relayed=$(get relayed)" \
    "hook-thread=$(get hook-thread)" "inline-hook=$(get inline-hook)" \
    "interceptor=$(get interceptor)" "async-interceptor=$(get async-interceptor)" \
    "remote-hook=$(get remote-hook)" "changed-direct=$(get direct)@$(get changed)"
fi
