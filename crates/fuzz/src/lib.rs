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
//! | `http` | the local server's request bodies as its routes read them (messages, settings, stop strings), and generated text through the stop filter |
//! | `template` | chat template rendering (minijinja on its fuel and output cap) over fuzzed templates and messages |
//! | `relay` | the RPC relay's framing, both ways, with memory answers capped |
//! | `hub_headers` | the Hugging Face hub's answer headers for a file (etag, commit, size, ranges) |
//! | `ollama` | Ollama manifests: the model layer's blob |
//! | `costs` | the measured-costs file (`costs.json`) and the cost model read from it |
//! | `chat` | a saved Chat view conversation (`chats/<id>.json`), as the list and the view read it |
//! | `history` | a saved run (`runs/<id>.json`), as History lists and re-opens it: its verdict and charts, drawn as SVG |

use std::path::{Path, PathBuf};

use draftlab_core::decoding::costs::{Costs, CostsCache};
use draftlab_core::decoding::ngram_table::NgramTable;
use draftlab_core::decoding::saved::{Conversation, HistoryRun};
use draftlab_core::decoding::settings::{Mode, Settings};
use draftlab_core::decoding::template::{render, ChatMessage, TemplateVars};
use draftlab_core::files::gguf::GgufFile;
use draftlab_core::files::memory::Footprint;
use draftlab_core::files::{discover, hub};
use draftlab_core::measuring::charts;
use draftlab_core::measuring::charts::data::run_charts;
use draftlab_core::measuring::results::{self, Results};
use draftlab_core::measuring::sweep::SweepResults;
use draftlab_core::serving::lines::{self, Line};
use draftlab_core::serving::protocol::{parse_message, parse_request, Command};
use draftlab_core::serving::relay::{relay_bytes, Caps};
use draftlab_server::{read_request, Endpoint};
use sha2::{Digest, Sha256};

pub type Target = fn(&[u8]);

/// The targets by name, as `scripts/fuzz` and the corpus test know them.
pub const TARGETS: [(&str, Target); 13] = [
    ("gguf", gguf),
    ("ngram_map", ngram_map),
    ("results", results),
    ("sweep", sweep),
    ("worker", worker),
    ("http", http),
    ("template", template),
    ("relay", relay),
    ("hub_headers", hub_headers),
    ("ollama", ollama),
    ("costs", costs),
    ("chat", chat),
    ("history", history),
];

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

/// Splits at the first `sep` byte: before it, and after it (empty when there is none).
fn split(data: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == sep) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// The first byte picks the endpoint; then a request body, and after a NUL byte, generated text
/// (pieces separated by 0x01) through the request's stop strings.
pub fn http(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else { return };
    let endpoint = if pick & 1 == 0 { Endpoint::Chat } else { Endpoint::Completion };
    let (body, text) = split(rest, 0);
    let Ok(mut asked) = read_request(&Settings::default(), endpoint, body) else { return };
    let _ = asked.settings.validate(asked.mode);
    let text = String::from_utf8_lossy(text);
    // With tools, the text is also held back and read as tool calls, as an answer's is.
    let mut hold = asked.tool_calls.as_ref().map(|t| draftlab_server::tools::Hold::new(t.format, t.required));
    for piece in text.split('\u{1}') {
        if let Some(h) = hold.as_mut() {
            let _ = h.push(piece);
        }
        if asked.stops.push(piece).1 {
            break;
        }
    }
    let _ = asked.stops.finish();
    if let (Some(t), Some(mut h)) = (asked.tool_calls, hold) {
        let _ = t.read(&h.finish().1);
    }
}

/// A template, then after a NUL byte the messages (separated by 0x01, roles taking turns; the
/// first byte of each picks system when odd).
pub fn template(data: &[u8]) {
    let (source, rest) = split(data, 0);
    let Ok(source) = std::str::from_utf8(source) else { return };
    let text = String::from_utf8_lossy(rest);
    let messages: Vec<ChatMessage> = text
        .split('\u{1}')
        .enumerate()
        .map(|(i, m)| {
            let role = match (i, m.bytes().next().map(|b| b & 1)) {
                (0, Some(1)) => "system",
                (i, _) if i % 2 == 0 => "user",
                _ => "assistant",
            };
            ChatMessage::new(role, m)
        })
        .collect();
    let mut vars = TemplateVars::new("<s>", "</s>", data.len().is_multiple_of(2));
    // A fixed clock: the same input renders the same way every time.
    vars.now = 1_736_899_200;
    let _ = render(source, &messages, &vars);
}

