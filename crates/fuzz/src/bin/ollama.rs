//! AFL++ target: `draftlab_fuzz::ollama` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::ollama(data));
}
