//! AFL++ target: `draftlab_fuzz::worker` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::worker(data));
}
