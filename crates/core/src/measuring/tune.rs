//! Finding the fastest drafter for a target on this machine (`draftlab tune`, the app's Find
//! fastest): what to try, what a tune reports, and the verdict on each setting. The engine runs it
//! (`draftlab_engine::measuring::tune`): every way the drafter finder lists that is on disk and
//! fits, plus `auto`, each first predicted from measured costs and a short probe (the hopeless ones
//! dropped, saying why: those no draft length could make pay on this machine even if every drafted
//! token were accepted), the rest measured against the target alone with alternating repetitions
//! on the chosen prompts, ranked by their median speedup.
//!
//! The verdict reads the spread of the per-repetition speedups, never the median alone: a setting
//! is *faster* only when every repetition was (and it drafted something: one that drafted nothing
//! ran as the target alone), *slower* when every one was, and *within noise* otherwise (a 2-core
//! laptop's speed drifts by ±5 % between runs). Results are kept per target, drafter and machine
//! ([`TunedStore`]), so a model picker can say "1.4× on this Mac".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::decoding::settings::Settings;
use crate::decoding::strategy::Strategy;
use crate::error::{Error, Result};
use crate::files::finder::{Way, WayKind};
use crate::machine::MachineInfo;
use crate::measuring::bench::Spread;
use crate::setting::Setting;

/// The built-in prompts a tune runs on, by kind: the same texts `scripts/bench` measures.
pub const KINDS: [(&str, &str); 3] = [
    ("code", include_str!("../../../../scripts/prompts/code.txt")),
    ("prose", include_str!("../../../../scripts/prompts/prose.txt")),
    ("rewrite", include_str!("../../../../scripts/prompts/rewrite.txt")),
];

/// One prompt of a tune: its kind (`code`, `prose`, `rewrite`, or `yours`) and text.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunePrompt {
    pub kind: String,
    pub text: String,
}

impl TunePrompt {
    /// The built-in prompts of `kinds` (`code`, `prose`, `rewrite`), or an error naming the kind
    /// there is none of.
    pub fn builtin(kinds: &[String]) -> Result<Vec<TunePrompt>> {
        kinds
            .iter()
            .map(|k| {
                KINDS
                    .iter()
                    .find(|(name, _)| name == k)
                    .map(|(name, text)| TunePrompt { kind: (*name).to_string(), text: text.trim_end().to_string() })
                    .ok_or_else(|| Error::InvalidSetting {
                        setting: Setting::Prompts,
                        reason: format!("has the kind `{k}`; the built-in kinds are code, prose and rewrite"),
                    })
            })
            .collect()
    }
}

/// What to tune.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneSpec {
    pub target: PathBuf,
    /// More folders to look for drafters in (besides the target's and the usual places).
    #[serde(default)]
    pub folders: Vec<PathBuf>,
    pub prompts: Vec<TunePrompt>,
    /// Alternating repetitions (the target alone, then each setting) per prompt.
    pub reps: usize,
    /// Everything else (tokens to generate, context, threads); the strategy and draft are each
    /// setting's.
    pub settings: Settings,
}

impl TuneSpec {
    /// The most repetitions.
    pub const MAX_REPS: usize = 20;
    /// The most prompts.
    pub const MAX_PROMPTS: usize = 8;

    pub fn validate(&self) -> Result<()> {
        let bad = |setting: Setting, reason: String| Err(Error::InvalidSetting { setting, reason });
        if !(1..=Self::MAX_REPS).contains(&self.reps) {
            return bad(Setting::Reps, format!("is {}, but must be 1 to {}", self.reps, Self::MAX_REPS));
        }
        if self.prompts.is_empty() || self.prompts.len() > Self::MAX_PROMPTS {
            return bad(
                Setting::Prompts,
                format!("gives {} prompts; give 1 to {}", self.prompts.len(), Self::MAX_PROMPTS),
            );
        }
        if let Some(p) = self.prompts.iter().find(|p| p.text.trim().is_empty()) {
            return bad(Setting::Prompts, format!("of kind `{}` is empty", p.kind));
        }
        Ok(())
    }
}

