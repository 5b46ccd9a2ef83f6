//! What model steps cost on this machine: the target's verify time by batch size and the draft's
//! one-token time (the engine measures them; see its `decoding::costs`). The adaptive draft length,
//! `auto`'s choice of drafter, bench predictions and sweeps all read them. Measurements are kept on
//! disk for a week ([`CostsCache`]), per model, settings and machine.

use serde::{Deserialize, Serialize};

use crate::decoding::options::ModelId;
use crate::decoding::report::median;
use crate::decoding::settings::Settings;

/// What one model step costs on this machine, measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Costs {
    /// `verify_ms[b - 1]`: the target's time to decode a batch of b tokens with logits for each
    /// (and pick the argmax of each row).
    pub verify_ms: Vec<f64>,
    /// The draft's time for one token (0 when there is no draft).
    pub draft_token_ms: f64,
    /// Draft token cost ÷ target token cost.
    pub c: f64,
}

impl Costs {
    /// V(b), the verify time of a batch of b, from the measured curve (the last value beyond it).
    pub fn verify(&self, b: usize) -> f64 {
        let Some(&last) = self.verify_ms.last() else { return 0.0 };
        self.verify_ms.get(b.max(1) - 1).copied().unwrap_or(last)
    }

    /// A run's time by these costs: each round a batch of its draft length + 1, plus the draft
    /// model's `draft_tokens` decoded tokens.
    pub fn run_ms(&self, drafted: impl IntoIterator<Item = usize>, draft_tokens: u64) -> f64 {
        let verify: f64 = drafted.into_iter().map(|k| self.verify(k + 1)).sum();
        verify + draft_tokens as f64 * self.draft_token_ms
    }

    /// The element-wise median of several measurements (taken at different times: between a
    /// benchmark's runs, so the costs see the machine the runs saw).
    pub fn median_of(all: &[Costs]) -> Option<Costs> {
        let len = all.iter().map(|c| c.verify_ms.len()).min().filter(|&n| n > 0)?;
        let verify_ms: Vec<f64> =
            (0..len).map(|i| median(&all.iter().map(|c| c.verify_ms[i]).collect::<Vec<_>>())).collect();
        let draft_token_ms = median(&all.iter().map(|c| c.draft_token_ms).collect::<Vec<_>>());
        let c = if verify_ms[0] > 0.0 { draft_token_ms / verify_ms[0] } else { 0.0 };
        Some(Costs { verify_ms, draft_token_ms, c })
    }

    /// V(b) beyond the measured curve too: the last measured step's slope carries on.
    fn verify_extrapolated(&self, b: usize) -> f64 {
        let n = self.verify_ms.len();
        if b <= n || n < 2 {
            return self.verify(b);
        }
        let slope = (self.verify_ms[n - 1] - self.verify_ms[n - 2]).max(0.0);
        self.verify_ms[n - 1] + (b - n) as f64 * slope
    }

    /// The draft model's time to decode `n` tokens in one batch (catching up on what it missed
    /// while other drafters ran): its one-token time scaled as the target's batches scale on this
    /// machine. Decoding 1 token costs `draft_token_ms`.
    pub fn catch_up_ms(&self, n: usize) -> f64 {
        let v1 = self.verify(1);
        if n == 0 || v1 <= 0.0 {
            return 0.0;
        }
        self.draft_token_ms * self.verify_extrapolated(n) / v1
    }
}

/// The version of [`costs_key`]'s form, raised when curves measured by older builds no longer say
/// what this one pays: `v2`, llama.cpp compiled by clang on x86-64 Linux (its 4-token pass of a
/// Q4_K_M target a fifth cheaper than gcc's build; a one-token step about the same).
const KEY_VERSION: &str = "v2";

/// How every key of a target and draft starts (`draft` "-" when none was measured): what
/// [`CostsCache::measured_ratio`] looks a pair up by.
fn pair_prefix(target: &str, draft: &str) -> String {
    format!("{KEY_VERSION}|{target}|{draft}|")
}

