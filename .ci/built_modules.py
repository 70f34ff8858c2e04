"""Where the plain build keeps JobKit's modules, and the flags that let a compiler outside SwiftPM read them."""
import glob
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bin_path():
    """The plain debug build's folder (`swift build --show-bin-path`)."""
    return subprocess.run(
        ["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def c_module_flags(path):
    """`-Xcc` flags for the C modules of dependencies (NIO's, Atomics', …) the Swift modules in `path` import:
    the module maps SwiftPM generated, and the include folders of the checkouts' own module maps."""
    options = [f"-fmodule-map-file={map}" for map in sorted(glob.glob(os.path.join(path, "*.build", "module.modulemap")))]
    options += [f"-I{os.path.dirname(map)}" for map in sorted(glob.glob(
        os.path.join(ROOT, ".build", "checkouts", "*", "Sources", "*", "include", "module.modulemap")))]
    return [flag for option in options for flag in ("-Xcc", option)]
