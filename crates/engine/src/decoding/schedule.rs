//! How many tokens to draft next: fixed, or adaptive from what this run has observed and what
//! verification costs on this machine.
//!
//! Adaptive: with `a_i` the observed probability that position i is accepted given that all
//! before it were, a round drafting k tokens yields `E(k) = 1 + Σ_{j≤k} Π_{i≤j} a_i` tokens and
//! costs `k·T_d + V(k+1)` (draft token time, measured verify curve). The schedule picks the k
//! with the most expected tokens per millisecond, k = 0 (no drafting) included: on a CPU, where
//! verifying 2 tokens can cost 1.9× one, that is often the answer, and drafting stops rather than
//! slowing generation down. Acceptance is tracked separately per n-gram match length, since a
//! 4-token match predicts far better than a 1-token one.

use std::collections::HashMap;

use crate::decoding::costs::Costs;

mod evidence;
pub use evidence::{Evidence, CARRIED_ROUNDS};

/// Prior acceptance of a drafter (mean 0.8, weight 2): optimistic enough that a new strategy is
/// tried. A bucket it has not tried starts from what its other buckets showed, so a drafter that
/// keeps failing is not tried again at every match length.
const PRIOR_ACCEPT: f64 = 1.6;
const PRIOR_REJECT: f64 = 0.4;
/// The prior of a drafter whose proposals are scored whether or not they are drafted (mean 0.5,
/// weight 2): it needs no optimism to be tried, so it drafts on evidence only.
const OBSERVED_PRIOR_ACCEPT: f64 = 1.0;
const OBSERVED_PRIOR_REJECT: f64 = 1.0;
/// Standard errors taken off a free drafter's acceptance estimate (see `acceptance`).
const PESSIMISM: f64 = 1.0;
/// How many observed positions the drafter's rate counts for in a bucket's pooled rate, and the
/// bucket's pooled rate in one position's. Chosen on replays of seven real outputs
/// (`tests/replay.rs`): lighter priors draft on a few lucky rounds and lose on code; heavier
/// ones learn a copy too late to pay for it.
const BUCKET_WEIGHT: f64 = 8.0;
const POSITION_WEIGHT: f64 = 4.0;

/// Drafting must promise this much more than the target alone: the costs and acceptance it is
/// judged by are estimates (a few percent of noise), and a bet that barely pays on paper loses as
/// often as it wins. Not drafting costs exactly what the target alone costs.
const MARGIN: f64 = 1.05;
/// The most single steps one round may lose on top of its own step (see `Scheduler::longest`) …
const WORST_ROUND: f64 = 4.0;
/// … and the share of what the copy it continues has gained that it may risk besides. Chosen on
/// replays (`tests/replay.rs`): half of it gave back a third of rewrite's gain on copies that
/// broke off; a quarter keeps rewrite's and still lets an answer asked for again reach 32-token
/// drafts (1.47× → 1.66× on a Zen 3's curve, `cpu_curve` there).
const STREAK_SHARE: f64 = 0.25;
/// After this many rounds without drafting, draft once to learn whether things have changed (at
/// the shortest length that would pay if the draft were right: a wrong probe then costs least —
/// on a CPU a probe of 6 cost 3.6× one of 1); the wait doubles after each exploration that fails,
/// up to `EXPLORE_MAX`.
const EXPLORE_EVERY: usize = 16;
const EXPLORE_MAX: usize = 512;
/// How many of this run's own passes of a batch size weigh as much as the measured curve's value
/// for it (see [`Scheduler::verify`]).
const CURVE_WEIGHT: f64 = 4.0;
/// A run's corrected curve is kept for the next runs once it rests on this many passes.
const LEARNED_AFTER: f64 = 32.0;

#[derive(Debug, Default, Clone, PartialEq)]
struct PositionStats {
    /// Rounds in which position i was verified (all before it accepted).
    reached: Vec<u64>,
    accepted: Vec<u64>,
}

/// Whose statistics: (drafter index within the run, n-gram match length; 0 for model drafters).
pub type Bucket = (usize, usize);

/// The match length of a bucket that proposes an answer the slot gave the same prompt before
/// (`draft::reprise`): it starts sure ([`REPRISE_ACCEPT`] of every [`REPRISE_ACCEPT`] +
/// [`REPRISE_REJECT`] positions right), and its drafts reach as far as the verify curve, not
/// [`WORST_ROUND`]'s few steps: at greedy the same prompt is answered the same way, but for a
/// near tie that a batched pass may settle otherwise (the first answer was written token by token,
/// the repeat is verified in batches: one round lost where they part, and the reprise waits until
/// the answer comes back to the earlier one).
pub const REPRISE: usize = usize::MAX;
const REPRISE_ACCEPT: f64 = 199.0;
const REPRISE_REJECT: f64 = 1.0;