/// The identity of a cost measurement on disk: the models (path, size, modification time; the
/// draft only when its cost is measured), the settings the costs depend on, the machine and build,
/// and the other machines holding part of the target (`rpc`, `tensor_split`): every target pass
/// pays their round trips, so a curve measured here alone, or over another network, says nothing
/// about a pass through them.
pub fn costs_key(target: &ModelId, draft: Option<&ModelId>, settings: &Settings, max_batch: usize) -> String {
    let id = |m: &ModelId| format!("{}:{}:{}", m.path.display(), m.file_size, m.mtime);
    let draft = draft.map_or_else(|| "-".to_string(), id);
    let machine = crate::machine::MachineInfo::now();
    format!(
        "{}ctx{}|batch{}|t{}|gpu{:?}|max{max_batch}|{}|{}|{}|{:?}{:?}{:?}{:?}|rpc{:?}{:?}",
        pair_prefix(&id(target), &draft),
        settings.n_ctx,
        settings.n_batch,
        settings.threads,
        settings.gpu_layers,
        machine.cpu,
        crate::machine::cpu_build(),
        machine.gpu_backend,
        settings.flash_attn,
        settings.cache_type,
        settings.draft_cache_type,
        settings.draft_gpu_layers,
        settings.rpc,
        settings.tensor_split,
    )
}

/// Measured costs kept on disk (`costs.json` in the app data folder), so adaptive runs measure
/// once per model, context and machine rather than at every start. Entries expire after a week
/// (a driver or OS update changes speeds). A missing or unreadable file is an empty cache.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CostsCache {
    entries: std::collections::BTreeMap<String, CachedCosts>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CachedCosts {
    costs: Costs,
    measured_at: u64,
}

const COSTS_MAX_AGE_S: u64 = 7 * 24 * 3600;
/// Costs of a target spread over other machines are kept an hour: a network's latency changes
/// with its route and load far sooner than a machine's speed does.
const REMOTE_COSTS_MAX_AGE_S: u64 = 3600;

/// How long costs measured with these settings stay good.
pub fn costs_max_age_s(settings: &Settings) -> u64 {
    if settings.rpc.is_empty() {
        COSTS_MAX_AGE_S
    } else {
        REMOTE_COSTS_MAX_AGE_S
    }
}

impl CostsCache {
    fn path() -> std::path::PathBuf {
        crate::paths::data_dir().join("costs.json")
    }

    pub fn load() -> CostsCache {
        Self::load_from(&Self::path())
    }

    fn load_from(path: &std::path::Path) -> CostsCache {
        let Ok(bytes) = std::fs::read(path) else { return CostsCache::default() };
        Self::from_bytes(&bytes).unwrap_or_else(|e| {
            // Not overwritten by the next save: kept aside, and said.
            let aside = crate::paths::set_aside(path);
            eprintln!(
                "warning: {} cannot be read ({e}); measured costs start afresh{}",
                path.display(),
                aside.map_or_else(|_| String::new(), |a| format!(" (the file is kept as {})", a.display()))
            );
            CostsCache::default()
        })
    }

    /// A `costs.json` read.
    pub fn from_bytes(bytes: &[u8]) -> serde_json::Result<CostsCache> {
        serde_json::from_slice(bytes)
    }

    /// The keys of the costs kept.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The costs kept under `key`, if measured less than `max_age_s` ago.
    pub fn get(&self, key: &str, max_age_s: u64) -> Option<Costs> {
        let e = self.entries.get(key)?;
        let fresh = crate::paths::now_secs().saturating_sub(e.measured_at) < max_age_s;
        (fresh && !e.costs.verify_ms.is_empty() && e.costs.verify_ms.iter().all(|v| v.is_finite() && *v > 0.0))
            .then(|| e.costs.clone())
    }

