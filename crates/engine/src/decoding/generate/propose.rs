//! A round's proposal: which drafter drafts, and how far.

use super::*;

/// The longest draft a round may take from each kind of drafter.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reach {
    /// From a model (a draft model, MTP layers, a head).
    pub(super) model: usize,
    /// From an n-gram drafter (free to draft: see `Settings::ngram_draft`).
    pub(super) ngram: usize,
}

/// This round's proposal, its statistics bucket and why. Without a schedule, the first drafter
/// with a proposal drafts the fixed length. With one, the cheap (n-gram) drafters propose first and
/// the schedule picks among them and the model drafters by expected tokens per millisecond, or
/// drafts nothing. With `shadows`, the cheap drafters' whole proposals go there to be scored later
/// (and the schedule, knowing it will learn from them, never probes them).
pub(super) fn propose(
    target: &mut dyn Target,
    drafters: &mut [Box<dyn Drafter + '_>],
    scheduler: Option<&mut Scheduler>,
    context: &[Token],
    reach: Reach,
    shadows: Option<&mut Vec<(Bucket, Vec<Token>)>>,
    mut grammar: Option<&mut Grammar>,
) -> Result<(Proposal, Bucket, Decision)> {
    let nothing = |why| Ok((Proposal::default(), (0, 0), why));
    if drafters.is_empty() || reach.model.max(reach.ngram) == 0 {
        return nothing(Decision::NothingOffered);
    }
    let Some(s) = scheduler else {
        return first_offer(target, drafters, context, reach, grammar);
    };
    let (mut offers, mut candidates) = offers(target, drafters, s, context, reach, shadows, grammar.as_deref_mut())?;
    if candidates.iter().any(|c| c.fed) && !s.feeding_pays(&candidates) {
        // It costs more than it saves: the context stops feeding it, for the rest of the run.
        target.set_feeding(false);
        for c in candidates.iter_mut().filter(|c| c.fed) {
            c.max = 0;
            c.fed = false;
        }
    }
    let Some((i, k)) = s.decide(&candidates) else {
        let offered = candidates.iter().any(|c| c.max > 0);
        return nothing(if offered { Decision::NotWorth } else { Decision::NothingOffered });
    };
    let decision = if s.explored() { Decision::Explored } else { Decision::Chosen };
    let p = match offers[i].take() {
        Some(mut p) => {
            p.tokens.truncate(k);
            p.dists.truncate(k);
            p
        }
        None => {
            let mut p = drafters[i].propose_on(target, context, k)?;
            cut(grammar, &mut p);
            p
        }
    };
    Ok((p, candidates[i].bucket, decision))
}

impl Reach {
    /// The longest draft `d` may take.
    fn of(self, d: &dyn Drafter) -> usize {
        if d.is_cheap() {
            self.ngram
        } else {
            self.model
        }
    }
}

/// A draft stops at its first token the output's grammar forbids: the target would reject it.
fn cut(grammar: Option<&mut Grammar>, p: &mut Proposal) {
    if let Some(g) = grammar {
        let n = g.valid_prefix(&p.tokens);
        p.tokens.truncate(n);
        p.dists.truncate(n);
    }
}

/// Without a schedule: the first drafter with a proposal drafts the fixed length.
fn first_offer(
    target: &mut dyn Target,
    drafters: &mut [Box<dyn Drafter + '_>],
    context: &[Token],
    reach: Reach,
    mut grammar: Option<&mut Grammar>,
) -> Result<(Proposal, Bucket, Decision)> {
    for (i, d) in drafters.iter_mut().enumerate() {
        let max = reach.of(&**d);
        if max == 0 {
            continue;
        }
        let mut p = d.propose_on(target, context, max)?;
        cut(grammar.as_deref_mut(), &mut p);
        if !p.tokens.is_empty() {
            let bucket = (i, p.match_len);
            return Ok((p, bucket, Decision::Fixed));
        }
    }
    Ok((Proposal::default(), (0, 0), Decision::NothingOffered))
}

/// What each drafter offers the schedule: a cheap drafter's whole proposal (also to `shadows`,
/// to be scored later), a model drafter's cost per token (it drafts only once chosen).
fn offers(
    target: &mut dyn Target,
    drafters: &mut [Box<dyn Drafter + '_>],
    s: &Scheduler,
    context: &[Token],
    reach: Reach,
    mut shadows: Option<&mut Vec<(Bucket, Vec<Token>)>>,
    mut grammar: Option<&mut Grammar>,
) -> Result<(Vec<Option<Proposal>>, Vec<Candidate>)> {
    let mut offers: Vec<Option<Proposal>> = Vec::with_capacity(drafters.len());
    let mut candidates = Vec::with_capacity(drafters.len());
    for (i, d) in drafters.iter_mut().enumerate() {
        let max = reach.of(&**d);
        if d.is_cheap() {
            let mut p = match max {
                0 => Proposal::default(),
                _ => d.propose_on(target, context, max)?,
            };
            cut(grammar.as_deref_mut(), &mut p);
            let bucket = (i, p.match_len);
            let observed = shadows.is_some();
            if let Some(sh) = shadows.as_deref_mut() {
                if !p.tokens.is_empty() {
                    sh.push((bucket, p.tokens.clone()));
                }
            }
            candidates.push(Candidate {
                bucket,
                max: p.tokens.len(),
                token_ms: 0.0,
                setup_ms: 0.0,
                observed,
                fed: false,
            });
            offers.push(Some(p));
        } else {
            // A drafter in the target's context drafts only while the context feeds it.
            let in_target = d.strategy().drafts_in_target();
            let max = if in_target && !target.feeding() { 0 } else { max };
            candidates.push(model_candidate(s, &**d, i, context, max, in_target && max > 0));
            offers.push(None);
        }
    }
    Ok((offers, candidates))
}

/// A model drafter as a candidate of the schedule: it costs time per drafted token, and first
/// the tokens it missed while other drafters ran (its first drafted token comes with them).
pub(super) fn model_candidate(
    s: &Scheduler,
    d: &dyn Drafter,
    i: usize,
    context: &[Token],
    max: usize,
    fed: bool,
) -> Candidate {
    let costs = s.costs();
    let extra = d.round_cost();
    let token_ms = costs.draft_token_ms * extra.steps_per_token;
    let setup_ms = (costs.catch_up_ms(d.catch_up_tokens(context)) - costs.draft_token_ms).max(0.0)
        + extra.extra_steps * costs.draft_token_ms
        + extra.overhead_ms;
    Candidate { bucket: (i, 0), max, token_ms, setup_ms, observed: false, fed }
}
