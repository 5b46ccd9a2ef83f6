//! AFL++ target: `draftlab_fuzz::costs` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::costs(data));
}
