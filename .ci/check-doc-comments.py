#!/usr/bin/env python3
"""Fails when a public symbol of a checked module has no `///` doc comment.

Reads the symbol graphs `swift package dump-symbol-graph` writes (public and open symbols only) and
lists every symbol of MODULES that is declared in this package's sources without a doc comment.
Members that only implement a protocol requirement or come from a protocol extension of another
module (`description`, `errorDescription`, `==`, …) and overrides of a superclass member inherit that
documentation and are not required (so no filler like "/// The message." is needed); synthesized
members are not in the sources and are skipped.

Usage: .ci/check-doc-comments.py [--docc] [MODULE ...]     (default: MODULES below)
--docc reads the symbol graphs .ci/build-docs.py extracted for each module (.build/docs-symbol-graphs/
MODULE/), so that CI, which has just built the documentation, does not extract them a second time.
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


def docc_directory(module):
    """The folder where .ci/build-docs.py extracted `module`'s symbol graphs, or None."""
    directory = os.path.join(ROOT, ".build", "docs-symbol-graphs", module)
    return directory if os.path.isdir(directory) else None


def main():
    arguments = sys.argv[1:]
    docc = "--docc" in arguments
    modules = [argument for argument in arguments if argument != "--docc"] or MODULES
    if docc:
        directories = {module: docc_directory(module) for module in modules}
        absent = [module for module, directory in directories.items() if directory is None]
        if absent:
            print(f"no DocC symbol graphs for {', '.join(absent)}: run .ci/build-docs.py first")
            return 1
        return check(modules, directories)
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
    return check(modules, {module: directory for module in modules})


def check(modules, directories):
    """Lists the undocumented public symbols of `modules`, whose graphs are in `directories`."""
    sources = os.path.join(ROOT, "Sources") + os.sep
    missing = []
    for module in modules:
        directory = directories[module]
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
                if symbol["kind"]["identifier"] == "swift.extension":
                    continue  # an extension block (DocC's graphs list them): its members are checked
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
