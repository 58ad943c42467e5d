#!/usr/bin/env bash
# Proxy latency measured with kubelet's own gRPC stack (grpc-go) as the client, in a process of
# its own, as kubelet is: direct and through the proxy, interleaved round by round.
#
#   benchmarks/go/run.sh builtin [ROUNDS]          built-in backend: Version and CreateContainer,
#                                                  relayed, with hooks and interceptors, and with
#                                                  NRI's Go nri-logger on the proxy's NRI socket
#                                                  (JAVA_OPTS=-Dnri=false leaves it out)
#   benchmarks/go/run.sh runtime SOCKET [ROUNDS]   Version against a runtime (e.g. containerd):
#                                                  direct, bare byte relays, the proxy
#   benchmarks/go/run.sh jvm SOCKET|fake ROUNDS NAME="JVM FLAGS"...
#                                                  Version against a runtime (fake: a `cri4j
#                                                  fake-runtime` with the JVM's defaults), direct and
#                                                  through one `cri4j proxy` process (the CLI jar) per
#                                                  setting (`defaults`: ./cri4j's defaults= and
#                                                  proxy_flags= lines), all
#                                                  interleaved; then each proxy's VmRSS
#                                                  (CLI_JAR=FILE: another CLI jar)
#
# Needs Debian's golang-go and golang-google-grpc-dev (installed when missing, as root).
# GOCACHE, when set, is the Go build cache (default: benchmarks/go/target/gocache).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="${1:?builtin or runtime SOCKET}"
if [[ "$mode" == runtime || "$mode" == jvm ]]; then
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
  GOCACHE="${GOCACHE:-$here/target/gocache}" go build -o "$here/target/grpcgolatency" .)
bench_dir="$here/target"
jar="$root/benchmarks/target/benchmarks.jar"
if [[ "$mode" != jvm && ! -f "$jar" ]]; then
  (cd "$root" && mvn -B -q -pl benchmarks -am package -DskipTests >&2)
fi

if [[ "$mode" == jvm ]]; then
  cli="${CLI_JAR:-$root/cli/target/cri4j-cli.jar}"
  [[ -f "$cli" ]] || (cd "$root" && mvn -B -q -pl cli -am package -DskipTests >&2)
  dir="$(mktemp -d)"
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"' EXIT
  up() { # SOCKET PID: polls until the socket answers Version
    for _ in $(seq 600); do
      "$here/target/grpcgolatency" -rounds 1 -calls 1 -warmup 0 "x=$1" >/dev/null 2>&1 && return 0
      kill -0 "$2" 2>/dev/null || return 1
      sleep 0.1
    done
    return 1
  }
  if [[ "$socket" == fake ]]; then
    socket="$dir/fake.sock"
    java -jar "$cli" fake-runtime --listen "unix://$socket" >"$dir/fake.log" 2>&1 &
    pids+=($!)
    up "$socket" "$!" || { cat "$dir/fake.log" >&2; exit 1; }
  fi
  series=("direct=$socket")
  names=()
  for setting in "${@:4}"; do
    name="${setting%%=*}" flags="${setting#*=}"
    if [[ "$flags" == defaults ]]; then
      # ./cri4j's defaults with the proxy's own flags after them, as ./cri4j starts the proxy
      flags="$(sed -n 's/^defaults="\(.*\)"$/\1/p' "$root/cri4j") $(sed -n 's/^proxy_flags="\(.*\)"$/\1/p' "$root/cri4j")"
    fi
    # shellcheck disable=SC2086 # FLAGS: several options
    MALLOC_ARENA_MAX=2 java $flags -jar "$cli" proxy --listen "unix://$dir/$name.sock" \
      --backend "unix://$socket" >"$dir/$name.log" 2>&1 &
    pids+=($!)
    names+=("$name=$!")
    up "$dir/$name.sock" "$!" || { cat "$dir/$name.log" >&2; exit 1; }
    series+=("$name=$dir/$name.sock")
  done
  "$bench_dir/grpcgolatency" -rounds "$rounds" "${series[@]}"
  for n in "${names[@]}"; do
    echo "${n%%=*}: VmRSS $(awk '/VmRSS/ {printf "%.1f MiB", $2/1024}' "/proc/${n#*=}/status")"
  done
  exit 0
fi

out="$(mktemp)"
# the server stops on TERM (its shutdown hook stops nri-logger and gives back NRI's socket link)
trap 'kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; rm -f "$out" "$out.log"' EXIT
if [[ "$mode" == runtime ]]; then
  java -cp "$jar" io.cri4j.benchmarks.RelayFloor serve "$socket" >"$out" 2>"$out.log" &
  ready() { [[ "$(wc -l <"$out")" -ge 3 ]]; }
else
  # shellcheck disable=SC2086 # JAVA_OPTS: several options
  java ${JAVA_OPTS:-} -cp "$jar" io.cri4j.benchmarks.ProxyLatencyRatio serve >"$out" 2>"$out.log" &
  ready() { grep -qx ready "$out"; }
fi
server=$!
for _ in $(seq 600); do # up to 60 s for the JVM to print its sockets (nri-logger registered)
  ready && break
  kill -0 "$server" 2>/dev/null || { cat "$out.log" >&2; exit 1; }
  sleep 0.1
done
ready || { echo "the server did not get ready:" >&2; cat "$out.log" >&2; exit 1; }
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
  # every proxy the server printed (NAME=SOCKET after direct=), in its order
  series=()
  while IFS= read -r line; do series+=("$line"); done \
    < <(sed -n '/^direct=/,/^ready$/p' "$out" | sed '1d;$d')
  "$bench" -rounds "$rounds" -method /runtime.v1.RuntimeService/CreateContainer \
    -request "$(get request)" "direct=$(get direct)" "${series[@]}" \
    "changed-direct=$(get direct)@$(get changed)"
fi
