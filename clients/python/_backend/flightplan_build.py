"""A PEP 517 build backend for flightplan-client that needs nothing but the standard library,
protoc and grpc_python_plugin: pip can install the client offline.

The wheel holds flightplan_client/ (this tree) and flightplan/v1/*_pb2*.py, generated from
the repository's proto/ (or $FLIGHTPLAN_PROTO_DIR) at build time.
"""
import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # clients/python
NAME = "flightplan_client"
DIST = "flightplan-client"
PROTOS = ["plan", "event", "status", "tracker"]


def _project():
    """version, dependencies and summary from pyproject.toml's [project]."""
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib  # Python 3.11+ (Debian 12's python3)
    except ImportError:
        tomllib = None
    if tomllib is not None:
        with open(path, "rb") as f:
            project = tomllib.load(f).get("project", {})
        if "version" not in project:
            raise RuntimeError(f"{path}: [project] version is missing")
        return project["version"], list(project.get("dependencies", [])), project.get("description", "")
    # Older Pythons: the one-line keys this file uses.
    version, deps, summary = None, [], ""
    section = None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("["):
                section = line
                continue
            if section != "[project]" or "=" not in line:
                continue
            key, value = (x.strip() for x in line.split("=", 1))
            value = value.split(" #", 1)[0].strip()
            if key == "version":
                version = value.strip('"')
            elif key == "description":
                summary = value.strip('"')
            elif key == "dependencies":
                if not value.endswith("]"):
                    raise RuntimeError(f"{path}: keep dependencies on one line (or build with Python 3.11+)")
                deps = [d.strip().strip('"') for d in value.strip("[]").split(",") if d.strip()]
    if not version:
        raise RuntimeError(f"{path}: [project] version is missing")
    return version, deps, summary


def _tool(name):
    path = shutil.which(name)
    if not path:
        raise RuntimeError(
            f"{name} not found: install Debian's protobuf-compiler and protobuf-compiler-grpc "
            "(deploy/install-deps.sh does)")
    return path


def _stubs(out):
    proto_dir = os.environ.get("FLIGHTPLAN_PROTO_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
    files = [os.path.join(proto_dir, "flightplan", "v1", f"{p}.proto") for p in PROTOS]
    missing = [f for f in files if not os.path.exists(f)]
    if missing:
        raise RuntimeError(f"{missing[0]}: not found; build from the repository (or set FLIGHTPLAN_PROTO_DIR)")
    subprocess.run([_tool("protoc"), "-I", proto_dir, f"--python_out={out}", f"--grpc_python_out={out}",
                    f"--plugin=protoc-gen-grpc_python={_tool('grpc_python_plugin')}", *files], check=True)
    for package in ("flightplan", os.path.join("flightplan", "v1")):
        open(os.path.join(out, package, "__init__.py"), "a").close()


def _metadata(version, deps, summary):
    lines = ["Metadata-Version: 2.1", f"Name: {DIST}", f"Version: {version}", f"Summary: {summary}",
             "Requires-Python: >=3.9"]
    lines += [f"Requires-Dist: {d}" for d in deps]
    return "\n".join(lines) + "\n"


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version, deps, summary = _project()
    info = f"{NAME}-{version}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata(version, deps, summary))
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version, deps, summary = _project()
    wheel = f"{NAME}-{version}-py3-none-any.whl"
    info = f"{NAME}-{version}.dist-info"
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        _stubs(tmp)
        for root, _, names in os.walk(os.path.join(tmp, "flightplan")):
            for n in sorted(names):
                if n.endswith(".py"):
                    path = os.path.join(root, n)
                    with open(path, "rb") as f:
                        files[os.path.relpath(path, tmp).replace(os.sep, "/")] = f.read()
    src = os.path.join(HERE, NAME)
    for n in sorted(os.listdir(src)):
        if n.endswith(".py"):
            with open(os.path.join(src, n), "rb") as f:
                files[f"{NAME}/{n}"] = f.read()
    files[f"{info}/METADATA"] = _metadata(version, deps, summary).encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: flightplan_build\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n")
    files[f"{info}/top_level.txt"] = f"{NAME}\nflightplan\n".encode()
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("flightplan-client is installed from the repository (pip install ./clients/python); "
                       "it has no sdist: the stubs come from the repository's proto/")