/// One setting a tune tries: a strategy, with the file it drafts with (a draft model or a drafter
/// file), named for people.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// "ngram-mod", "draft model · Qwen2.5-Coder-0.5B", "auto · with Qwen2.5-Coder-0.5B".
    pub label: String,
    pub strategy: Strategy,
    pub draft: Option<PathBuf>,
    /// What drafts, in the finder's words.
    pub kind: WayKind,
    /// Memory the target needs with it (the doctor's estimate), in bytes.
    pub memory: u64,
}

impl Candidate {
    /// The settings a tune tries from what the finder found: the n-gram strategies, every way with
    /// a file on disk (or in the target itself) that fits in memory, and `auto` (with the first
    /// draft model of the target's vocabulary, when there is one). Returns them with the ways left
    /// out and why (too big, or a catalog file not downloaded yet).
    pub fn from_ways(ways: &[Way]) -> (Vec<Candidate>, Vec<Dropped>) {
        let mut tried = Vec::new();
        let mut dropped = Vec::new();
        for w in ways {
            let Ok(strategy) = w.strategy.parse::<Strategy>() else { continue };
            let file_needed = !matches!(w.kind, WayKind::Ngram | WayKind::OwnMtp);
            let label = match w.kind {
                WayKind::Ngram => w.strategy.clone(),
                _ => format!("{} · {}", w.label, w.name),
            };
            if w.memory == crate::files::memory::MemoryVerdict::TooBig {
                dropped.push(Dropped { label, reason: format!("does not fit in memory: {}", w.note), download: None });
                continue;
            }
            if file_needed && w.path.is_none() {
                dropped.push(Dropped {
                    label,
                    reason: format!(
                        "not on this machine yet: download it first ({:.1} GiB){}",
                        w.download as f64 / f64::from(1u32 << 30),
                        w.catalog_id.as_deref().map_or(String::new(), |id| format!(", `draftlab pull {id}`"))
                    ),
                    download: w.catalog_id.clone(),
                });
                continue;
            }
            let draft = w.path.clone().filter(|_| file_needed);
            tried.push(Candidate { label, strategy, draft, kind: w.kind, memory: w.needed });
        }
        let with = tried.iter().find(|c| c.kind == WayKind::SameVocabulary).cloned();
        let ngram_memory = ways.iter().find(|w| w.kind == WayKind::Ngram).map_or(0, |w| w.needed);
        tried.push(match with {
            Some(d) => Candidate {
                label: format!("auto · with {}", d.label.rsplit(" · ").next().unwrap_or(&d.label)),
                strategy: Strategy::Auto,
                draft: d.draft,
                kind: WayKind::SameVocabulary,
                memory: d.memory,
            },
            None => Candidate {
                label: "auto".into(),
                strategy: Strategy::Auto,
                draft: None,
                kind: WayKind::Ngram,
                memory: ngram_memory,
            },
        });
        (tried, dropped)
    }
}

/// A setting not measured, and why.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub label: String,
    pub reason: String,
    /// A catalog drafter not on this machine yet: its catalog id (the app offers *Download and Try*,
    /// with the gain the catalog expects of it).
    #[serde(default)]
    pub download: Option<String>,
}

/// What a measured setting's speedup means.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeedVerdict {
    /// Every repetition was faster than the target alone.
    Faster,
    /// The repetitions straddle 1.0: no gain that the machine's noise could not explain.
    WithinNoise,
    /// Every repetition was slower: not to be used.
    Slower,
}

impl SpeedVerdict {
    /// The verdict on a setting whose repetitions sped up by `speedup` and that drafted `drafted`
    /// tokens in all (none: it ran as the target alone, and any difference is the machine's noise).
    pub fn of(speedup: &Spread, drafted: usize) -> SpeedVerdict {
        if speedup.min > 1.0 && drafted > 0 {
            SpeedVerdict::Faster
        } else if speedup.max < 1.0 {
            SpeedVerdict::Slower
        } else {
            SpeedVerdict::WithinNoise
        }
    }

