//! Measuring what model steps cost on this machine: the target's verify time by batch size and the
//! draft's one-token time (the [`Costs`] themselves, their disk cache and key are in
//! `draftlab_core`, re-exported here).

use std::time::Instant;

pub use draftlab_core::decoding::costs::*;

use crate::decoding::llama::{Context, Logits, Model};

use crate::decoding::options::Token;
use crate::decoding::report::median;
use crate::decoding::settings::Settings;
use crate::decoding::verify::argmax_with_margin;
use crate::error::Result;

/// Measures the target's verify curve for batches 1..=max_batch and the draft's one-token time, in
/// the middle of the span generation will cover (attention grows with the position). Sizes are interleaved within each
/// repetition (so a load change hits all of them alike) after one warm-up pass (the first decode
/// at a new batch size rebuilds llama.cpp's graph); each value is a median.
pub fn measure_costs(
    target: &Model,
    draft: Option<&Model>,
    prompt: &[Token],
    settings: &Settings,
    max_batch: usize,
    reps: usize,
) -> Result<Costs> {
    let reps = reps.max(1);
    let (context, filler) = probe_tokens(prompt, settings, max_batch);
    let n = context.len() as u32;
    let mut tctx =
        target.context_with(settings.n_ctx, settings.n_batch, settings.threads, settings.target_context())?;
    let verify_ms = verify_curve(&mut tctx, &context, &filler[..max_batch], reps)?;
    drop(tctx);
    // Only a draft model costs time per drafted token; n-gram drafts are free.
    let draft_token_ms = match draft {
        None => 0.0,
        Some(d) => {
            let mut dctx =
                d.context_with(settings.n_ctx, settings.n_batch, settings.threads, settings.draft_context())?;
            // A step costs the same whatever the tokens; a draft with another vocabulary needs
            // ids it has.
            let in_vocab =
                |t: &[Token]| -> Vec<Token> { t.iter().map(|&x| x.rem_euclid(d.n_vocab().max(1) as Token)).collect() };
            let (context, filler) = (in_vocab(&context), in_vocab(&filler));
            dctx.decode(&context, 0, Logits::None)?;
            let mut times = Vec::with_capacity(reps);
            for rep in 0..=reps {
                let t = Instant::now();
                dctx.decode(&filler[..1], n, Logits::Last)?;
                std::hint::black_box(argmax_with_margin(dctx.logits(0)));
                let elapsed = t.elapsed().as_secs_f64() * 1e3;
                rewind(&mut dctx, &context, n)?;
                if rep > 0 {
                    times.push(elapsed);
                }
            }
            median(&times)
        }
    };
    let c = if verify_ms[0] > 0.0 { draft_token_ms / verify_ms[0] } else { 0.0 };
    Ok(Costs { verify_ms, draft_token_ms, c })
}

/// What a cost measurement decodes: a context in the middle of the span generation will cover
/// (attention grows with the position), and a filler of `max_batch` tokens to verify after it.
fn probe_tokens(prompt: &[Token], settings: &Settings, max_batch: usize) -> (Vec<Token>, Vec<Token>) {
    let mid = (prompt.len() + settings.n_predict / 2).min((settings.n_ctx as usize).saturating_sub(max_batch + 2));
    let context: Vec<Token> = prompt.iter().copied().cycle().take(mid.max(1)).collect();
    let filler: Vec<Token> = prompt.iter().copied().cycle().take(max_batch.max(2)).collect();
    (context, filler)
}

/// Every batch size up to this one is measured; past it, a few sizes are (see [`timed_sizes`]).
const DENSE: usize = 9;

/// The batch sizes a verify curve up to `max` is timed at: each one up to [`DENSE`] (the draft
/// lengths a model drafts), then half as many again each time, and `max` (the long drafts n-gram
/// drafters may make): timing every size up to 33 would take half a minute on a CPU.
fn timed_sizes(max: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = (1..=max.min(DENSE)).collect();
    let mut b = DENSE;
    while b < max {
        b = (b * 3 / 2).min(max);
        sizes.push(b);
    }
    sizes
}

/// A curve for batches 1..=`max` from times at `sizes` (ascending, starting at 1, ending at
/// `max`): the sizes between two timed ones on the straight line between them.
fn fill_curve(sizes: &[usize], times: &[f64], max: usize) -> Vec<f64> {
    let mut curve = Vec::with_capacity(max);
    for b in 1..=max {
        let hi = sizes.iter().position(|&s| s >= b).unwrap_or(sizes.len() - 1);
        let v = match hi {
            0 => times[0],
            _ if sizes[hi] == b => times[hi],
            _ => {
                let (b0, b1) = (sizes[hi - 1] as f64, sizes[hi] as f64);
                times[hi - 1] + (times[hi] - times[hi - 1]) * (b as f64 - b0) / (b1 - b0)
            }
        };
        curve.push(v);
    }
    curve
}