/// One way to draft this round.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub bucket: Bucket,
    /// The longest draft on offer (what an n-gram drafter found, or the model's limit).
    pub max: usize,
    /// What each drafted token costs (0 for n-gram drafters).
    pub token_ms: f64,
    /// What drafting at all costs this round besides that: a draft model that sat out rounds
    /// must first decode what it missed (see `Costs::catch_up_ms`); 0 for n-gram drafters.
    pub setup_ms: f64,
    /// Its proposals are scored whether or not they are drafted ([`Scheduler::observe`], for free
    /// drafters at greedy): the schedule knows how it would have fared, so it never probes it.
    pub observed: bool,
    /// It drafts from the target's own context (MTP layers, a head), which must then feed it every
    /// batch: while it is a candidate, every round pays the feed (see [`Scheduler::feeding_pays`]).
    pub fed: bool,
}

#[derive(Debug, Clone)]
pub struct Scheduler {
    costs: Costs,
    /// The target's step costs on a context that feeds a drafter (see [`Scheduler::with_feed`]).
    fed: Option<Costs>,
    stats: HashMap<Bucket, PositionStats>,
    idle_rounds: usize,
    explore_every: usize,
    exploring: bool,
    /// Drafters (by index) whose proposals are scored drafted or not (see `Candidate::observed`).
    observed: std::collections::HashSet<usize>,
    /// How often each length was chosen (index = length).
    pub chosen: Vec<u64>,
    /// This run's own passes by batch size (index = size − 1): how many, and their summed ms.
    passes: Vec<(f64, f64)>,
    /// Over all of them: how many, and the sum of each one's time ÷ the curve's (see `drift`).
    seen: (f64, f64),
    /// What the rounds since the last rejection gained over the target alone, in ms (each round
    /// wholly accepted: a copy running on; see `Scheduler::longest`).
    streak_ms: f64,
}

impl Scheduler {
    pub fn new(costs: Costs) -> Self {
        Scheduler {
            costs,
            fed: None,
            stats: HashMap::new(),
            idle_rounds: 0,
            explore_every: EXPLORE_EVERY,
            exploring: false,
            observed: Default::default(),
            chosen: Vec::new(),
            passes: Vec::new(),
            seen: (0.0, 0.0),
            streak_ms: 0.0,
        }
    }

    pub fn costs(&self) -> &Costs {
        &self.costs
    }

    /// The same schedule for a target whose context can feed a drafter of llama.cpp's: `fed` are
    /// its step costs while it feeds one (the verify curve measured there, and what a drafting
    /// call costs as `draft_token_ms`).
    pub fn with_feed(mut self, fed: Costs) -> Self {
        self.fed = Some(fed);
        self
    }

    /// What feeding the drafter adds to a target pass of `b` tokens.
    pub fn feed(&self, b: usize) -> f64 {
        self.fed.as_ref().map_or(0.0, |f| (f.verify(b) - self.costs.verify(b)).max(0.0))
    }

    /// Whether a context should keep feeding its drafter: drafting with a fed candidate (every
    /// target pass paying the feed) promises more tokens per millisecond, by the margin drafting
    /// must promise, than the best of the rest on a context that feeds nothing (not drafting
    /// included, at the target alone's cost). At the start of a run this is judged on the prior;
    /// once it says no, the context stops feeding (what a drafter did not read, it cannot draft
    /// after), so a drafter that costs more than it saves costs at most the rounds that showed it.
    pub fn feeding_pays(&self, candidates: &[Candidate]) -> bool {
        let best = |fed: bool| {
            candidates
                .iter()
                .filter(|c| c.fed == fed)
                .flat_map(|c| (1..=self.reach(c)).map(move |k| (c, k)))
                .map(|(c, k)| self.rate_with(c.bucket, k, c.token_ms, c.setup_ms, fed))
                .fold(0.0, f64::max)
        };
        let alone = MARGIN * self.rate((0, 0), 0, 0.0, 0.0);
        best(true) > alone.max(MARGIN * best(false))
    }

    /// Whether the last decision was an exploration.
    pub fn explored(&self) -> bool {
        self.exploring
    }

