//! AFL++ target: `draftlab_fuzz::gguf` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::gguf(data));
}
