#!/usr/bin/env bash
# make package [ARCH=arm64|x86_64]: the release zip of every function with cargo-lambda,
# target/lambda/<function>/bootstrap.zip, where infra/ (lambda_package_dir) reads them,
# and next to each its architecture.json (the architecture and the zip's SHA-256):
# Terraform refuses a zip built for another lambda_architecture than the apply's.
# PACKAGE_DIR=<dir> writes somewhere else (deploy-local's x86_64 zips never go where a
# real apply reads). Deploy with the same architecture: -var lambda_architecture=<ARCH>.
#
# cargo-lambda comes from PyPI (with Zig, its cross-linker) into .venv-lambda. It needs
# the Rust standard library of the target; where it is not installed and cannot be
# fetched (no network), this says so and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_LAMBDA_VERSION="1.9.2"
arch="${1:-${ARCH:-arm64}}"
case "$arch" in
  arm64 | aarch64) arch=arm64; target=aarch64-unknown-linux-gnu; flag=--arm64 ;;
  x86_64 | x86-64 | amd64) arch=x86_64; target=x86_64-unknown-linux-gnu; flag=--x86-64 ;;
  *) echo "package: ARCH must be arm64 or x86_64, not '$arch'" >&2; exit 2 ;;
esac

if [[ ! -d "$(rustc --print sysroot)/lib/rustlib/$target/lib" ]]; then
  cat >&2 <<EOF
package: cannot build for $arch: the Rust standard library for $target is not installed
  (installed: $(cd "$(rustc --print sysroot)/lib/rustlib" && for t in */; do [[ -d "$t/lib" ]] && printf '%s ' "${t%/}"; done))
  Install it with 'rustup target add $target' (needs network access to the Rust
  distribution server), or build for this machine's architecture:
    make package ARCH=x86_64     # and deploy with -var lambda_architecture=x86_64
EOF
  exit 1
fi

venv=.venv-lambda
if [[ "$("$venv/bin/cargo-lambda" lambda --version 2>/dev/null | awk '{print $2}')" != "$CARGO_LAMBDA_VERSION" ]]; then
  echo "== installing cargo-lambda $CARGO_LAMBDA_VERSION from PyPI into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cargo-lambda==$CARGO_LAMBDA_VERSION"
fi
export PATH="$PWD/$venv/bin:$PATH"

packages=()
for dir in functions/*/; do
  packages+=(-p "$(basename "$dir")")
done
echo "== cargo lambda build --release $flag (${packages[*]})"
started=$(date +%s)
package_dir="${PACKAGE_DIR:-target/lambda}"
# A manifest left from an earlier build must not vouch for the zips of this one.
rm -f "$package_dir"/*/architecture.json
cargo lambda build --release "$flag" --output-format zip --lambda-dir "$package_dir" "${packages[@]}"
functions=()
for dir in functions/*/; do
  f="$(basename "$dir")"
  functions+=("$f")
  zip="$package_dir/$f/bootstrap.zip"
  [[ -f "$zip" ]] || { echo "package: $zip was not produced" >&2; exit 1; }
  # ELF e_type (bytes 16-17, little-endian): 2 is a fixed-address executable, 3 a PIE.
  # A toolchain that dropped the flags would ship the slower cold start silently.
  e_type="$(unzip -p "$zip" bootstrap | { head -c 18; cat >/dev/null; } | od -An -tu1 -j16 | tr -s ' ' | sed 's/^ //')"
  [[ "$e_type" == "2 0" ]] || { echo "package: $zip's bootstrap is not a non-PIE executable (ELF e_type bytes: $e_type); see scripts/lambda_build.rs" >&2; exit 1; }
  echo "   $zip  $(du -h "$zip" | cut -f1)"
done
python3 scripts/package_manifest.py "$package_dir" "$arch" "${functions[@]}"
echo "== packaged for $arch in $(( $(date +%s) - started )) s; deploy with -var lambda_architecture=$arch"