    /// The probability that position i of a draft from `bucket` is accepted, given that every
    /// position before it was. Three levels, each the prior of the next: the drafter (every bucket
    /// and position it has shown), the bucket (its positions pooled: for copied text acceptance is
    /// nearly the same at every position, so one right draft of 8 says much about all 8), and the
    /// position itself once it has data of its own.
    fn acceptance(&self, bucket: Bucket, i: usize) -> f64 {
        let total = |s: &PositionStats| (s.accepted.iter().sum::<u64>() as f64, s.reached.iter().sum::<u64>() as f64);
        if bucket.1 == REPRISE {
            let (acc, reached) = self.stats.get(&bucket).map_or((0.0, 0.0), total);
            return (acc + REPRISE_ACCEPT) / (reached + REPRISE_ACCEPT + REPRISE_REJECT);
        }
        let (d_acc, d_reached) = self
            .stats
            .iter()
            .filter(|(b, _)| b.0 == bucket.0 && **b != bucket)
            .map(|(_, s)| total(s))
            .fold((0.0, 0.0), |(a, r), (x, y)| (a + x, r + y));
        let (prior_acc, prior_rej) = if self.observed.contains(&bucket.0) {
            (OBSERVED_PRIOR_ACCEPT, OBSERVED_PRIOR_REJECT)
        } else {
            (PRIOR_ACCEPT, PRIOR_REJECT)
        };
        let drafter = (d_acc + prior_acc) / (d_reached + prior_acc + prior_rej);
        let stats = self.stats.get(&bucket);
        let (b_acc, b_reached) = stats.map_or((0.0, 0.0), total);
        let pooled = (b_acc + drafter * BUCKET_WEIGHT) / (b_reached + BUCKET_WEIGHT);
        let at = |s: &PositionStats| {
            (s.accepted.get(i).copied().unwrap_or(0) as f64, s.reached.get(i).copied().unwrap_or(0) as f64)
        };
        let (acc, reached) = stats.map_or((0.0, 0.0), at);
        let n = reached + POSITION_WEIGHT;
        let mean = (acc + pooled * POSITION_WEIGHT) / n;
        if self.observed.contains(&bucket.0) {
            // A free drafter needs no benefit of the doubt (it is scored whether or not it drafts):
            // it is judged by its estimate less one standard error, so a few lucky rounds are not
            // enough to draft on, and a long run of right proposals is.
            (mean - PESSIMISM * (mean * (1.0 - mean) / (n + 1.0)).sqrt()).max(0.0)
        } else {
            mean
        }
    }

    /// Expected tokens per millisecond of a round that drafts k tokens at `token_ms` each, after
    /// `setup_ms` of catching up.
    pub fn rate(&self, bucket: Bucket, k: usize, token_ms: f64, setup_ms: f64) -> f64 {
        self.rate_with(bucket, k, token_ms, setup_ms, false)
    }

    /// The same, on a context that feeds a drafter (`fed`: the target's passes pay the feed).
    fn rate_with(&self, bucket: Bucket, k: usize, token_ms: f64, setup_ms: f64, fed: bool) -> f64 {
        let mut p = 1.0;
        let mut expected = 1.0;
        for i in 0..k {
            p *= self.acceptance(bucket, i);
            expected += p;
        }
        expected / self.round_cost_with(k, token_ms, setup_ms, fed)
    }

    fn round_cost(&self, k: usize, token_ms: f64, setup_ms: f64) -> f64 {
        self.round_cost_with(k, token_ms, setup_ms, false)
    }

    fn round_cost_with(&self, k: usize, token_ms: f64, setup_ms: f64, fed: bool) -> f64 {
        let setup = if k > 0 { setup_ms } else { 0.0 };
        let feed = if fed { self.feed(k + 1) } else { 0.0 };
        // What was measured beside the curve (a draft model's steps, the feed) moves with it.
        let drift = self.drift().unwrap_or(1.0);
        (setup + k as f64 * token_ms + feed) * drift + self.verify(k + 1)
    }

