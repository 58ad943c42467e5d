#!/usr/bin/env bash
# Assembles the root filesystem layer Jib puts under the agent: a jlinked Java runtime plus the
# glibc libraries it and Netty's epoll native code need, so the image builds from `scratch`
# without pulling a base image from any registry (Jib needs no Docker daemon either).
# usage: make-runtime.sh OUTPUT_DIR
set -euo pipefail
out="$1"
rm -rf "$out"
mkdir -p "$out/opt" "$out/tmp" "$out/etc"
java_home="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
"$java_home/bin/jlink" --add-modules java.base,java.logging,java.management,java.naming,java.net.http,jdk.unsupported,jdk.crypto.ec,java.security.jgss,jdk.net \
  --strip-debug --no-header-files --no-man-pages --generate-cds-archive --output "$out/opt/java"
# every shared library the runtime's binaries and libraries link against, the loader, and what
# Netty's epoll library (unpacked from its jar at run time) links against: libdl and librt
libs=$( { ldd "$out/opt/java/bin/java"; find "$out/opt/java/lib" -name '*.so' -exec ldd {} \; 2>/dev/null; } \
        | awk '/=> \//{print $3} /^\s*\/lib/{print $1}' | sort -u)
for lib in $libs /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libgcc_s.so.1 /lib/x86_64-linux-gnu/libresolv.so.2 \
           /lib/x86_64-linux-gnu/libnss_files.so.2 /lib/x86_64-linux-gnu/libnss_dns.so.2 \
           /lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/librt.so.1; do
  [[ -e "$lib" ]] || continue
  case "$lib" in "$out"/*) continue ;; esac
  mkdir -p "$out$(dirname "$lib")"
  cp -L "$lib" "$out$lib"
done
echo "root:x:0:0:root:/root:/sbin/nologin" > "$out/etc/passwd"
echo "root:x:0:" > "$out/etc/group"
echo "hosts: files dns" > "$out/etc/nsswitch.conf"
echo "runtime for the image in $out ($(du -sh "$out" | cut -f1))"
