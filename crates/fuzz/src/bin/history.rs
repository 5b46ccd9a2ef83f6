//! AFL++ target: `draftlab_fuzz::history` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::history(data));
}
