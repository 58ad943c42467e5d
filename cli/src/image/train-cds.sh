#!/usr/bin/env bash
# Makes the image's class data sharing archive (/app/cri4j-proxy.jsa) by a training run over the
# image's own files: the layers of IMAGE_TAR (a Jib docker-archive) are unpacked as a container
# runtime unpacks them, and in a chroot of them the entrypoint's java, with the entrypoint's flags,
# runs a fake runtime and the image's default command (the proxy, with a hook config directory)
# and sends one Version through it; the proxy writes the archive as it exits. A JDK 17 archive is
# valid only for the same JVM and the same class path files (paths, sizes, modification times),
# which the final image has: the same layers plus this archive.
# usage: train-cds.sh IMAGE_TAR OUTPUT_DIR   (writes OUTPUT_DIR/app/cri4j-proxy.jsa)
#        train-cds.sh --check IMAGE_TAR LOG    (the same run with the image's archive, -Xshare:on:
#                                               the JVM refuses to start if it cannot map it; the
#                                               proxy's -Xlog:class+load output goes to LOG)
# Needs root or unprivileged user namespaces (a mount namespace for /proc and /dev in the chroot).
set -euo pipefail
check=0
if [[ "$1" == --check ]]; then
  check=1
  shift
fi
image_tar="$(readlink -f "$1")"
out="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$work/image" "$root"
tar -xf "$image_tar" -C "$work/image"
# the layers in order, base first, and the entrypoint (a JSON array of plain strings)
layers=$(grep -o '"Layers":\[[^]]*\]' "$work/image/manifest.json" | sed 's/^"Layers":\[//; s/\]$//; s/"//g; s/,/ /g')
for layer in $layers; do
  tar -xzf "$work/image/$layer" -C "$root" 2>/dev/null
done
IFS=',' read -r -a entrypoint <<<"$(grep -o '"Entrypoint":\[[^]]*\]' "$work/image/config.json" | sed 's/^"Entrypoint":\[//; s/\]$//; s/"//g')"
archive=/app/cri4j-proxy.jsa
trainee=() runtime=()
for arg in "${entrypoint[@]}"; do
  case "$arg" in
    "-XX:SharedArchiveFile=$archive")
      if [[ $check == 1 ]]; then
        trainee+=("$arg" -Xlog:class+load:file=/tmp/class-load.log)
      else
        trainee+=("-XX:ArchiveClassesAtExit=$archive")
      fi
      ;;
    -XX:SharedArchiveFile=*) echo "train-cds.sh: the entrypoint names $arg, not $archive" >&2; exit 1 ;;
    -Xshare:auto) trainee+=("$([[ $check == 1 ]] && echo -Xshare:on || echo -Xshare:auto)"); runtime+=("$arg") ;;
    *) trainee+=("$arg"); runtime+=("$arg") ;;
  esac
done
[[ " ${entrypoint[*]} " == *" -XX:SharedArchiveFile=$archive "* ]] || {
  echo "train-cds.sh: the entrypoint does not name -XX:SharedArchiveFile=$archive" >&2
  exit 1
}
mkdir -p "$root/proc" "$root/dev" "$root/tmp/hooks"
printf '%q ' "${trainee[@]}" >"$work/trainee"
printf '%q ' "${runtime[@]}" >"$work/runtime"
# in a mount and PID namespace of its own: /proc and /dev for the JVM, gone with the namespace
as_root=()
[[ $(id -u) == 0 ]] || as_root=(--map-root-user)
unshare "${as_root[@]}" --mount --pid --fork --mount-proc="$root/proc" \
  bash -euo pipefail -c '
    root="$1" work="$2"
    mount --rbind /dev "$root/dev"
    trainee="$(cat "$work/trainee")" runtime="$(cat "$work/runtime")"
    eval "exec chroot \"\$root\" $runtime fake-runtime --listen unix:///tmp/rt.sock" >"$work/rt.log" 2>&1 &
    rt=$!
    eval "exec chroot \"\$root\" $trainee proxy --listen unix:///tmp/proxy.sock --backend unix:///tmp/rt.sock --hook-config-dir /tmp/hooks" >"$work/proxy.log" 2>&1 &
    proxy=$!
    ok=0
    for _ in $(seq 1 120); do
      if eval "chroot \"\$root\" $runtime version -r unix:///tmp/proxy.sock" >/dev/null 2>&1; then ok=1; break; fi
      kill -0 "$proxy" 2>/dev/null || break
      sleep 0.5
    done
    kill -TERM "$proxy" 2>/dev/null || true
    wait "$proxy" || true
    kill -TERM "$rt" 2>/dev/null || true
    wait "$rt" || true
    if [[ $ok != 1 ]]; then
      echo "train-cds.sh: the proxy in the image did not answer; its output:" >&2
      cat "$work/proxy.log" "$work/rt.log" >&2
      exit 1
    fi
  ' train-cds "$root" "$work"
if [[ $check == 1 ]]; then
  cp "$root/tmp/class-load.log" "$out"
  echo "the image's proxy answered, started with -Xshare:on from $archive; its class loading: $out"
  exit 0
fi
[[ -s "$root$archive" ]] || { echo "train-cds.sh: no archive written; the proxy's output:" >&2; cat "$work/proxy.log" >&2; exit 1; }
mkdir -p "$out/app"
cp "$root$archive" "$out$archive"
echo "class data sharing archive for the image: $out$archive ($(du -h "$out$archive" | cut -f1))"
