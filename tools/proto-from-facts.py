#!/usr/bin/env python3
"""Writes a .proto file from a wire-facts file (CRI: cri-api/src/test/resources/wire-facts/).

The facts list every field, map entry, enum value and RPC of an upstream API, one per line.
This script turns them back into proto3 source, so our bindings are built from the upstream
facts themselves and cannot drift from them. Comments and options that do not reach the wire
are not in the facts; Java options are added here, and the comments come from a sidecar file.

usage: proto-from-facts.py FACTS JAVA_PACKAGE OUTER_CLASSNAME [--comments FILE] > api.proto

A comments file (see cri-api/src/main/proto/runtime/v1/api.comments) holds one entry per
element, keyed by its full name: `runtime.v1.ContainerConfig` (message or enum),
`runtime.v1.ContainerConfig.envs` (field), `runtime.v1.Protocol.TCP` (enum value),
`runtime.v1.RuntimeService` (service), `runtime.v1.RuntimeService/Exec` (RPC). An entry starts
with its key at the beginning of a line; its text follows on the same line and/or on indented
lines below, and is written as `//` lines, wrapped at column 100, before the element's
declaration. Lines starting with `#` are ignored. A `package runtime.v1` line names the package
of the keys, so that the facts of another package can reuse the file (runtime.v1alpha2 reuses
runtime.v1's). With a comments file every element needs an entry; an entry that names no
element is an error when the packages are the same.

tools/regenerate-protos.sh runs this script for every generated .proto of the project.
"""
import collections
import sys
import textwrap

SCALARS = {
    "TYPE_BOOL": "bool", "TYPE_BYTES": "bytes", "TYPE_DOUBLE": "double", "TYPE_FLOAT": "float",
    "TYPE_INT32": "int32", "TYPE_INT64": "int64", "TYPE_UINT32": "uint32", "TYPE_UINT64": "uint64",
    "TYPE_SINT32": "sint32", "TYPE_SINT64": "sint64", "TYPE_FIXED32": "fixed32",
    "TYPE_FIXED64": "fixed64", "TYPE_SFIXED32": "sfixed32", "TYPE_SFIXED64": "sfixed64",
    "TYPE_STRING": "string",
}
WIDTH = 100


def read_comments(path):
    """Returns (package or None, {key: text}) from a comments file."""
    package, entries, key, order = None, {}, None, []
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] in " \t":
            if key is None:
                sys.exit("%s:%d: text before the first key" % (path, number))
            entries[key].append(line.strip())
            continue
        first, _, rest = line.partition(" ")
        if first == "package":
            package = rest.strip()
            continue
        if first in entries:
            sys.exit("%s:%d: second entry for %s" % (path, number, first))
        key = first
        entries[key] = [rest.strip()] if rest.strip() else []
        order.append(key)
    return package, {k: " ".join(entries[k]) for k in order}


