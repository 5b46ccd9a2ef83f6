//! AFL++ target: `draftlab_fuzz::ngram_map` (see the crate's documentation).
fn main() {
    afl::fuzz!(|data: &[u8]| draftlab_fuzz::ngram_map(data));
}