/// The first two bytes say where the client's bytes end and the server's begin, and the caps.
pub fn relay(data: &[u8]) {
    let [a, b, rest @ ..] = data else { return };
    let cut = usize::from(*a) * rest.len() / 255;
    let (requests, answers) = rest.split_at(cut.min(rest.len()));
    let caps = Caps {
        all: (b & 1 == 1).then_some(u64::from(*b) << 20),
        devices: [(u32::from(b >> 4), u64::from(*a) << 24)].into_iter().collect(),
    };
    let _ = relay_bytes(requests, answers, &caps);
}

/// Header lines (`name: value`), then the answer's status class (a first byte that is odd: 2xx).
pub fn hub_headers(data: &[u8]) {
    let Some((&status, rest)) = data.split_first() else { return };
    let mut headers = reqwest::header::HeaderMap::new();
    for line in rest.split(|&b| b == b'\n') {
        let (name, value) = split(line, b':');
        let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name),
            reqwest::header::HeaderValue::from_bytes(value.trim_ascii()),
        ) else {
            continue;
        };
        if let Ok(v) = value.to_str() {
            let _ = (hub::range_start(v), hub::range_total(v));
        }
        headers.append(name, value);
    }
    let _ = hub::read_hub_headers("https://hub.example/r/resolve/main/f.gguf", status & 1 == 1, &headers);
}

pub fn ollama(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(name) = discover::ollama_model_blob(text) {
        // A file name in `blobs/`, never a path.
        assert!(!name.contains('/') && !name.contains('\\') && !name.starts_with('.'), "{name}");
    }
}

pub fn costs(data: &[u8]) {
    let Ok(cache) = CostsCache::from_bytes(data) else { return };
    let _ = cache.measured_ratio(Path::new(PATH), Path::new(PATH));
    let mut all: Vec<Costs> = Vec::new();
    for key in cache.keys() {
        let Some(c) = cache.get(key, u64::MAX) else { continue };
        for b in 0..20 {
            let _ = (c.verify(b), c.catch_up_ms(b * 7));
        }
        let _ = c.run_ms([0, 1, 3, 8, usize::MAX / 2], u64::MAX);
        all.push(c);
    }
    let _ = Costs::median_of(&all);
}

pub fn chat(data: &[u8]) {
    let Some(value) = json(data) else { return };
    let Ok(c) = serde_json::from_value::<Conversation>(value) else { return };
    // What the list and the view read of it.
    let _ =
        (c.target.file_name(), c.draft.as_ref().map(|d| d.display().to_string()), c.settings.clone().validate(c.mode));
    let _ = c.title_from_turns();
    for t in &c.turns {
        let _: String = t.tokens.iter().map(|v| v.text.as_str()).collect();
        if let Some(s) = &t.stats {
            let _ =
                (s.tokens_per_s / s.target_alone_tps.unwrap_or(1.0), s.prompt_tokens.saturating_sub(s.prompt_reused));
        }
    }
    let _ = serde_json::to_vec(&c);
}

pub fn history(data: &[u8]) {
    let Some(value) = json(data) else { return };
    let Ok(run) = serde_json::from_value::<HistoryRun>(value) else { return };
    // The list's line, the verdict and the charts re-drawn, as History shows them.
    let _ = (run.reports.first().map(|r| r.target.name.clone()), run.request.prompt.chars().take(120).count());
    let _ = run.comparison.as_ref().map(|c| c.verdict());
    for chart in run_charts(&run.reports) {
        let _ = charts::svg(&chart, charts::WIDTH, charts::HEIGHT);
    }
    let _ = serde_json::to_vec(&run);
}
