//! AFL++ target: `draftlab_fuzz::relay` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::relay(data));
}
