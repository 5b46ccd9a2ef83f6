//! The fuzz targets: each takes bytes from outside as the app would receive them and runs the parser
//! and what reads its result. A target must return (an `Err` is fine) for every input: a panic, an
//! abort or a hang is a bug. `scripts/fuzz` runs them under AFL++ (coverage-guided, cargo-afl);
//! `tests/corpus.rs` runs them over the committed seeds and every crash found.
//!
//! | target | parser |
//! |---|---|
//! | `gguf` | the GGUF header reader, the model summary and the memory footprint |
//! | `ngram_map` | the n-gram map file reader (the checksum is made right, so the body is explored), and lookups in the map |
//! | `results` | results files (`run --json`, `bench --json`, sweeps) and their CSV/JSON export |
//! | `sweep` | a sweep's `results.json`: cells, predictions, recommendations, CSV |
//! | `worker` | the worker protocol: request lines (bounded), settings validation, reply lines |

use std::path::{Path, PathBuf};

use draftlab_core::decoding::ngram_table::NgramTable;
use draftlab_core::decoding::settings::Mode;
use draftlab_core::files::gguf::GgufFile;
use draftlab_core::files::memory::Footprint;
use draftlab_core::measuring::results::{self, Results};
use draftlab_core::measuring::sweep::SweepResults;
use draftlab_core::serving::lines::{self, Line};
use draftlab_core::serving::protocol::{parse_message, parse_request, Command};
use sha2::{Digest, Sha256};

pub type Target = fn(&[u8]);

/// The targets by name, as `scripts/fuzz` and the corpus test know them.
pub const TARGETS: [(&str, Target); 5] =
    [("gguf", gguf), ("ngram_map", ngram_map), ("results", results), ("sweep", sweep), ("worker", worker)];

const PATH: &str = "fuzz-input";

pub fn gguf(data: &[u8]) {
    let Ok(f) = GgufFile::read_from(PathBuf::from(PATH), data, data.len() as u64) else { return };
    let summary = f.summary();
    let _ = serde_json::to_string(&summary);
    let _ = (f.tokens().map(|t| t.len()), f.quantization(), f.n_params(), f.kv_bytes_per_layer_token());
    let fp = Footprint::of_gguf(&f);
    let _ = (fp.kv_bytes(4096), fp.kv_bytes(u64::MAX / 2), fp.gpu_weights(Some(3)), fp.gpu_weights(None));
}

pub fn ngram_map(data: &[u8]) {
    // The file ends with the SHA-256 of the rest: append it, so the fuzzer reaches the body.
    let mut bytes = data.to_vec();
    bytes.extend_from_slice(&Sha256::digest(data));
    let Ok((table, header)) = NgramTable::from_bytes(Path::new(PATH), &bytes) else { return };
    let _ = serde_json::to_string(&header);
    let context: Vec<i32> =
        data.chunks(4).take(16).map(|c| c.iter().fold(0i32, |a, &b| a.wrapping_mul(31) ^ i32::from(b))).collect();
    let _ = table.chain(&context, 16, 1);
}

fn json(data: &[u8]) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(data).ok()?;
    results::json_value(Path::new(PATH), text).ok()
}

pub fn results(data: &[u8]) {
    let Some(value) = json(data) else { return };
    let Ok(r) = Results::from_value(Path::new(PATH), value) else { return };
    let _ = (r.csv(), r.json());
}

pub fn sweep(data: &[u8]) {
    let Some(value) = json(data) else { return };
    let Ok(s) = SweepResults::from_value(Path::new(PATH), value) else { return };
    let _ = (s.csv(), s.recommendations(), s.measured().count());
    for key in s.spec.cells() {
        let _ = (s.spec.label(&key), s.predicted(&key), s.spec.cell_settings(&key));
    }
}

pub fn worker(data: &[u8]) {
    // Lines as the worker reads them (a small bound, so over-long lines are exercised too).
    let mut input = data;
    loop {
        let line = match lines::read_line(&mut input, 4096) {
            Line::End => break,
            Line::Text(l) => l,
            Line::TooLong { .. } | Line::NotUtf8 { .. } => continue,
        };
        let _ = parse_message(&line);
        let Ok(request) = parse_request(&line) else { continue };
        match request.command {
            Command::Run { mode, settings, .. } => {
                let _ = settings.validate(mode);
            }
            Command::Both { settings, .. } => {
                let _ = settings.validate(Mode::Speculative);
            }
            Command::Sweep { spec, .. } => {
                let _ = (spec.validate(), spec.cells().len());
                for v in 0..spec.variants().len() {
                    let _ = spec.variant_settings(v).validate(Mode::Speculative);
                }
            }
            _ => {}
        }
    }
}
