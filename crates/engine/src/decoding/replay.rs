//! Replays a greedy run without a model: a [`Target`] that answers with a known output, so a
//! strategy's drafters and the adaptive schedule make exactly the decisions they would make on
//! the real model (greedy verification only looks at the target's choices), in microseconds
//! rather than minutes. Each round is then charged what the measured [`Costs`] say it costs,
//! which gives the strategy's speedup on this output as the cost model sees it.
//!
//! Used by the tests that hold a drafter to what it reached on a real model's recorded output
//! (`tests/replay.rs`; behind the `testing` feature, out of shipped builds).

use crate::decoding::costs::Costs;
use crate::decoding::draft::Drafter;
use crate::decoding::generate::{generate, RunInfo};
use crate::decoding::llama::Logits;
use crate::decoding::options::{ModelId, Token};
use crate::decoding::report::Report;
use crate::decoding::schedule::Scheduler;
use crate::decoding::settings::{Mode, ValidSettings};
use crate::decoding::target::Target;
use crate::error::{Error, Result};
use crate::job::Job;

/// A target whose greedy choice after `prompt ++ output[..i]` is `output[i]` (and the end of the
/// answer after the whole output). Its KV cache is a list kept in step with the loop.
struct ReplayTarget {
    /// The prompt, then the output.
    script: Vec<Token>,
    cache: Vec<Token>,
    rows: Vec<Vec<f32>>,
    vocab: usize,
    eog: Token,
    n_ctx: usize,
    /// What the real target's passes cost (each verify pass is charged this).
    costs: Costs,
}

impl ReplayTarget {
    fn new(prompt: &[Token], output: &[Token], n_ctx: usize, costs: Costs) -> Result<Self> {
        let script: Vec<Token> = prompt.iter().chain(output).copied().collect();
        if script.iter().any(|&t| t < 0) {
            return Err(Error::InvalidPrompt("a replayed token id is negative".into()));
        }
        let eog = script.iter().copied().max().unwrap_or(0) + 1;
        Ok(ReplayTarget { script, cache: Vec::new(), rows: Vec::new(), vocab: eog as usize + 2, eog, n_ctx, costs })
    }

    /// The target's choice after the cached tokens: the script's next token while the cache follows
    /// the script, anything else once it has strayed (verification never reads past a mismatch).
    fn choice(&self) -> Token {
        let n = self.cache.len();
        if self.script.len() > n && self.script[..n] == self.cache[..] {
            self.script[n]
        } else if self.script.len() <= n && self.script[..] == self.cache[..self.script.len()] {
            self.eog
        } else {
            self.eog + 1
        }
    }
}

impl Target for ReplayTarget {
    fn decode(&mut self, tokens: &[Token], start: u32, logits: Logits) -> Result<()> {
        if start as usize != self.cache.len() || self.cache.len() + tokens.len() > self.n_ctx {
            return Err(Error::Decode { reason: format!("replay: at {start} with {} cached", self.cache.len()) });
        }
        self.rows.clear();
        for (i, &t) in tokens.iter().enumerate() {
            self.cache.push(t);
            let want = match logits {
                Logits::None => false,
                Logits::Last => i + 1 == tokens.len(),
                Logits::All => true,
            };
            if want {
                let mut row = vec![0.0; self.vocab];
                row[self.choice() as usize] = 10.0;
                self.rows.push(row);
            }
        }
        Ok(())
    }

    fn logits(&self, i: usize) -> &[f32] {
        &self.rows[i]
    }

    fn last_index(&self) -> usize {
        self.rows.len() - 1
    }

    fn truncate(&mut self, pos: u32) -> Result<()> {
        self.cache.truncate(pos as usize);
        Ok(())
    }

    fn n_ctx(&self) -> usize {
        self.n_ctx
    }

    fn is_eog(&self, token: Token) -> bool {
        token == self.eog
    }

    fn piece(&self, _token: Token) -> Vec<u8> {
        Vec::new()
    }

    fn pass_ms(&self, batch: usize, _measured: f64) -> f64 {
        self.costs.verify(batch)
    }
}

/// A replayed run: what the loop did, and what its rounds cost by the measured costs.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub report: Report,
    /// The rounds charged by [`Costs::run_ms`], in ms.
    pub time_ms: f64,
    /// The target alone on the same output: one V(1) per token after the first.
    pub baseline_ms: f64,
}

