//! The doctor's word on a pair before anything loads: whether it can work, fits in memory, and
//! how large a context and how many conversations it can keep here.

use super::*;

/// The doctor's diagnosis on this machine's memory now, with the target spread over the machines
/// at `rpc` too, split by `tensor_split` (their memory counts, and each device's share of the
/// layers is checked; a server that does not answer is an error naming it). Nothing loads; the
/// split is set for the next load.
pub fn diagnose(
    target: &GgufFile,
    draft: Option<&GgufFile>,
    ctx: u64,
    kv: KvScale,
    placement: Placement,
    rpc: &[String],
    tensor_split: &[f32],
) -> Result<Diagnosis> {
    let mut mem = crate::decoding::llama::memory_info();
    let holders = match rpc.is_empty() {
        true => Vec::new(),
        false => {
            // The split first: what remote devices report (their memory here) follows it.
            crate::decoding::rpc::set_split(rpc, tensor_split)?;
            let remote = crate::decoding::rpc::devices(rpc)?;
            let holders = crate::decoding::rpc::holders(&remote);
            // The remote devices come first; each server says what its own machine has.
            let far = &holders[..remote.len().min(holders.len())];
            let free: u64 = far.iter().map(|h| h.free).sum();
            mem.available += free;
            mem.total += far.iter().map(|h| h.total).sum::<u64>();
            if let Some(g) = mem.gpu.as_mut() {
                g.bytes += free;
            }
            holders
        }
    };
    let mut dx = doctor::diagnose_with(target, draft, ctx, kv, placement, &mem);
    if !holders.is_empty() {
        dx.add_spread(target, ctx, kv, placement.target, &holders);
    }
    Ok(dx)
}

impl Session {
    /// The doctor's verdict on two files, whatever it is, for these settings: their context, KV
    /// cache types and GPU layers, and the remote machines and split they name.
    pub fn doctor(target: &Path, draft: Option<&Path>, settings: &Settings) -> Result<Diagnosis> {
        let tg = GgufFile::open(target)?;
        let dg = draft.map(GgufFile::open).transpose()?;
        diagnose(
            &tg,
            dg.as_ref(),
            u64::from(settings.n_ctx),
            settings.kv_scale(),
            settings.placement(),
            &settings.rpc,
            &settings.tensor_split,
        )
    }

    /// The largest context, in tokens, `target` (with `draft`) can run with here by the doctor's
    /// memory model: the target's training context, at most `cap`, halved until the pair fits in
    /// memory now; never less than the settings' own context.
    pub fn largest_context(target: &Path, draft: Option<&Path>, settings: &Settings, cap: u32) -> Result<u32> {
        let trained = GgufFile::open(target)?.summary().context_length.unwrap_or(u64::from(cap));
        let mut ctx = u32::try_from(trained.min(u64::from(cap))).unwrap_or(cap);
        while ctx > settings.n_ctx {
            let s = Settings { n_ctx: ctx, ..settings.clone() };
            if Self::doctor(target, draft, &s)?.memory.verdict == MemoryVerdict::Fits {
                return Ok(ctx);
            }
            ctx /= 2;
        }
        Ok(settings.n_ctx)
    }

    /// How many conversations `target` (with `draft`) can keep warm side by side here, at most
    /// `max`: one, and one more for each further KV cache (the target's and the draft's at the
    /// settings' context) that fits in three quarters of the doctor's limit (the GPU's working set,
    /// or memory free now) beside the models.
    pub fn slots_that_fit(target: &Path, draft: Option<&Path>, settings: &Settings, max: usize) -> Result<usize> {
        let m = Self::doctor(target, draft, settings)?.memory;
        let on_gpu = m.gpu_budget == Some(m.limit);
        let needed = if on_gpu { m.gpu_needed } else { m.needed };
        let per_slot = (m.target_kv + m.draft_kv).max(1);
        let spare = (m.limit / 4 * 3).saturating_sub(needed);
        Ok(usize::try_from(1 + spare / per_slot).unwrap_or(max).clamp(1, max.max(1)))
    }

    /// The doctor's verdict from the headers alone (nothing loads): a pair that cannot fit in
    /// memory now (at the settings' context and KV cache types) is an error. Vocabularies that
    /// differ are not: such a draft drafts across vocabularies. Returns the diagnosis.
    pub fn check(target: &Path, draft: Option<&Path>, settings: &Settings) -> Result<Diagnosis> {
        let dx = Self::doctor(target, draft, settings)?;
        let blocking = |topic: Topic| -> Option<String> {
            let msgs: Vec<&str> = dx
                .findings
                .iter()
                .filter(|f| f.level == Verdict::Incompatible && f.topic == topic)
                .map(|f| f.message.as_str())
                .collect();
            (!msgs.is_empty()).then(|| msgs.join("; "))
        };
        // Vocabularies that differ only make the draft draft across them; a file without a
        // token list cannot draft at all.
        // A drafter file (a head) where a model belongs: say what it is and what runs it.
        if let Some(reason) = blocking(Topic::Drafter) {
            return Err(Error::Incompatible { reason });
        }
        if let Some(reason) = blocking(Topic::Vocabulary) {
            return Err(Error::Incompatible { reason });
        }
        if let Some(reason) = blocking(Topic::Memory) {
            return Err(Error::OutOfMemory { reason });
        }
        Ok(dx)
    }
}
