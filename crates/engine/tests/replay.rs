//! Drafters replayed on real outputs: the Qwen2.5-Coder 1.5B target's greedy answers to the three
//! bench prompts (code, prose, rewrite) and four more (`data/replay/prompts/`: edits, docstrings, an
//! explanation, SQL), with the step costs measured beside them, recorded by
//! `scripts/record-replays` (token ids only — no model needed here). The n-gram drafters and the
//! adaptive schedule make exactly the decisions they make on the real model; the costs give the
//! speedup the cost model expects. These tests hold the drafters to what they reached, so a change
//! that makes copying worse fails here in milliseconds.
#![allow(clippy::unwrap_used)]

use draftlab_engine::decoding::costs::Costs;
use draftlab_engine::decoding::draft::ngram_cache::NgramCache;
use draftlab_engine::decoding::draft::ngram_mod::NgramMod;
use draftlab_engine::decoding::draft::prompt_lookup::{LookupConfig, PromptLookup};
use draftlab_engine::decoding::draft::{Drafter, Strategy};
use draftlab_engine::decoding::options::Token;
use draftlab_engine::decoding::replay::{replay, Replayed};
use draftlab_engine::decoding::settings::{Mode, Settings, ValidSettings};
use draftlab_engine::measuring::bench::copy_bound;
use serde::Deserialize;

#[derive(Deserialize)]
struct Recorded {
    prompt: Vec<Token>,
    output: Vec<Token>,
    costs: Costs,
}

const RECORDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/replay");

fn recorded(name: &str) -> Recorded {
    read_recording(&format!("{RECORDINGS}/{name}.json"))
}

fn read_recording(path: &str) -> Recorded {
    serde_json::from_slice(&std::fs::read(path).expect("recorded replay")).expect("replay file")
}

/// A verify curve given in the environment variable `var` (a JSON list of ms), if any.
fn curve_from_env(var: &str) -> Option<Costs> {
    let v = std::env::var(var).ok()?;
    Some(Costs { verify_ms: serde_json::from_str(&v).expect("a JSON list of ms"), draft_token_ms: 0.0, c: 0.0 })
}

fn run(r: &Recorded, drafter: Box<dyn Drafter>, adaptive: bool, n_draft: usize) -> Replayed {
    let settings = Settings { adaptive, n_draft, ..Settings::default() }.validate(Mode::Speculative).unwrap();
    let mut drafters = vec![drafter];
    let out = replay(&r.prompt, &r.output, &mut drafters, &settings, &r.costs).unwrap();
    assert_eq!(out.report.tokens, r.output, "a replay writes the recorded output");
    out
}

/// Every recorded output, by name.
fn all_recorded() -> Vec<(String, Recorded)> {
    recorded_in(RECORDINGS)
}

/// Every recording in `dir` (files as `scripts/record-replays` writes them), by name.
fn recorded_in(dir: &str) -> Vec<(String, Recorded)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("replay folder")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".json").map(str::to_string))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), read_recording(&format!("{dir}/{n}.json")))).collect()
}

/// The recordings in `DRAFTLAB_REPLAYS` (default: this crate's).
fn recorded_in_env() -> Vec<(String, Recorded)> {
    match std::env::var("DRAFTLAB_REPLAYS") {
        Ok(dir) => recorded_in(&dir),
        Err(_) => all_recorded(),
    }
}

/// The lookup before suffix matching: the last 1–4 tokens, the most recent place, as is.
fn old_lookup() -> Box<dyn Drafter> {
    Box::new(PromptLookup::with_config(1, LookupConfig { max_match: 4, agree: false, classes: false }).unwrap())
}

fn lookup() -> Box<dyn Drafter> {
    Box::new(PromptLookup::new(1, 4).unwrap())
}

fn ngram_cache() -> Box<dyn Drafter> {
    Box::new(NgramCache::new(1, 4).unwrap())
}

/// `auto`'s settings, drafting up to `n_draft`.
fn auto_settings(n_draft: usize) -> ValidSettings {
    Settings { strategy: Strategy::Auto, n_draft, ..Settings::default() }.validate(Mode::Speculative).unwrap()
}

/// llama.cpp's ngram-mod at the sizes `auto` gives it.
fn ngram_mod() -> NgramMod {
    let (n_match, n_min, n_max) =
        draftlab_engine::decoding::settings::ngram_mod_sizes(&auto_settings(Settings::default().n_draft));
    NgramMod::new(n_match, n_min, n_max).unwrap()
}