impl Replayed {
    /// Baseline time ÷ replayed time.
    pub fn speedup(&self) -> f64 {
        if self.time_ms > 0.0 {
            self.baseline_ms / self.time_ms
        } else {
            1.0
        }
    }
}

/// Replays `output` (a greedy run's tokens after `prompt`) with `drafters` (n-gram drafters: a
/// model drafter would read its own model, not the script) under `settings` (greedy; their
/// `n_predict` is raised to cover the output), charging each round by `costs`. With `adaptive`
/// settings the real schedule decides, fed with the same costs.
pub fn replay(
    prompt: &[Token],
    output: &[Token],
    drafters: &mut [Box<dyn Drafter + '_>],
    settings: &ValidSettings,
    costs: &Costs,
) -> Result<Replayed> {
    replay_judged(prompt, output, drafters, settings, costs, costs)
}

/// The same, with the schedule deciding by `judged` (what it believes the steps cost: a cached
/// measurement, say) while each round is charged by `costs` (what they cost).
pub fn replay_judged(
    prompt: &[Token],
    output: &[Token],
    drafters: &mut [Box<dyn Drafter + '_>],
    settings: &ValidSettings,
    costs: &Costs,
    judged: &Costs,
) -> Result<Replayed> {
    if !settings.sampling.is_greedy() {
        return Err(Error::InvalidSettings("a replay follows a greedy run: set the temperature to 0".into()));
    }
    if output.is_empty() || costs.verify_ms.is_empty() {
        return Err(Error::InvalidPrompt("nothing to replay".into()));
    }
    let mut s = (**settings).clone();
    s.n_predict = output.len();
    s.n_ctx = s.n_ctx.max((prompt.len() + output.len() + s.longest_draft() + 2) as u32);
    let settings = s.validate(Mode::Speculative)?;
    let mut target = ReplayTarget::new(prompt, output, settings.n_ctx as usize, costs.clone())?;
    let scheduler = settings.adaptive.then(|| Scheduler::new(judged.clone()));
    let info = RunInfo { mode: Mode::Speculative, target: replay_id(), draft: None, notes: Vec::new(), runtime: None };
    let report =
        generate(&mut target, drafters, scheduler, prompt, &settings, info, &mut Job::uncancelled(&mut |_| {}))?;
    let time_ms = costs.run_ms(report.rounds.iter().map(|r| r.drafted), 0);
    // The target alone makes the same passes: one per token after the first, and one more that
    // finds the end of the answer when the run ended there.
    let ended = usize::from(report.stop_reason == crate::decoding::report::StopReason::EndOfGeneration);
    let baseline_ms = (report.generated_tokens.saturating_sub(1) + ended) as f64 * costs.verify(1);
    Ok(Replayed { report, time_ms, baseline_ms })
}

fn replay_id() -> ModelId {
    ModelId {
        path: "replay".into(),
        name: "replay".into(),
        architecture: String::new(),
        quantization: String::new(),
        n_params: 0,
        file_size: 0,
        mtime: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoding::draft::prompt_lookup::PromptLookup;
    use crate::decoding::settings::Settings;

    fn settings(adaptive: bool, n_draft: usize) -> ValidSettings {
        Settings { adaptive, n_draft, sampling: Default::default(), ..Settings::default() }
            .validate(Mode::Speculative)
            .unwrap()
    }

    #[test]
    fn a_replay_reproduces_the_output_and_charges_each_round() {
        // The output copies the prompt's "1 2 3 4 5 6" after writing 9.
        let prompt = [1, 2, 3, 4, 5, 6, 7];
        let output = [9, 1, 2, 3, 4, 5, 6, 8];
        let flat = Costs { verify_ms: vec![10.0; 5], draft_token_ms: 0.0, c: 0.0 };
        let mut d: Vec<Box<dyn Drafter>> = vec![Box::new(PromptLookup::new(1, 2).unwrap())];
        let r = replay(&prompt, &output, &mut d, &settings(false, 4), &flat).unwrap();
        assert_eq!(r.report.tokens, output, "the replay writes exactly the script");
        // Round 1: nothing to look up after 9. Round 2: after "9 1" the prompt's "1" continues
        // "2 3 4 5", all right, and the target adds 6. Round 3: one token left, nothing to draft.
        assert_eq!((r.report.accepted, r.report.target_passes), (4, 3));
        assert_eq!(r.baseline_ms, 70.0);
        assert_eq!(r.time_ms, 30.0);
        assert!((r.speedup() - 70.0 / 30.0).abs() < 1e-9);
    }
}
