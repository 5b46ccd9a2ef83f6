//! AFL++ target: `draftlab_fuzz::http` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::http(data));
}