#[test]
fn suffix_lookup_is_right_more_often_than_fixed_ngrams() {
    // At a fixed length of 8 (no schedule to hide behind): the longest match, and what several
    // places agree on, are accepted more often than the last 1–4 tokens' most recent match.
    for name in ["rewrite", "docs", "edit"] {
        let r = recorded(name);
        let (old, new) = (run(&r, old_lookup(), false, 8), run(&r, lookup(), false, 8));
        assert!(
            new.report.acceptance_rate > old.report.acceptance_rate,
            "{name}: acceptance {} vs {}",
            new.report.acceptance_rate,
            old.report.acceptance_rate
        );
    }
}

/// `auto`'s free drafters as it runs them without a draft model: lookup, then the n-gram cache.
fn auto_ngrams(r: &Recorded) -> Replayed {
    auto_with(r, vec![lookup(), ngram_cache()], Settings::default().n_draft)
}

/// `auto` with these drafters, up to `n_draft` (n-gram drafters reach further, see
/// `Settings::ngram_draft`).
fn auto_with(r: &Recorded, mut drafters: Vec<Box<dyn Drafter>>, n_draft: usize) -> Replayed {
    let settings = auto_settings(n_draft);
    let out = replay(&r.prompt, &r.output, &mut drafters, &settings, &r.costs).unwrap();
    assert_eq!(out.report.tokens, r.output);
    out
}

#[test]
fn adaptive_n_gram_drafting_never_loses_and_pays_on_copies() {
    // As users run it (adaptive): by the measured costs, `auto` is never slower than the target
    // alone on any recorded output (1 % for the costs' rounding), and each strategy alone is within
    // 2 % of it at worst. The replay is deterministic: these are exact properties of the recordings.
    for (name, r) in all_recorded() {
        let s = auto_ngrams(&r).speedup();
        assert!(s >= 0.99, "{name} auto: {s:.3}");
        for (label, d) in [("lookup", lookup()), ("ngram-cache", ngram_cache())] {
            let s = run(&r, d, true, 8).speedup();
            assert!(s >= 0.98, "{name} {label}: {s:.3}");
        }
    }
    // Where the answer copies its input, a real gain, and most of what copying could give here
    // (see `copy_bound`).
    for name in ["rewrite", "docs"] {
        let r = recorded(name);
        let new = run(&r, lookup(), true, 8).speedup();
        let auto = auto_ngrams(&r).speedup();
        let bound = copy_bound(&r.costs, &r.prompt, &r.output).speedup;
        assert!(new > 1.05 && auto > 1.05, "{name}: lookup {new:.3}, auto {auto:.3}");
        assert!(new >= 0.8 * bound, "{name}: {new:.3} vs the copy bound {bound:.3}");
    }
    // Over every output, the suffix lookup does better than the last 1–4 tokens' match did.
    let (mut new, mut old) = (0.0, 0.0);
    for (_, r) in all_recorded() {
        new += run(&r, lookup(), true, 8).speedup();
        old += run(&r, old_lookup(), true, 8).speedup();
    }
    assert!(new > old, "{new:.3} vs {old:.3}");
}

/// A whole verify curve (1–33 tokens) of the Qwen 1.5B target on a 2-core AVX2 CPU (Zen 3, 2
/// threads; the recordings carry only its first 9 sizes), measured with llama.cpp built by gcc
/// (a clang build's 4- to 8-token passes are a fifth cheaper). From 8 tokens on, ggml's tiled
/// matmul takes the output head (+80 ms).
fn cpu_curve() -> Costs {
    let verify_ms = vec![
        43.7, 73.9, 102.3, 117.9, 151.8, 177.4, 208.4, 290.6, 311.6, 330.8, 350.0, 369.2, 388.4, 408.3, 428.2, 448.1,
        468.0, 488.0, 507.9, 526.5, 545.2, 563.9, 582.5, 605.2, 623.3, 646.1, 662.2, 676.1, 697.3, 718.7, 740.1, 761.5,
        782.9,
    ];
    Costs { verify_ms, draft_token_ms: 0.0, c: 0.0 }
}

#[test]
fn an_answer_asked_for_again_is_drafted_at_length() {
    // The same request again, its first answer in the context (a retry, a regenerated reply): on
    // this CPU's curve a round is at first held to a few steps' worth of loss (7 tokens; 4-token
    // passes pay best below that: 1.47× over the answer), and each wholly accepted round lets the
    // next one risk a share of what the copy gained, so drafts reach the curve's end (32) and
    // the answer comes 1.66× as fast as the target alone.
    for name in ["code", "prose"] {
        let r = recorded(name);
        let prompt: Vec<Token> = [&r.prompt[..], &r.output[..], &r.prompt[..]].concat();
        let again = Recorded { prompt, output: r.output.clone(), costs: cpu_curve() };
        let out = auto_ngrams(&again);
        let longest = out.report.rounds.iter().map(|rd| rd.drafted).max().unwrap_or(0);
        println!("{name} again: {:.3}× longest draft {longest}", out.speedup());
        assert!(longest > 16, "{name}: longest draft {longest}");
        assert!(out.speedup() > 1.6, "{name}: {:.3}", out.speedup());
    }
}