    /// The verdict in words, with the median: "1.42× faster", "within noise (0.97–1.06×)",
    /// "slower: not used (0.64×)".
    pub fn words(self, speedup: &Spread) -> String {
        match self {
            SpeedVerdict::Faster => format!("{:.2}× faster", speedup.median),
            SpeedVerdict::WithinNoise => format!("within noise ({:.2}–{:.2}×)", speedup.min, speedup.max),
            SpeedVerdict::Slower => format!("slower: not used ({:.2}×)", speedup.median),
        }
    }
}

/// A measured setting.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneRow {
    pub candidate: Candidate,
    /// Predicted from the measured costs and a probe before it was measured.
    pub predicted: Option<f64>,
    /// Its tokens/s ÷ the target alone's, one per repetition and prompt.
    pub speedup: Spread,
    pub verdict: SpeedVerdict,
    /// Tokens/s, of the target alone and with the setting.
    pub baseline_tps: Spread,
    pub speculative_tps: Spread,
    /// Tokens it drafted over all its runs, and the share of them the target accepted.
    pub drafted: usize,
    pub acceptance: f64,
    /// Greedy output identical to the target alone's (or apart only at a near tie), every prompt.
    pub identical: bool,
    /// The same setting with llama.cpp's own server, when llama.cpp has one.
    pub llama_cpp: Option<String>,
}

/// What a tune found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneResult {
    pub target: PathBuf,
    /// The target's name for people (its `general.name`, else its file's).
    pub target_name: String,
    pub machine: MachineInfo,
    /// The prompts' kinds.
    pub kinds: Vec<String>,
    pub reps: usize,
    /// Measured settings, fastest first.
    pub rows: Vec<TuneRow>,
    /// Settings not measured, with why (predicted hopeless, too big, not downloaded).
    pub dropped: Vec<Dropped>,
    /// Seconds since the Unix epoch when it started, and how long it took.
    pub started_at: u64,
    pub seconds: f64,
    /// Whether every setting was measured (false: cancelled).
    pub complete: bool,
}

impl TuneResult {
    /// The fastest setting that pays: faster on every repetition, with the target's output.
    pub fn winner(&self) -> Option<&TuneRow> {
        self.rows.iter().find(|r| r.verdict == SpeedVerdict::Faster && r.identical)
    }

    /// Sorts the rows fastest first (by median speedup).
    pub fn rank(&mut self) {
        self.rows.sort_by(|a, b| b.speedup.median.total_cmp(&a.speedup.median));
    }
}

/// What a running tune reports.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TuneEvent {
    /// The settings it will try, those left out, and the runs it plans.
    Planned { candidates: Vec<Candidate>, dropped: Vec<Dropped>, runs: usize },
    /// Loading the target (with a draft).
    Loading { draft: Option<String> },
    /// A setting predicted (none: its costs or probe could not be measured), and dropped when
    /// hopeless.
    Predicted { label: String, predicted: Option<f64>, dropped: Option<String> },
    /// A run starts (`label`: what it measures), `done` of `total` finished; `eta_s`: the
    /// estimated seconds left (0 until one has been timed).
    Progress { done: usize, total: usize, eta_s: f64, label: String },
    /// A setting measured on every prompt.
    Measured { row: TuneRow },
}

/// Tune results kept on disk (`tuned.json` in the app data folder), per target, drafter and
/// machine: what the model pickers show ("1.4× on this Mac") and what a later tune is compared with.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TunedStore {
    /// By [`TunedStore::key`]: the latest result of each target on each machine.
    pub results: BTreeMap<String, TuneResult>,
}

/// The most targets kept (the oldest results go first).
const KEPT_TARGETS: usize = 64;

