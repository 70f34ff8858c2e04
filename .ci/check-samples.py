#!/usr/bin/env python3
"""Type-checks every ```swift block of the README and of the DocC articles against the built modules.

Each block is compiled on its own as the `main.swift` of a scratch module, so its imports must be in
the block. A marker comment on the line before a block steers the check:

    <!-- sample: NAME -->          also compile .ci/sample-preludes/NAME.swift (declarations the
                                   block uses but does not show; the prelude has its own imports)
    <!-- sample: skip REASON -->   do not compile this block (say why; e.g. networking until issue 9)
    <!-- sample: manifest -->      the block is a Package.swift; `swift package dump-package` must read it
    <!-- sample: NAME main-actor-default -->
                                   as NAME, compiled with the main actor as the default isolation
                                   (what `swiftSettings: [.defaultIsolation(MainActor.self)]` passes
                                   for a target of tools 6.2, and Xcode 26 for a new app target)
    <!-- sample: NAME mirrored-in PATH -->
                                   as NAME, and the block must also appear verbatim in the test file
                                   PATH, where it runs as a test (so the guide's example is run, not
                                   only compiled)

Usage: .ci/check-samples.py [--list] [--bin-path PATH]   (run `swift build` first; PATH defaults to
`swift build --show-bin-path`)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import built_modules

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRELUDES = os.path.join(ROOT, ".ci", "sample-preludes")
MARKER = re.compile(r"^\s*<!--\s*sample:\s*(\S+)(?:\s+(.*?))?\s*-->\s*$")


def documents():
    yield "README.md"
    for path in sorted(glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "**", "*.md"), recursive=True)):
        yield os.path.relpath(path, ROOT)


def blocks(relpath):
    """(line number, marker, reason, code) for every ```swift block of a file."""
    lines = open(os.path.join(ROOT, relpath), encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```swift":
            start = i
            previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            match = MARKER.match(previous)
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            indent = len(lines[i]) - len(lines[i].lstrip())
            code = "\n".join(line[indent:] for line in lines[i + 1 : j]) + "\n"
            yield start + 1, (match.group(1) if match else None), (match.group(2) if match else None), code
            i = j
        i += 1


def main():
    listing = "--list" in sys.argv
    arguments = sys.argv[1:]
    bin_path = arguments[arguments.index("--bin-path") + 1] if "--bin-path" in arguments else built_modules.bin_path()
    modules = os.path.join(bin_path, "Modules")
    c_flags = built_modules.c_module_flags(bin_path)
    failures, checked, skipped = 0, 0, []
    with tempfile.TemporaryDirectory() as scratch:
        for relpath in documents():
            for line, marker, reason, code in blocks(relpath):
                where = f"{relpath}:{line}"
                if marker == "skip":
                    skipped.append(f"{where} ({reason or 'no reason given'})")
                    continue
                if reason and reason.startswith("mirrored-in "):
                    mirror = reason[len("mirrored-in "):].strip()
                    mirror_path = os.path.join(ROOT, mirror)
                    if not os.path.exists(mirror_path) or code not in open(mirror_path, encoding="utf-8").read():
                        failures += 1
                        print(f"{where}: the block is not verbatim in {mirror} (copy it there, or the test back here)")
                        continue
                main_swift = os.path.join(scratch, "main.swift")
                open(main_swift, "w", encoding="utf-8").write(code)
                files = [main_swift]
                if marker == "manifest":
                    manifest_dir = os.path.join(scratch, "manifest")
                    os.makedirs(manifest_dir, exist_ok=True)
                    os.replace(main_swift, os.path.join(manifest_dir, "Package.swift"))
                    command = ["swift", "package", "dump-package", "--package-path", manifest_dir]
                else:
                    if marker:
                        prelude = os.path.join(PRELUDES, marker + ".swift")
                        if not os.path.exists(prelude):
                            print(f"{where}: no prelude {os.path.relpath(prelude, ROOT)}")
                            failures += 1
                            continue
                        files.append(prelude)
                    command = ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules,
                               "-module-name", "Sample"] + c_flags + files
                    if reason == "main-actor-default":
                        command[1:1] = ["-default-isolation", "MainActor"]
                if listing:
                    print(f"{where}: {marker or '-'}")
                result = subprocess.run(command, capture_output=True, text=True)
                checked += 1
                if result.returncode != 0:
                    failures += 1
                    print(f"{where}: does not compile")
                    print(result.stdout + result.stderr)
    print(f"samples: {checked} compiled, {failures} failed, {len(skipped)} skipped")
    for entry in skipped:
        print(f"  skipped {entry}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