/// The verify curve of `ctx` after `context`: batches 1..=filler's length (timed at
/// [`timed_sizes`], interleaved within each repetition after a warm-up pass, each a median; the
/// sizes between on straight lines).
fn verify_curve(ctx: &mut Context<'_>, context: &[Token], filler: &[Token], reps: usize) -> Result<Vec<f64>> {
    let n = context.len() as u32;
    ctx.decode(context, 0, Logits::None)?;
    let sizes = timed_sizes(filler.len());
    let mut times = vec![Vec::with_capacity(reps); sizes.len()];
    for rep in 0..=reps {
        for (at, &b) in sizes.iter().enumerate() {
            let t = Instant::now();
            ctx.decode(&filler[..b], n, Logits::All)?;
            for i in 0..b {
                std::hint::black_box(argmax_with_margin(ctx.logits(i)));
            }
            let elapsed = t.elapsed().as_secs_f64() * 1e3;
            rewind(ctx, context, n)?;
            if rep > 0 {
                times[at].push(elapsed);
            }
        }
    }
    let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
    Ok(fill_curve(&sizes, &medians, filler.len()))
}

/// The target's step costs on `ctx`, a context whose decodes feed a drafter of llama.cpp's (see
/// [`Model::drafting_context`]): its verify curve, feed included, and as `draft_token_ms` what
/// one drafting call costs there (the drafter drafts as far as it goes). Measured like
/// [`measure_costs`], on a fresh context.
pub fn measure_fed(
    ctx: &mut Context<'_>,
    prompt: &[Token],
    settings: &Settings,
    max_batch: usize,
    reps: usize,
) -> Result<Costs> {
    let reps = reps.max(1);
    let (context, filler) = probe_tokens(prompt, settings, max_batch);
    let n = context.len() as u32;
    ctx.set_feeding(true);
    let verify_ms = verify_curve(ctx, &context, &filler[..max_batch], reps)?;
    let mut calls = Vec::with_capacity(reps);
    let mut seq = context.clone();
    for rep in 0..=reps {
        // One token decoded, then a draft after the next: the call a round makes.
        ctx.decode(&filler[..1], n, Logits::Last)?;
        seq.extend_from_slice(&filler[..2]);
        let t = Instant::now();
        std::hint::black_box(ctx.self_draft(&seq)?);
        let elapsed = t.elapsed().as_secs_f64() * 1e3;
        // The draft's verification (so the next call drafts afresh), then back to the context.
        ctx.decode(&filler[1..2], n + 1, Logits::Last)?;
        rewind(ctx, &context, n)?;
        seq.truncate(context.len());
        if rep > 0 {
            calls.push(elapsed);
        }
    }
    let call_ms = median(&calls);
    let c = if verify_ms[0] > 0.0 { call_ms / verify_ms[0] } else { 0.0 };
    Ok(Costs { verify_ms, draft_token_ms: call_ms, c })
}

/// Back to `context` (its `n` tokens) after a timed decode: trimmed, or decoded again where the
/// model's recurrent state cannot go back that far (untimed either way).
fn rewind(ctx: &mut Context<'_>, context: &[Token], n: u32) -> Result<()> {
    if ctx.keep(n) < n {
        ctx.decode(context, 0, Logits::None)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_curves_are_timed_at_a_few_sizes_and_filled_between() {
        assert_eq!(timed_sizes(9), (1..=9).collect::<Vec<_>>());
        assert_eq!(timed_sizes(5), vec![1, 2, 3, 4, 5]);
        assert_eq!(timed_sizes(33), vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 19, 28, 33]);
        let sizes = timed_sizes(33);
        // A straight line is kept exactly: every size, timed or not.
        let line = |b: usize| 20.0 + 5.0 * b as f64;
        let times: Vec<f64> = sizes.iter().map(|&b| line(b)).collect();
        let curve = fill_curve(&sizes, &times, 33);
        assert_eq!(curve.len(), 33);
        for (i, v) in curve.iter().enumerate() {
            assert!((v - line(i + 1)).abs() < 1e-9, "size {}: {v}", i + 1);
        }
        // Between two timed sizes, the values lie between theirs.
        let bent: Vec<f64> = sizes.iter().map(|&b| (b * b) as f64).collect();
        let curve = fill_curve(&sizes, &bent, 33);
        assert_eq!(curve[12], 169.0);
        assert!(curve[13] > 169.0 && curve[17] < 361.0 && curve[17] > curve[13]);
    }
}