impl TunedStore {
    fn path() -> PathBuf {
        crate::paths::data_dir().join("tuned.json")
    }

    /// The key of a target's results on this machine: the file (path, size, modification time)
    /// and the machine (CPU, build, backend).
    pub fn key(target: &Path) -> Option<String> {
        let m = std::fs::metadata(target).ok()?;
        let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
        let machine = MachineInfo::now();
        Some(format!(
            "{}:{}:{mtime}|{}|{}|{}",
            target.display(),
            m.len(),
            machine.cpu,
            crate::machine::cpu_build(),
            machine.gpu_backend
        ))
    }

    /// The kept results (none when there are none, or the file cannot be read).
    pub fn load() -> TunedStore {
        std::fs::read(Self::path()).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    /// The latest result for `target` on this machine.
    pub fn get(&self, target: &Path) -> Option<&TuneResult> {
        self.results.get(&Self::key(target)?)
    }

    /// The latest result of every target tuned on this machine whose file is as it was then.
    pub fn here(&self) -> Vec<&TuneResult> {
        self.results.iter().filter(|(key, r)| Self::key(&r.target).as_ref() == Some(*key)).map(|(_, r)| r).collect()
    }

    /// Keeps `result` as its target's latest on this machine (written whole, then renamed).
    pub fn keep(result: &TuneResult) -> Result<()> {
        let Some(key) = Self::key(&result.target) else { return Ok(()) };
        let _lock = crate::paths::lock_beside(&Self::path());
        let mut store = Self::load();
        store.results.insert(key, result.clone());
        while store.results.len() > KEPT_TARGETS {
            let oldest = store.results.iter().min_by_key(|(_, r)| r.started_at).map(|(k, _)| k.clone());
            match oldest {
                Some(k) => store.results.remove(&k),
                None => break,
            };
        }
        let bytes = serde_json::to_vec_pretty(&store).map_err(|e| Error::Chart(e.to_string()))?;
        crate::paths::write_atomically(&Self::path(), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::memory::MemoryVerdict;

    fn spread(median: f64, min: f64, max: f64) -> Spread {
        Spread { median, min, max }
    }

    #[test]
    fn the_verdict_reads_the_spread_not_the_median() {
        assert_eq!(SpeedVerdict::of(&spread(1.42, 1.30, 1.55), 100), SpeedVerdict::Faster);
        assert_eq!(SpeedVerdict::of(&spread(1.10, 0.97, 1.20), 100), SpeedVerdict::WithinNoise);
        assert_eq!(SpeedVerdict::of(&spread(0.64, 0.60, 0.70), 100), SpeedVerdict::Slower);
        // A setting that drafted nothing ran as the target alone: faster only by noise.
        assert_eq!(SpeedVerdict::of(&spread(1.05, 1.01, 1.08), 0), SpeedVerdict::WithinNoise);
        assert_eq!(SpeedVerdict::Faster.words(&spread(1.42, 1.3, 1.5)), "1.42× faster");
        assert_eq!(SpeedVerdict::WithinNoise.words(&spread(1.0, 0.97, 1.06)), "within noise (0.97–1.06×)");
        assert_eq!(SpeedVerdict::Slower.words(&spread(0.64, 0.6, 0.7)), "slower: not used (0.64×)");
    }

    fn way(kind: WayKind, strategy: &str, name: &str, path: Option<&str>, memory: MemoryVerdict) -> Way {
        Way {
            kind,
            label: kind.label().into(),
            strategy: strategy.into(),
            name: name.into(),
            path: path.map(PathBuf::from),
            source: "test".into(),
            catalog_id: path.is_none().then(|| "qwen2.5-coder-0.5b".to_string()),
            download: 1 << 29,
            needed: 2 << 30,
            memory,
            cost: Some(0.1),
            cost_measured: false,
            note: "needs 90 GiB".into(),
        }
    }

    /// The n-gram strategies, the draft on disk and `auto` with it are tried; a catalog draft not
    /// downloaded and one too big are left out, saying why.
    #[test]
    fn candidates_are_what_is_on_disk_and_fits_plus_auto() {
        let ways = [
            way(WayKind::SameVocabulary, "draft", "Qwen 0.5B", Some("/m/draft.gguf"), MemoryVerdict::Fits),
            way(WayKind::SameVocabulary, "draft", "Qwen 3B", Some("/m/big.gguf"), MemoryVerdict::TooBig),
            way(WayKind::SameVocabulary, "draft", "catalog 0.5B", None, MemoryVerdict::Fits),
            way(WayKind::Ngram, "lookup", "lookup", None, MemoryVerdict::Fits),
            way(WayKind::Ngram, "ngram-mod", "ngram-mod", None, MemoryVerdict::Fits),
        ];
        let (tried, dropped) = Candidate::from_ways(&ways);
        let labels: Vec<&str> = tried.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            ["draft model, same vocabulary · Qwen 0.5B", "lookup", "ngram-mod", "auto · with Qwen 0.5B"]
        );
        assert_eq!(tried[3].draft.as_deref(), Some(Path::new("/m/draft.gguf")));
        assert_eq!(tried[1].draft, None);
        assert!(dropped[0].reason.contains("does not fit"), "{dropped:?}");
        assert!(dropped[1].reason.contains("draftlab pull qwen2.5-coder-0.5b"), "{dropped:?}");
        assert_eq!(dropped[1].download.as_deref(), Some("qwen2.5-coder-0.5b"), "{dropped:?}");
        // Without a draft model, `auto` drafts from the text.
        let (tried, _) = Candidate::from_ways(&ways[3..]);
        assert_eq!(tried.last().map(|c| (c.label.as_str(), c.draft.is_none())), Some(("auto", true)));
    }

    #[test]
    fn specs_are_checked_and_builtin_prompts_named() {
        let prompts = TunePrompt::builtin(&["code".into(), "rewrite".into()]).unwrap();
        assert_eq!(prompts.len(), 2);
        assert!(prompts[1].text.contains("type hints"), "{}", prompts[1].text);
        assert!(TunePrompt::builtin(&["poetry".into()]).unwrap_err().to_string().contains("code, prose and rewrite"));
        let spec =
            TuneSpec { target: "t.gguf".into(), folders: vec![], prompts, reps: 2, settings: Settings::default() };
        assert!(spec.validate().is_ok());
        assert!(TuneSpec { reps: 0, ..spec.clone() }.validate().is_err());
        assert!(TuneSpec { prompts: vec![], ..spec }.validate().is_err());
    }

    #[test]
    fn the_winner_is_the_fastest_that_pays_with_the_target_s_output() {
        let row = |label: &str, s: Spread, identical: bool| TuneRow {
            candidate: Candidate {
                label: label.into(),
                strategy: Strategy::NgramMod,
                draft: None,
                kind: WayKind::Ngram,
                memory: 0,
            },
            predicted: None,
            speedup: s,
            verdict: SpeedVerdict::of(&s, 10),
            baseline_tps: s,
            speculative_tps: s,
            drafted: 10,
            acceptance: 0.5,
            identical,
            llama_cpp: None,
        };
        let mut r = TuneResult {
            target: "t".into(),
            target_name: "t".into(),
            machine: MachineInfo::now(),
            kinds: vec!["code".into()],
            reps: 2,
            rows: vec![
                row("noise", spread(1.3, 0.9, 1.5), true),
                row("odd", spread(1.6, 1.5, 1.7), false),
                row("fast", spread(1.2, 1.1, 1.3), true),
            ],
            dropped: vec![],
            started_at: 0,
            seconds: 1.0,
            complete: true,
        };
        r.rank();
        assert_eq!(r.rows.iter().map(|r| r.candidate.label.as_str()).collect::<Vec<_>>(), ["odd", "noise", "fast"]);
        assert_eq!(r.winner().map(|w| w.candidate.label.as_str()), Some("fast"));
    }
}
