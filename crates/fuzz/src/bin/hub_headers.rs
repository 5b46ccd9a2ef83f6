//! AFL++ target: `draftlab_fuzz::hub_headers` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::hub_headers(data));
}
