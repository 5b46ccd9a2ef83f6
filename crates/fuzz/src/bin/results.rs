//! AFL++ target: `draftlab_fuzz::results` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::results(data));
}
