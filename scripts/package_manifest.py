"""Records what a function zip was built for, next to it: <dir>/<function>/architecture.json
with the instruction set and the zip's SHA-256.

    python3 scripts/package_manifest.py <package dir> <arm64|x86_64> [function ...]

infra/ reads it and refuses to deploy a zip whose recorded architecture differs from
lambda_architecture, or whose hash no longer matches the zip (built some other way
after the manifest was written): a zip of the wrong architecture is accepted by
CreateFunction and then fails every cold start with an exec format error.
"""

import hashlib
import json
import pathlib
import sys

package_dir, architecture, *functions = sys.argv[1:]
if architecture not in ("arm64", "x86_64"):
    sys.exit(f"package_manifest: architecture must be arm64 or x86_64, not {architecture!r}")
root = pathlib.Path(package_dir)
zips = [root / f / "bootstrap.zip" for f in functions] if functions else sorted(root.glob("*/bootstrap.zip"))
if not zips:
    sys.exit(f"package_manifest: no */bootstrap.zip under {root}")
for zip_path in zips:
    digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()
    manifest = {"architecture": architecture, "bootstrap_zip_sha256": digest}
    (zip_path.parent / "architecture.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"   {zip_path.parent / 'architecture.json'}: {architecture}")
