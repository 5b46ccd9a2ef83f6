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