/// A request asked again of a server (`draftlab serve` keeps each conversation slot's ngram-mod):
/// auto's drafters, ngram-mod having learned the first answer, charged by `cpu_curve`; every
/// recorded output, with its drafted rounds (`-- --ignored --nocapture print_server_repeat`).
#[test]
#[ignore]
fn print_server_repeat() {
    for (name, r) in all_recorded() {
        let mut m = ngram_mod();
        m.finish(&[&r.prompt[..], &r.output[..]].concat()).unwrap();
        let r = Recorded { costs: cpu_curve(), ..r };
        let out = auto_with(&r, vec![lookup(), ngram_cache(), Box::new(m)], Settings::default().n_draft);
        let mut rounds = String::new();
        for rd in out.report.rounds.iter().filter(|rd| rd.drafted > 0) {
            let strategy = rd.strategy.map_or_else(|| "-".to_string(), |s| format!("{s:?}"));
            rounds.push_str(&format!(" {strategy}:{}/{}", rd.accepted, rd.drafted));
        }
        println!("{name:10} {:.3}×{rounds}", out.speedup());
    }
}

/// What each idea adds, on every recorded output (`cargo test --release --test replay -- --ignored
/// --nocapture`): the numbers the notes on drafters quote.
#[test]
#[ignore]
fn print_what_each_idea_adds() {
    let configs = [
        ("last 1-4 tokens (before)", LookupConfig { max_match: 4, agree: false, classes: false }),
        ("longest match, as is", LookupConfig { max_match: 64, agree: false, classes: false }),
        ("longest match, classes", LookupConfig { max_match: 64, agree: false, classes: true }),
        ("longest match, classes, agreement", LookupConfig::default()),
    ];
    for (name, r) in all_recorded() {
        let bound = copy_bound(&r.costs, &r.prompt, &r.output);
        println!("{name}: copy bound {:.3}× (drafts {:.0} %)", bound.speedup, 100.0 * bound.drafted);
        for (label, c) in configs {
            for adaptive in [false, true] {
                let out = run(&r, Box::new(PromptLookup::with_config(1, c).unwrap()), adaptive, 8);
                println!(
                    "  {label:36} {:8} speedup {:.3}× acceptance {:5.1} % accepted/pass {:.2}",
                    if adaptive { "adaptive" } else { "k=8" },
                    out.speedup(),
                    100.0 * out.report.acceptance_rate,
                    out.report.mean_accepted_len
                );
            }
        }
        let out = run(&r, ngram_cache(), true, 8);
        println!(
            "  {:36} adaptive speedup {:.3}× acceptance {:5.1} %",
            "ngram-cache 1-4",
            out.speedup(),
            100.0 * out.report.acceptance_rate
        );
    }
}

#[test]
#[ignore]
fn print_code_rounds() {
    let r = recorded("code");
    let out = auto_ngrams(&r);
    let mut pos = 1;
    let mut line = String::new();
    for rd in &out.report.rounds {
        if rd.drafted > 0 {
            line.push_str(&format!("[{pos}: {:?} {}/{}] ", rd.strategy, rd.accepted, rd.drafted));
        }
        pos += rd.accepted + 1;
    }
    println!("{line}\nspeedup {:.3} costs {:?}", out.speedup(), r.costs.verify_ms);
}

/// `auto`'s n-gram drafters (lookup, n-gram cache, llama.cpp's ngram-mod) replayed on every
/// recording in `DRAFTLAB_REPLAYS` (a folder of files as `scripts/record-replays` writes them;
/// default: this crate's): `cargo test --release --features testing --test replay -- --ignored
/// --nocapture print_auto`. `DRAFTLAB_CHARGED` (a verify curve as a JSON list of ms) charges every
/// recording's rounds by that curve instead of its own; `DRAFTLAB_JUDGED` makes the schedule
/// decide by another curve than the one rounds are charged by (a cached measurement that is off,
/// say), to see what a wrong curve costs and how much of it the run's own passes win back.
#[test]
#[ignore]
fn print_auto() {
    let recordings = recorded_in_env();
    let count = recordings.len();
    let settings = auto_settings(Settings::default().n_draft);
    let mut product = 1.0;
    for (name, mut r) in recordings {
        if let Some(charged) = curve_from_env("DRAFTLAB_CHARGED") {
            r.costs = charged;
        }
        let mut drafters: Vec<Box<dyn Drafter>> = vec![lookup(), ngram_cache(), Box::new(ngram_mod())];
        let judged = curve_from_env("DRAFTLAB_JUDGED").unwrap_or_else(|| r.costs.clone());
        let out = draftlab_engine::decoding::replay::replay_judged(
            &r.prompt,
            &r.output,
            &mut drafters,
            &settings,
            &r.costs,
            &judged,
        )
        .unwrap();
        let bound = copy_bound(&r.costs, &r.prompt, &r.output).speedup;
        let mut rounds = String::new();
        let mut pos = 0;
        for rd in &out.report.rounds {
            if rd.drafted > 0 {
                rounds.push_str(&format!(" {pos}:{}/{}", rd.accepted, rd.drafted));
            }
            pos += rd.accepted + 1;
        }
        product *= out.speedup();
        println!("{name:10} auto {:.3}× (copy bound {bound:.3}×) drafts:{rounds}", out.speedup());
    }
    println!("geometric mean {:.4}", product.powf(1.0 / count as f64));
}

