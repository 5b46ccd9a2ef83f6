//! AFL++ target: `draftlab_fuzz::template` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::template(data));
}
