#!/usr/bin/env python3
"""Builds the documentation of JobKit's modules with DocC, warnings as errors, from the built modules.

What `swift package generate-documentation` does, without the plugin: the plugin first builds its own
tools (snippet-extract, SymbolKit) and then builds each target once more before extracting its symbol
graph, which on CI's two cores cost about a minute of processor time for nothing CI needs. This reads
the modules the plain build wrote, extracts each module's symbol graph with `swift-symbolgraph-extract`
(the plugin's options: public symbols, synthesized members, extension blocks) and converts its catalog
with `docc convert`. The symbol graphs are left in SYMBOL_GRAPHS/MODULE for check-doc-comments.py.

Usage: .ci/build-docs.py BIN_PATH [MODULE ...]      (BIN_PATH: `swift build --show-bin-path` of the build)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import built_modules

MODULES = ["JobKit", "JobKitTesting", "JobKitServer", "JobKitNetworking", "JobKitCombine", "JobKitTracing"]

ROOT = built_modules.ROOT
SYMBOL_GRAPHS = os.path.join(ROOT, ".build", "docs-symbol-graphs")


def run(command):
    """Runs `command`; returns its output when it failed, else None."""
    result = subprocess.run(command, capture_output=True, text=True)
    return None if result.returncode == 0 else " ".join(command[:3]) + " …\n" + result.stdout + result.stderr


def document(module, triple, bin_path, c_flags, output):
    graphs = os.path.join(SYMBOL_GRAPHS, module)
    shutil.rmtree(graphs, ignore_errors=True)
    os.makedirs(graphs)
    failure = run(["swift-symbolgraph-extract", "-module-name", module, "-target", triple,
                   "-I", os.path.join(bin_path, "Modules"), "-minimum-access-level", "public",
                   "-emit-extension-block-symbols", "-output-dir", graphs] + c_flags)
    if failure:
        return failure
    return run(["docc", "convert", os.path.join(ROOT, "Sources", module, f"{module}.docc"),
                "--additional-symbol-graph-dir", graphs, "--fallback-display-name", module,
                "--fallback-bundle-identifier", module, "--warnings-as-errors",
                "--output-path", os.path.join(output, f"{module}.doccarchive")])


def target_triple():
    result = subprocess.run(["swiftc", "-print-target-info"], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["target"]["triple"]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bin_path = sys.argv[1]
    modules = sys.argv[2:] or MODULES
    c_flags = built_modules.c_module_flags(bin_path)
    triple = target_triple()
    with tempfile.TemporaryDirectory() as output:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            failures = [failure for failure in pool.map(lambda module: document(module, triple, bin_path, c_flags, output), modules)
                        if failure]
    for failure in failures:
        print(failure)
    if not failures:
        print(f"documentation built for {len(modules)} modules")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
