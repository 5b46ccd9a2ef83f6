# shellcheck shell=bash disable=SC2034  # (the variables are for the scripts that source this)
# The preamble every bash script in scripts/ shares. Source it first, from any working directory:
#   source "$(dirname "$0")/lib.sh"          (scripts/e2e/: "$(dirname "$0")/../lib.sh")
# Strict mode, the repository root as the working directory, one Cargo target dir outside the
# clone, the test models' paths, and the release CLI.
set -euo pipefail

# The script runs from the repository root ($root, absolute): its paths are relative to it.
# $caller_dir is where it was called from.
caller_dir="$PWD"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." >/dev/null && pwd)"
cd "$root"

# One target dir outside the clone: reused when the machine still has it, rebuilt when not.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/draftlab/cargo-target}"
release="$CARGO_TARGET_DIR/release"
# The command line, built by build_cli.
draftlab="$release/draftlab"

# The real test models (scripts/fetch-test-models puts them there).
models="${DRAFTLAB_TEST_MODELS:-$HOME/.cache/draftlab/test-models}"
# The default test pair (fetch-test-models qwen-target qwen-draft) and the small fast model (smollm2).
qwen_target="$models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
qwen_draft="$models/qwen2.5-coder-0.5b-instruct.gguf"
smollm2="$models/SmolLM2-135M-Instruct.Q4_1.gguf"

# Builds the release CLI ($draftlab); extra arguments go to cargo build. Under scripts/test, which
# has built the whole workspace already ($DRAFTLAB_BUILT), a plain call builds nothing: cargo would
# build the CLI again with another feature set (four crates, 1.5 minutes).
build_cli() {
  if [ -n "${DRAFTLAB_BUILT:-}" ] && [ $# = 0 ]; then return 0; fi
  cargo build --release -p draftlab "$@"
}

# The AVX-512 build of the command line (x86-64 only): what the Linux package installs beside the
# plain build, which hands itself over to it on a CPU that has AVX-512 and the rest it is compiled
# for (crates/engine/src/serving/variant.rs). Fixed flags, never this machine's own (the build is
# the same wherever it is made); a target dir of its own (other compiler flags: one shared dir
# would rebuild everything at each switch). The target named (`--target`): the flags then reach only
# what the binary is made of, not the build scripts and proc macros cargo runs here, which would
# stop on an illegal instruction on a CPU without AVX-512. Prints the binary's path; its build log
# goes to stderr; fails when the build does.
avx512_target="$CARGO_TARGET_DIR-avx512"
build_avx512_cli() {
  local triple=x86_64-unknown-linux-gnu
  # Its C and C++ keep the compiler's default tuning (.cargo/config.toml tunes the plain build's for
  # Haswell; set empty, these hide that setting).
  CARGO_TARGET_DIR="$avx512_target" RUSTFLAGS="-C target-cpu=x86-64-v4 -C target-feature=+avx512vnni,+avx512vbmi" \
    CFLAGS_x86_64_unknown_linux_gnu="" CXXFLAGS_x86_64_unknown_linux_gnu="" cargo build --release -p draftlab --target "$triple" >&2 || return 1
  echo "$avx512_target/$triple/release/draftlab"
}

# The command line as the Linux package installs it, in $CARGO_TARGET_DIR/installed/: the plain
# build and, on x86-64, the AVX-512 build beside it (`draftlab-avx512`). Builds both (a plain build
# already made under scripts/test is taken as it is) and sets $draftlab to the plain one there.
install_cli() {
  build_cli
  local dir="$CARGO_TARGET_DIR/installed"
  mkdir -p "$dir"
  cp "$release/draftlab" "$dir/draftlab"
  rm -f "$dir/draftlab-avx512"
  if [ "$(uname -m)" = x86_64 ]; then
    local avx512
    avx512="$(build_avx512_cli)"
    cp "$avx512" "$dir/draftlab-avx512"
  fi
  draftlab="$dir/draftlab"
}