def main(argv):
    comments_path = None
    if "--comments" in argv:
        i = argv.index("--comments")
        comments_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) != 3:
        sys.exit(__doc__.split("\n\n")[2])
    facts_path, java_package, outer = argv
    fields = collections.defaultdict(list)   # message -> [(number, name, label, type, typename)]
    enums = collections.defaultdict(list)    # enum -> [(number, value)]
    mapentries = set()
    rpcs = collections.defaultdict(list)     # service -> [(method, in, out, cs, ss)]
    referenced = set()
    for line in open(facts_path):
        parts = line.split()
        if not parts:
            continue
        kind = parts[0]
        if kind == "field":
            full, number, label, ftype = parts[1], int(parts[3]), parts[4], parts[5]
            typename = parts[6] if len(parts) > 6 and parts[6].startswith(".") else None
            if any(p.startswith("oneof") for p in parts[6:]):
                sys.exit("oneof fields are not supported: " + line)
            msg, name = full.rsplit(".", 1)
            fields[msg].append((number, name, label, ftype, typename))
            if typename and ftype == "TYPE_MESSAGE":
                referenced.add(typename[1:])
        elif kind == "enum":
            full, number = parts[1], int(parts[3])
            enum, value = full.rsplit(".", 1)
            enums[enum].append((number, value))
        elif kind == "mapentry":
            mapentries.add(parts[1])
        elif kind == "rpc":
            service, method = parts[1].split("/")
            rpcs[service].append((method, parts[2], parts[4], parts[5] == "cs=true", parts[6] == "ss=true"))
            referenced.add(parts[2][1:])
            referenced.add(parts[4][1:])
        else:
            sys.exit("unknown fact: " + line)
    package = next(iter(rpcs)).rsplit(".", 1)[0]
    messages = set(fields) | referenced
    for m in list(messages):   # parents of nested messages are messages too
        while m.rsplit(".", 1)[0] != package and "." in m:
            m = m.rsplit(".", 1)[0]
            if m.startswith(package + ".") and m != package:
                messages.add(m)

    def parent(name):
        p = name.rsplit(".", 1)[0]
        return p if p in messages else None

    children = collections.defaultdict(list)
    for m in messages:
        children[parent(m)].append(("message", m))
    for e in enums:
        children[parent(e)].append(("enum", e))

    comments, comments_package = None, package
    if comments_path:
        comments_package, comments = read_comments(comments_path)
        comments_package = comments_package or package
    used, missing = set(), []

    out = []
    w = out.append
    w("// Generated by tools/proto-from-facts.py from the upstream wire facts in")
    if comments is None:
        w("// " + facts_path.split("/")[-1] + ". Do not edit: edit the facts and regenerate.")
    else:
        w("// " + facts_path.split("/")[-1] + " and the comments in "
          + "/".join(comments_path.split("/")[-3:]) + ".")
        w("// Do not edit: edit those and regenerate with tools/regenerate-protos.sh.")
    w('syntax = "proto3";')
    w("")
    w("package " + package + ";")
    w("")
    w('option java_package = "' + java_package + '";')
    w("option java_multiple_files = true;")
    w('option java_outer_classname = "' + outer + '";')
    w("")

    def comment(name, pad):
        if comments is None:
            return
        key = comments_package + name[len(package):]
        text = comments.get(key)
        if not text:
            missing.append(key)
            return
        used.add(key)
        for line in textwrap.wrap(text, WIDTH - len(pad) - 3, break_long_words=False,
                                  break_on_hyphens=False):
            w(pad + "// " + line)

    def short(name):
        return name.rsplit(".", 1)[1]

    def type_of(ftype, typename):
        return SCALARS[ftype] if ftype in SCALARS else typename

    def emit(kind, name, indent):
        pad = "  " * indent
        if kind == "enum":
            values = sorted(enums[name])
            comment(name, pad)
            w(pad + "enum " + short(name) + " {")
            if len({n for n, _ in values}) != len(values):
                w(pad + "  option allow_alias = true;")
            for number, value in values:
                comment(name + "." + value, pad + "  ")
                w(pad + "  " + value + " = " + str(number) + ";")
            w(pad + "}")
            return
        if name in mapentries:
            return
        comment(name, pad)
        w(pad + "message " + short(name) + " {")
        for ckind, child in sorted(children[name], key=lambda c: (c[0] != "enum", c[1])):
            emit(ckind, child, indent + 1)
        for number, fname, label, ftype, typename in sorted(fields[name]):
            if typename and typename[1:] in mapentries:
                entry = {f[1]: f for f in fields[typename[1:]]}
                k, v = entry["key"], entry["value"]
                decl = "map<" + type_of(k[3], k[4]) + ", " + type_of(v[3], v[4]) + ">"
            else:
                decl = ("repeated " if label == "LABEL_REPEATED" else "") + type_of(ftype, typename)
            comment(name + "." + fname, pad + "  ")
            w(pad + "  " + decl + " " + fname + " = " + str(number) + ";")
        w(pad + "}")

    for service in sorted(rpcs):
        comment(service, "")
        w("service " + short(service) + " {")
        for method, rin, rout, cs, ss in sorted(rpcs[service]):
            comment(service + "/" + method, "  ")
            w("  rpc " + method + "(" + ("stream " if cs else "") + rin + ") returns ("
              + ("stream " if ss else "") + rout + ") {}")
        w("}")
        w("")
    for kind, name in sorted(children[None], key=lambda c: (c[0] != "enum", c[1])):
        emit(kind, name, 0)
        w("")

    errors = ["no comment for " + k for k in missing]
    if comments is not None and comments_package == package:
        errors += ["comment for no element: " + k for k in comments if k not in used]
    if errors:
        sys.exit(comments_path + ":\n  " + "\n  ".join(errors))
    sys.stdout.write("\n".join(out).rstrip() + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