    /// What a target pass of `b` tokens costs: the measured curve's value, corrected by this run's
    /// own passes of that size as they come ([`CURVE_WEIGHT`] passes weigh as much as the curve).
    /// The curve is measured once and kept for a week, on a machine whose speed drifts (measured
    /// here: one cached curve had a single step 7 % faster and two-token passes 6 % slower than
    /// this run saw, which makes every short draft look worse than it is); a run makes hundreds of
    /// single steps and, where it drafts, dozens of each length it drafts.
    pub fn verify(&self, b: usize) -> f64 {
        let curve = self.costs.verify(b);
        let Some(drift) = self.drift() else { return curve };
        match self.passes.get(b.wrapping_sub(1)) {
            Some(&(n, ms)) if n > 0.0 => (ms + CURVE_WEIGHT * curve * drift) / (n + CURVE_WEIGHT),
            _ => curve * drift,
        }
    }

    /// How much slower (> 1) or faster than the curve this run's passes have been, over every
    /// size it has seen (weighted by passes); `None` before the first. Every size the run has not
    /// seen moves by it, and so do the draft model's step and the feed (a machine that is slower
    /// all over changes no decision: they compare costs with each other); a size it has seen
    /// moves from it towards what its own passes took.
    fn drift(&self) -> Option<f64> {
        let (n, sum) = self.seen;
        (n > 0.0).then(|| sum / n)
    }

    /// The costs as this run has corrected them (every size of the curve, see
    /// [`Scheduler::verify`]; the draft model's step moved by the drift), once it has made
    /// [`LEARNED_AFTER`] passes.
    pub fn learned(&self) -> Option<Costs> {
        if self.seen.0 < LEARNED_AFTER {
            return None;
        }
        let verify_ms: Vec<f64> = (1..=self.costs.verify_ms.len()).map(|b| self.verify(b)).collect();
        let draft_token_ms = self.costs.draft_token_ms * self.drift().unwrap_or(1.0);
        let c = if verify_ms[0] > 0.0 { draft_token_ms / verify_ms[0] } else { 0.0 };
        Some(Costs { verify_ms, draft_token_ms, c })
    }

    /// Learns what a target pass of `b` tokens took in this run. A pass slowed by something else
    /// (the system, another program) counts at most twice the curve's value (and one sped up by
    /// nothing real, at least half).
    pub fn observe_pass(&mut self, b: usize, ms: f64) {
        if b == 0 || b > self.costs.verify_ms.len() || !ms.is_finite() {
            return;
        }
        let curve = self.costs.verify(b);
        if self.passes.len() < b {
            self.passes.resize(b, (0.0, 0.0));
        }
        let ms = ms.clamp(0.5 * curve, 2.0 * curve);
        let p = &mut self.passes[b - 1];
        p.0 += 1.0;
        p.1 += ms;
        if curve > 0.0 {
            self.seen.0 += 1.0;
            self.seen.1 += ms / curve;
        }
    }

    /// The longest draft the measured verify curve covers, and whose pass costs at most
    /// [`WORST_ROUND`] single steps more than one step, plus [`STREAK_SHARE`] of what the wholly
    /// accepted rounds since the last rejection gained: a draft rejected at its first token then
    /// loses at most a few steps and a quarter of the copy's gain. Where a long pass costs little
    /// more than one token (a GPU), drafts reach as far as the curve; on a CPU, where each verified
    /// token costs half a step or more, a copy that breaks off early (the next function's
    /// signature, rewritten) cannot cost more than a few steps, and one that keeps being right
    /// (an answer asked for again) earns longer drafts as it goes.
    fn longest(&self, max: usize) -> usize {
        let one = self.verify(1);
        let allowed = WORST_ROUND * one + STREAK_SHARE * self.streak_ms;
        let mut k = max.min(self.costs.verify_ms.len().saturating_sub(1));
        while k > 1 && self.verify(k + 1) - one > allowed {
            k -= 1;
        }
        k
    }

    /// The longest draft `c` may take this round: a reprise's reaches the curve's end (see
    /// [`REPRISE`]), any other's [`Scheduler::longest`].
    fn reach(&self, c: &Candidate) -> usize {
        match c.bucket.1 == REPRISE {
            true => c.max.min(self.costs.verify_ms.len().saturating_sub(1)),
            false => self.longest(c.max),
        }
    }

    /// The draft length (≤ `max`) at which a draft that is always right pays best, if any length
    /// beats not drafting (the tests compare it with what exploration tries).
    #[cfg(test)]
    fn best_if_perfect(&self, max: usize, token_ms: f64, setup_ms: f64) -> Option<usize> {
        let base = 1.0 / self.round_cost(0, 0.0, 0.0);
        let rate = |k: usize| (k + 1) as f64 / self.round_cost(k, token_ms, setup_ms);
        (1..=self.longest(max)).filter(|&k| rate(k) > base).max_by(|&a, &b| rate(a).total_cmp(&rate(b)))
    }