/// llama.cpp's own lookup drafter (`common_ngram_cache_draft`, what `llama-lookup` runs), through the
/// project's binding: drafts up to `n_max` a round, no schedule (as `llama-lookup` runs it).
struct UpstreamLookup(draftlab_engine::decoding::speculative::Native);

impl Drafter for UpstreamLookup {
    fn strategy(&self) -> Strategy {
        Strategy::NgramCache
    }
    fn is_cheap(&self) -> bool {
        true
    }
    fn prefill(&mut self, prompt: &[Token]) -> draftlab_engine::error::Result<()> {
        self.0.begin(prompt)
    }
    fn propose(
        &mut self,
        context: &[Token],
        max: usize,
    ) -> draftlab_engine::error::Result<draftlab_engine::decoding::draft::Proposal> {
        let tokens = self.0.draft(context, max)?;
        Ok(draftlab_engine::decoding::draft::Proposal::deterministic(tokens, 1, Strategy::NgramCache))
    }
}

/// Upstream's lookup against the project's drafters on every recording, each charged by the verify
/// curve of the engine it runs in (`DRAFTLAB_UPSTREAM` and `DRAFTLAB_OURS`, JSON lists of ms; default:
/// the recording's own): which part of a gap is the drafting and which the engine's batch costs.
/// `cargo test --release --features testing --test replay -- --ignored --nocapture upstream_lookup`
#[test]
#[ignore]
fn print_upstream_lookup_against_ours() {
    use draftlab_engine::decoding::speculative::{Native, NativeKind, NativeParams};
    for (name, mut r) in recorded_in_env() {
        let up = curve_from_env("DRAFTLAB_UPSTREAM").unwrap_or_else(|| r.costs.clone());
        let ours = curve_from_env("DRAFTLAB_OURS").unwrap_or_else(|| r.costs.clone());
        let tps = |out: &Replayed| 1000.0 * r.output.len() as f64 / out.time_ms;
        let line = |label: &str, out: &Replayed| {
            let long: Vec<String> = out
                .report
                .rounds
                .iter()
                .filter(|rd| rd.drafted > 4)
                .map(|rd| format!("{}/{}", rd.accepted, rd.drafted))
                .collect();
            println!(
                "  {label:34} {:6.2} tok/s  {:.3}×  drafted {:4} accepted {:4} passes {} long {}",
                tps(out),
                out.speedup(),
                out.report.drafted,
                out.report.accepted,
                out.report.target_passes,
                long.join(" ")
            )
        };
        println!("{name}");
        let native = || -> Box<dyn Drafter> {
            Box::new(UpstreamLookup(Native::ngram(NativeKind::NgramCache, NativeParams::default()).unwrap()))
        };
        let settings =
            Settings { adaptive: false, n_draft: 3, ..Settings::default() }.validate(Mode::Speculative).unwrap();
        for (label, costs) in [("upstream lookup k3, upstream curve", &up), ("upstream lookup k3, our curve", &ours)] {
            let mut d: Vec<Box<dyn Drafter>> = vec![native()];
            line(label, &replay(&r.prompt, &r.output, &mut d, &settings, costs).unwrap());
        }
        r.costs = ours;
        line("ours auto (no draft model)", &auto_ngrams(&r));
        line("ours lookup adaptive", &run(&r, lookup(), true, 8));
        line("ours ngram-cache adaptive", &run(&r, ngram_cache(), true, 8));
        line("ours lookup k3", &run(&r, lookup(), false, 3));
        line("ours auto + upstream lookup", &auto_with(&r, vec![lookup(), ngram_cache(), native()], 8));
        line("ours auto, n-draft 2 (max 8)", &auto_with(&r, vec![lookup(), ngram_cache()], 2));
        line("ours auto, n-draft 1 (max 4)", &auto_with(&r, vec![lookup(), ngram_cache()], 1));
        line("upstream lookup adaptive (max 4)", &run(&r, native(), true, 1));
        r.costs = up;
        line("ours auto, upstream curve", &auto_ngrams(&r));
    }
}
