#!/usr/bin/env python3
"""Fails when a public symbol of a checked module has no `///` doc comment.

Reads the symbol graphs `swift package dump-symbol-graph` writes (public and open symbols only) and
lists every symbol of MODULES that is declared in this package's sources without a doc comment.
Members that only implement a protocol requirement or come from a protocol extension of another
module (`description`, `errorDescription`, `==`, …) and overrides of a superclass member inherit that
documentation and are not required (so no filler like "/// The message." is needed); synthesized
members are not in the sources and are skipped.

Usage: .ci/check-doc-comments.py [MODULE ...]     (default: MODULES below)
To check JobKitNetworking too, add it to MODULES (or pass it on the command line).
"""
import glob
import json
import os
import re
import subprocess
import sys

MODULES = ["JobKit", "JobKitTesting", "JobKitServer", "JobKitNetworking", "JobKitCombine", "JobKitTracing"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    modules = sys.argv[1:] or MODULES
    output = subprocess.run(
        ["swift", "package", "dump-symbol-graph", "--minimum-access-level", "public"],
        cwd=ROOT, capture_output=True, text=True)
    if output.returncode != 0:
        print(output.stdout + output.stderr)
        return 1
    match = re.search(r"Files written to (\S+)", output.stdout + output.stderr)
    directory = match.group(1) if match else None
    if not directory or not os.path.isdir(directory):
        candidates = glob.glob(os.path.join(ROOT, ".build", "*", "*", "symbolgraph"))
        directory = max(candidates, key=os.path.getmtime)
    sources = os.path.join(ROOT, "Sources") + os.sep
    missing = []
    for module in modules:
        # `Module.symbols.json` and the `Module@Other.symbols.json` of its extensions to other modules.
        paths = glob.glob(os.path.join(directory, f"{module}.symbols.json"))
        paths += glob.glob(os.path.join(directory, f"{module}@*.symbols.json"))
        if not paths:
            print(f"no symbol graph for {module} in {directory}")
            return 1
        for path in paths:
            graph = json.load(open(path, encoding="utf-8"))
            implementations = {
                relationship["source"]
                for relationship in graph.get("relationships", [])
                if relationship["kind"] in ("defaultImplementationOf", "overrides")
                or (relationship["kind"] == "memberOf" and "sourceOrigin" in relationship)
            }
            for symbol in graph.get("symbols", []):
                if symbol.get("accessLevel") not in ("public", "open"):
                    continue
                location = symbol.get("location", {}).get("uri", "")
                if not location.startswith("file://" + sources):
                    continue  # synthesized, or declared by another module
                if symbol.get("docComment", {}).get("lines"):
                    continue
                if symbol["identifier"]["precise"] in implementations:
                    continue  # documented by the protocol requirement it implements
                position = symbol["location"].get("position", {})
                file = location[len("file://" + ROOT) + 1:]
                name = ".".join(symbol["pathComponents"])
                missing.append(f"{file}:{position.get('line', 0) + 1}: {symbol['kind']['displayName']} {name}")
    for entry in sorted(set(missing)):
        print(f"undocumented: {entry}")
    print(f"doc comments: {len(set(missing))} public symbols undocumented in {', '.join(modules)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