    /// The draft's measured cost per token against the target's (`c`), from the newest fresh
    /// measurement of this pair under any settings (a drafter head's too): what the drafter finder
    /// shows when a run has measured it. Files are known by path, size and modification time, as
    /// the runs that measured them knew them.
    pub fn measured_ratio(&self, target: &std::path::Path, draft: &std::path::Path) -> Option<f64> {
        let id = |p: &std::path::Path| {
            let m = std::fs::metadata(p).ok()?;
            let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
            Some(format!("{}:{}:{mtime}", p.display(), m.len()))
        };
        let prefix = pair_prefix(&id(target)?, &id(draft)?);
        let now = crate::paths::now_secs();
        self.entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, e)| e)
            .filter(|e| now.saturating_sub(e.measured_at) < COSTS_MAX_AGE_S && e.costs.c.is_finite() && e.costs.c > 0.0)
            .max_by_key(|e| e.measured_at)
            .map(|e| e.costs.c)
    }

    /// Adds an entry and writes the file (atomically); failures only cost a re-measurement later.
    /// Read, added to and written under a lock (`costs.json.lock`), so the app and a CLI run
    /// measuring at once both keep their entries.
    pub fn store(key: &str, costs: &Costs) {
        Self::store_in(&Self::path(), key, costs);
    }

    /// Replaces a kept entry's costs with what runs have since learned (see the engine's
    /// `Scheduler::learned`), keeping when it was measured: it still expires a week after the
    /// measurement (the sizes runs never use are only ever moved with the rest). An entry that is
    /// gone or expired stays so: the next run measures afresh.
    pub fn refine(key: &str, costs: &Costs, max_age_s: u64) {
        Self::refine_in(&Self::path(), key, costs, max_age_s);
    }

    fn refine_in(path: &std::path::Path, key: &str, costs: &Costs, max_age_s: u64) {
        if costs.verify_ms.is_empty() || !costs.verify_ms.iter().all(|v| v.is_finite() && *v > 0.0) {
            return;
        }
        let _held = crate::paths::lock_beside(path);
        let mut cache = CostsCache::load_from(path);
        let now = crate::paths::now_secs();
        let Some(e) = cache.entries.get_mut(key) else { return };
        if now.saturating_sub(e.measured_at) >= max_age_s || e.costs.verify_ms.len() != costs.verify_ms.len() {
            return;
        }
        e.costs = costs.clone();
        if let Ok(bytes) = serde_json::to_vec_pretty(&cache) {
            let _ = crate::paths::write_atomically(path, &bytes);
        }
    }

    fn store_in(path: &std::path::Path, key: &str, costs: &Costs) {
        let _ = path.parent().map(std::fs::create_dir_all);
        let _held = crate::paths::lock_beside(path);
        let mut cache = CostsCache::load_from(path);
        let now = crate::paths::now_secs();
        cache.entries.retain(|_, e| now.saturating_sub(e.measured_at) < COSTS_MAX_AGE_S);
        cache.entries.insert(key.to_string(), CachedCosts { costs: costs.clone(), measured_at: now });
        if let Ok(bytes) = serde_json::to_vec_pretty(&cache) {
            let _ = crate::paths::write_atomically(path, &bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refined_entry_keeps_its_age_and_a_missing_one_stays_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("costs.json");
        let measured = Costs { verify_ms: vec![10.0, 20.0], draft_token_ms: 1.0, c: 0.1 };
        let learned = Costs { verify_ms: vec![11.0, 18.0], draft_token_ms: 1.0, c: 1.0 / 11.0 };
        CostsCache::store_in(&path, "k", &measured);
        let at = CostsCache::load_from(&path).entries["k"].measured_at;
        CostsCache::refine_in(&path, "k", &learned, COSTS_MAX_AGE_S);
        let cache = CostsCache::load_from(&path);
        let curve = |c: &CostsCache, k: &str| c.get(k, COSTS_MAX_AGE_S).map(|c| c.verify_ms);
        assert_eq!(curve(&cache, "k"), Some(learned.verify_ms.clone()));
        assert_eq!(cache.entries["k"].measured_at, at, "it expires when the measurement does");
        CostsCache::refine_in(&path, "other", &learned, COSTS_MAX_AGE_S);
        assert_eq!(curve(&CostsCache::load_from(&path), "other"), None);
        // Another curve's length, or nonsense, changes nothing.
        let short = Costs { verify_ms: vec![5.0], ..learned.clone() };
        let bad = Costs { verify_ms: vec![f64::NAN, 1.0], ..learned.clone() };
        CostsCache::refine_in(&path, "k", &short, COSTS_MAX_AGE_S);
        CostsCache::refine_in(&path, "k", &bad, COSTS_MAX_AGE_S);
        assert_eq!(curve(&CostsCache::load_from(&path), "k"), Some(learned.verify_ms));
        // Expired: left to be measured again.
        CostsCache::refine_in(&path, "k", &measured, 0);
        assert_ne!(curve(&CostsCache::load_from(&path), "k"), Some(measured.verify_ms));
    }

    /// Writers at once (the app and a CLI run) each keep their entry.
    #[test]
    fn concurrent_stores_keep_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("costs.json");
        let costs = Costs { verify_ms: vec![10.0, 11.0], draft_token_ms: 1.0, c: 0.1 };
        std::thread::scope(|s| {
            for t in 0..8 {
                let (path, costs) = (&path, &costs);
                s.spawn(move || {
                    for i in 0..10 {
                        CostsCache::store_in(path, &format!("key-{t}-{i}"), costs);
                    }
                });
            }
        });
        assert_eq!(CostsCache::load_from(&path).keys().count(), 80);
    }

    /// The finder's lookup: the newest fresh measurement of the pair, under any settings; another
    /// draft, a changed file or an old entry is not it.
    #[test]
    fn the_measured_ratio_of_a_pair_is_its_newest_fresh_entry() {
        let dir = tempfile::tempdir().unwrap();
        let (t, d, other) = (dir.path().join("t.gguf"), dir.path().join("d.gguf"), dir.path().join("o.gguf"));
        for p in [&t, &d, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        let id = |p: &std::path::Path| {
            let m = std::fs::metadata(p).unwrap();
            let mtime = m.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
            ModelId { path: p.to_path_buf(), file_size: m.len(), mtime, ..model("x") }
        };
        let now = crate::paths::now_secs();
        let costs = |c: f64| Costs { verify_ms: vec![10.0], draft_token_ms: c * 10.0, c };
        let mut cache = CostsCache::default();
        let s = Settings::default();
        let s2 = Settings { n_ctx: 8192, ..Settings::default() };
        let put = |cache: &mut CostsCache, key: String, c: f64, at: u64| {
            cache.entries.insert(key, CachedCosts { costs: costs(c), measured_at: at });
        };
        assert_eq!(cache.measured_ratio(&t, &d), None);
        put(&mut cache, costs_key(&id(&t), Some(&id(&d)), &s, 9), 0.2, now - 100);
        put(&mut cache, costs_key(&id(&t), Some(&id(&d)), &s2, 9), 0.25, now - 10);
        put(&mut cache, format!("{}|fed:draft-eagle3", costs_key(&id(&t), Some(&id(&other)), &s, 9)), 0.05, now);
        put(&mut cache, costs_key(&id(&t), Some(&id(&other)), &s2, 9), 0.5, now - COSTS_MAX_AGE_S - 1);
        assert_eq!(cache.measured_ratio(&t, &d), Some(0.25));
        assert_eq!(cache.measured_ratio(&t, &other), Some(0.05));
        assert_eq!(cache.measured_ratio(&d, &t), None);
        std::fs::write(&d, b"changed").unwrap();
        assert_eq!(cache.measured_ratio(&t, &d), None, "another size: another file");
    }

    fn model(path: &str) -> ModelId {
        ModelId {
            path: path.into(),
            name: "m".into(),
            architecture: "llama".into(),
            quantization: "Q4_K_M".into(),
            n_params: 1,
            file_size: 10,
            mtime: 20,
        }
    }

    #[test]
    fn costs_measured_through_other_machines_are_kept_apart_and_briefly() {
        let target = model("/m/target.gguf");
        let here = Settings::default();
        let remote = Settings { rpc: vec!["10.0.0.2:50052".into()], ..Settings::default() };
        let other = Settings { rpc: vec!["10.0.0.3:50052".into()], ..Settings::default() };
        let split = Settings { tensor_split: vec![3.0, 1.0], ..remote.clone() };
        let keys: std::collections::HashSet<String> =
            [&here, &remote, &other, &split].iter().map(|s| costs_key(&target, None, s, 9)).collect();
        assert_eq!(keys.len(), 4, "each network and split has costs of its own: {keys:?}");
        assert_eq!(costs_key(&target, None, &remote, 9), costs_key(&target, None, &remote.clone(), 9));
        assert!(costs_max_age_s(&remote) < costs_max_age_s(&here));

        let costs = Costs { verify_ms: vec![100.0, 150.0], draft_token_ms: 0.0, c: 0.0 };
        let mut cache = CostsCache::default();
        let age = costs_max_age_s(&remote) + 1;
        cache
            .entries
            .insert("k".into(), CachedCosts { costs: costs.clone(), measured_at: crate::paths::now_secs() - age });
        assert!(cache.get("k", costs_max_age_s(&remote)).is_none(), "an hour-old network measurement is stale");
        assert_eq!(cache.get("k", costs_max_age_s(&here)).map(|c| c.verify_ms), Some(costs.verify_ms));
    }
}
