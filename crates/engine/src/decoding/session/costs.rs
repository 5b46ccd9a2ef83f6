//! A session's step costs: measured once per settings, kept on disk, learned from runs.

use super::*;

impl Session {
    /// The step costs for these settings: measured once per session and settings (and kept on
    /// disk for a week, an hour for a target spread over other machines, see [`CostsCache`]),
    /// then reused.
    pub fn costs(&self, prompt: &[Token], settings: &ValidSettings) -> Result<Costs> {
        let max_batch = settings.longest_draft() + 1;
        let key = memo_key(settings, self.drafts_with_model(settings), None);
        if let Some(c) = self.costs.borrow().get(&key) {
            return Ok(c.clone());
        }
        let disk_key = self.costs_disk_key(settings);
        let draft = self.draft.as_ref().filter(|_| self.drafts_with_model(settings));
        let c = match CostsCache::load().get(&disk_key, costs_max_age_s(settings)) {
            Some(c) => c,
            None => {
                let c = measure_costs(&self.target, draft, prompt, settings, max_batch, 3)?;
                CostsCache::store(&disk_key, &c);
                c
            }
        };
        self.costs.borrow_mut().insert(key, c.clone());
        Ok(c)
    }

    /// Where [`Session::costs`] keeps the costs for these settings on disk.
    pub(super) fn costs_disk_key(&self, settings: &ValidSettings) -> String {
        let draft = self.draft.as_ref().filter(|_| self.drafts_with_model(settings));
        costs_key(&self.target.id, draft.map(|d| &d.id), settings, settings.longest_draft() + 1)
    }

    /// Keeps what a run learned of the step costs (see [`Scheduler::learned`]) for the next runs,
    /// in this session and on disk: a measurement is one moment of a machine whose speed drifts,
    /// a run is hundreds of passes.
    pub(super) fn learn_costs(&self, settings: &ValidSettings, learned: Costs) {
        let key = memo_key(settings, self.drafts_with_model(settings), None);
        let mut memo = self.costs.borrow_mut();
        let Some(kept) = memo.get_mut(&key) else { return };
        if kept.verify_ms.len() != learned.verify_ms.len() {
            return;
        }
        CostsCache::refine(&self.costs_disk_key(settings), &learned, costs_max_age_s(settings));
        *kept = learned;
    }

    /// The target's step costs on a context that feeds the drafter a speculative run with these
    /// settings drafts with inside it (MTP layers, a head), when it has one: the verify curve with
    /// the feed, and a drafting call's time (see [`measure_fed`]). Kept like [`Session::costs`].
    pub fn fed_costs(&self, prompt: &[Token], settings: &ValidSettings) -> Result<Option<Costs>> {
        let Some((kind, file)) = self.drafting_in_target(Mode::Speculative, settings) else { return Ok(None) };
        let max_batch = settings.longest_draft() + 1;
        let key = memo_key(settings, false, Some(kind));
        if let Some(c) = self.costs.borrow().get(&key) {
            return Ok(Some(c.clone()));
        }
        // The drafter file stands where a draft model's would.
        let draft = file.map(|f| &f.id);
        let disk_key = format!("{}|fed:{}", costs_key(&self.target.id, draft, settings, max_batch), kind.spec_type());
        let c = match CostsCache::load().get(&disk_key, costs_max_age_s(settings)) {
            Some(c) => c,
            None => {
                let mut ctx = self.target_context(Mode::Speculative, settings)?;
                let c = measure_fed(&mut ctx, prompt, settings, max_batch, 3)?;
                CostsCache::store(&disk_key, &c);
                c
            }
        };
        self.costs.borrow_mut().insert(key, c.clone());
        Ok(Some(c))
    }

    /// Tests: runs with these settings are scheduled on `plain` step costs and, when they draft
    /// inside the target, `fed` ones, instead of what this machine measures (so a test can make a
    /// drafter pay, or not, whatever the machine).
    #[cfg(feature = "testing")]
    pub fn pin_costs(&self, settings: &ValidSettings, plain: Costs, fed: Option<Costs>) {
        let mut costs = self.costs.borrow_mut();
        costs.insert(memo_key(settings, self.drafts_with_model(settings), None), plain);
        if let (Some(fed), Some(kind)) = (fed, self.drafter_in_target(Mode::Speculative, settings)) {
            costs.insert(memo_key(settings, false, Some(kind)), fed);
        }
    }

    /// Measures the step costs afresh (`reps` interleaved repetitions, batches up to `max_batch`),
    /// as a bench does after its runs.
    pub fn measure_costs(
        &self,
        prompt: &[Token],
        settings: &ValidSettings,
        max_batch: usize,
        reps: usize,
    ) -> Result<Costs> {
        let draft = self.draft.as_ref().filter(|_| self.drafts_with_model(settings));
        measure_costs(&self.target, draft, prompt, settings, max_batch, reps)
    }
}
