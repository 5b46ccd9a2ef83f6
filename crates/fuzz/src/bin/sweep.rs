//! AFL++ target: `draftlab_fuzz::sweep` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::sweep(data));
}