    /// The shortest draft length (≤ `max`) at which a draft that is always right beats not
    /// drafting by the margin drafting must promise: what an exploration round tries.
    pub fn shortest_paying(&self, max: usize, token_ms: f64, setup_ms: f64) -> Option<usize> {
        let base = MARGIN / self.round_cost(0, 0.0, 0.0);
        (1..=self.longest(max)).find(|&k| (k + 1) as f64 / self.round_cost(k, token_ms, setup_ms) > base)
    }

    /// Which candidate drafts this round and how many tokens: the (candidate, length) with the
    /// most expected tokens per millisecond, or `None` when not drafting is best. After a while
    /// without drafting, one short draft is tried (the first candidate that could pay), so a
    /// change in the text is noticed.
    pub fn decide(&mut self, candidates: &[Candidate]) -> Option<(usize, usize)> {
        for c in candidates.iter().filter(|c| c.observed) {
            self.observed.insert(c.bucket.0);
        }
        // While a fed drafter is on offer the context feeds it, whoever drafts.
        let fed = candidates.iter().any(|c| c.fed);
        let mut best: Option<(usize, usize)> = None;
        let mut best_rate = MARGIN * self.rate_with((0, 0), 0, 0.0, 0.0, fed);
        for (i, c) in candidates.iter().enumerate() {
            for k in 1..=self.reach(c) {
                let r = self.rate_with(c.bucket, k, c.token_ms, c.setup_ms, fed);
                if r > best_rate {
                    best = Some((i, k));
                    best_rate = r;
                }
            }
        }
        self.exploring = false;
        if best.is_none() && candidates.iter().any(|c| c.max > 0 && !c.observed) {
            self.idle_rounds += 1;
            if self.idle_rounds >= self.explore_every {
                let probe = candidates
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| !c.observed)
                    .find_map(|(i, c)| self.shortest_paying(c.max, c.token_ms, c.setup_ms).map(|k| (i, k)));
                if let Some(probe) = probe {
                    self.idle_rounds = 0;
                    self.exploring = true;
                    best = Some(probe);
                }
            }
        } else if best.is_some() {
            self.idle_rounds = 0;
        }
        let k = best.map_or(0, |(_, k)| k);
        if self.chosen.len() <= k {
            self.chosen.resize(k + 1, 0);
        }
        self.chosen[k] += 1;
        best
    }

    /// Records a verified round: `drafted` proposed, the first `accepted` accepted.
    pub fn record(&mut self, bucket: Bucket, drafted: usize, accepted: usize) {
        self.record_round(drafted, accepted);
        self.observe(bucket, drafted, accepted);
    }

    /// After every drafted round: a wholly accepted one adds what it gained over the target alone
    /// to the streak (see [`Scheduler::longest`]), a rejection ends it; after an exploration round,
    /// a probe that was wholly right makes the next one come sooner, one that failed makes it wait
    /// twice as long.
    pub fn record_round(&mut self, drafted: usize, accepted: usize) {
        self.streak_ms = if drafted > 0 && accepted == drafted {
            (self.streak_ms + (drafted + 1) as f64 * self.verify(1) - self.verify(drafted + 1)).max(0.0)
        } else {
            0.0
        };
        if self.exploring {
            self.explore_every =
                if accepted == drafted { EXPLORE_EVERY } else { (self.explore_every * 2).min(EXPLORE_MAX) };
        }
    }

    /// Learns from a proposal of `proposed` tokens of which the first `accepted` were (or would have
    /// been) accepted: drafted or not, it says how far this bucket's proposals can be trusted.
    pub fn observe(&mut self, bucket: Bucket, proposed: usize, accepted: usize) {
        self.observe_positions(bucket, 0, accepted.min(proposed), accepted < proposed);
    }

    /// Learns part of a proposal as the output reveals it: positions `from..to` were right, and
    /// when `rejected`, position `to` was wrong (a proposal is learned from token by token, so the
    /// schedule need not wait for its end).
    pub fn observe_positions(&mut self, bucket: Bucket, from: usize, to: usize, rejected: bool) {
        let end = to + usize::from(rejected);
        let s = self.stats.entry(bucket).or_default();
        if s.reached.len() < end {
            s.reached.resize(end, 0);
            s.accepted.resize(end, 0);
        }
        for i in from..end {
            s.reached[i] += 1;
            if i < to {
                s.accepted[i] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
