//! AFL++ target: `draftlab_fuzz::chat` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::chat(data));
}
