use super::*;

/// The draft length the schedule picks for a single drafter.
fn choose(s: &mut Scheduler, bucket: Bucket, max: usize, token_ms: f64) -> usize {
    s.decide(&[Candidate { bucket, max, token_ms, setup_ms: 0.0, observed: false, fed: false }]).map_or(0, |(_, k)| k)
}

fn costs(verify_ms: Vec<f64>, draft_token_ms: f64) -> Costs {
    Costs { c: draft_token_ms / verify_ms[0], verify_ms, draft_token_ms }
}

/// A copy that has always been right still cannot make one round lose more than
/// [`WORST_ROUND`] steps: on a CPU-like curve (each token half a step more) a sure n-gram
/// draft of 32 is cut to what 5 steps verify; on a flat curve (a GPU) it is drafted whole.
#[test]
fn one_round_cannot_lose_more_than_a_few_steps() {
    let cpu: Vec<f64> = (0..33).map(|b| 44.0 + 25.0 * b as f64).collect();
    let gpu: Vec<f64> = (0..33).map(|b| 20.0 + 0.5 * b as f64).collect();
    for (curve, longest) in [(cpu, 7), (gpu, 32)] {
        let mut s = Scheduler::new(costs(curve, 0.0));
        // Proposals seen right, not drafted: no streak of drafted rounds behind them.
        for _ in 0..50 {
            s.observe((0, 32), 32, 32);
        }
        assert_eq!(s.longest(32), longest);
        assert_eq!(choose(&mut s, (0, 32), 32, 0.0), longest);
    }
}

#[test]
fn a_copy_that_keeps_being_right_earns_longer_drafts() {
    // Each token a pass verifies costs 25 ms more, one step 44: at first 7 tokens (4 steps'
    // loss at worst); a wholly accepted round of 7 gains 8 × 44 − 219 = 133 ms, a quarter of
    // which the next round may risk, and so on up to the curve's end.
    let cpu: Vec<f64> = (0..33).map(|b| 44.0 + 25.0 * b as f64).collect();
    let mut s = Scheduler::new(costs(cpu, 0.0));
    let mut reach = vec![s.longest(32)];
    for _ in 0..12 {
        let k = s.longest(32);
        s.record((0, 32), k, k);
        reach.push(s.longest(32));
    }
    assert_eq!(reach[..3], [7, 8, 9]);
    assert!(reach.windows(2).all(|w| w[1] >= w[0]), "{reach:?}");
    assert_eq!(reach.last(), Some(&32), "{reach:?}");
    // A rejection ends the streak: back to a few steps' loss.
    s.record((0, 32), 32, 5);
    assert_eq!(s.longest(32), 7);
}

/// An answer the slot gave the same prompt before is drafted long from its first round: on a
/// flat curve (a GPU) at the curve's end, on a CPU-like one (each token half a step more) far
/// past the few steps a fresh copy may risk, where an n-gram proposal seen for the first time
/// is not drafted at all. Once it was wrong somewhere, it has learned so.
#[test]
fn a_reprise_is_drafted_long_at_once() {
    let cpu: Vec<f64> = (0..33).map(|b| 44.0 + 25.0 * b as f64).collect();
    let gpu: Vec<f64> = (0..33).map(|b| 20.0 + 0.5 * b as f64).collect();
    let candidate = |bucket| Candidate { bucket, max: 32, token_ms: 0.0, setup_ms: 0.0, observed: true, fed: false };
    let mut s = Scheduler::new(costs(gpu, 0.0));
    assert_eq!(s.decide(&[candidate((0, 12)), candidate((0, REPRISE))]), Some((1, 32)));
    let mut s = Scheduler::new(costs(cpu, 0.0));
    assert_eq!(s.decide(&[candidate((0, 12))]), None, "an observed n-gram drafter drafts on evidence only");
    let (i, k) = s.decide(&[candidate((0, 12)), candidate((0, REPRISE))]).expect("the reprise drafts");
    assert!(i == 1 && k >= 2 * s.longest(32), "{k} against a fresh copy's {}", s.longest(32));
    assert!(s.acceptance((0, REPRISE), 0) > 0.99);
    s.observe((0, REPRISE), 32, 3);
    assert!(s.acceptance((0, REPRISE), 5) < s.acceptance((1, REPRISE), 5));
}

#[test]
fn drafts_long_when_verification_is_flat_and_drafts_are_good() {
    let mut s = Scheduler::new(costs(vec![10.0; 9], 1.0));
    for _ in 0..50 {
        s.record((0, 0), 8, 8);
    }
    assert_eq!(choose(&mut s, (0, 0), 8, 1.0), 8);
}

#[test]
fn stops_drafting_when_verification_is_expensive_and_drafts_fail() {
    // A CPU-like curve: 2 tokens cost 1.9× one.
    let cpu = costs(vec![33.0, 62.0, 76.0, 99.0, 116.0, 133.0, 152.0, 227.0, 249.0], 0.0);
    let mut s = Scheduler::new(cpu);
    for _ in 0..30 {
        s.record((0, 1), 4, 0);
    }
    let mut picks = Vec::new();
    for _ in 0..64 {
        let k = choose(&mut s, (0, 1), 8, 0.0);
        if k > 0 {
            s.record((0, 1), k, 0);
        }
        picks.push(k);
    }
    // Explores after 16 idle rounds, then (having failed) waits 32.
    let explored: Vec<usize> = (0..64).filter(|&i| picks[i] > 0).collect();
    assert_eq!(explored, vec![15, 47], "{picks:?}");
    // A probe drafts the shortest length a right draft would pay at (2 tokens in 62 ms against
    // 33 each): when it is wrong, as here, it costs the least.
    assert_eq!(picks[15], 1);
    assert_eq!(s.best_if_perfect(8, 0.0, 0.0), Some(6), "where a right draft pays best: 7 tokens in 152 ms");
    // Long matches that are always right are still worth it on the same machine.
    for _ in 0..50 {
        s.record((0, 4), 8, 8);
    }
    assert!(choose(&mut s, (0, 4), 8, 0.0) >= 6);
}

#[test]
fn never_explores_when_even_perfect_drafts_cannot_pay() {
    // Verifying 2 costs 2.2× one: no draft length can pay, however good the draft.
    let mut s = Scheduler::new(costs(vec![10.0, 22.0, 34.0], 5.0));
    assert!(s.best_if_perfect(2, 5.0, 0.0).is_none());
    assert!((0..100).all(|_| choose(&mut s, (0, 0), 2, 5.0) == 0));
}

#[test]
fn acceptance_counts_only_reached_positions() {
    let mut s = Scheduler::new(costs(vec![10.0; 5], 0.0));
    s.record((0, 0), 4, 1); // position 0 accepted, 1 rejected, 2 and 3 never verified
    let st = &s.stats[&(0, 0)];
    assert_eq!(st.reached, vec![1, 1]);
    assert_eq!(st.accepted, vec![1, 0]);
}

#[test]
fn picks_the_candidate_with_the_best_expected_rate() {
    // Flat-ish verify curve; a free n-gram draft that is usually right, and a model draft that is
    // always right but costs 8 ms a token.
    let mut s = Scheduler::new(costs(vec![30.0, 32.0, 34.0, 36.0, 38.0], 8.0));
    for _ in 0..40 {
        s.record((0, 3), 4, 3);
        s.record((1, 0), 4, 4);
    }
    let ngram = Candidate { bucket: (0, 3), max: 4, token_ms: 0.0, setup_ms: 0.0, observed: false, fed: false };
    let model = Candidate { bucket: (1, 0), max: 4, token_ms: 8.0, setup_ms: 0.0, observed: false, fed: false };
    assert_eq!(s.decide(&[ngram, model]).map(|(i, _)| i), Some(0), "free and good beats costly and perfect");
    // No n-gram match this round: the model is the fallback.
    let none = Candidate { max: 0, ..ngram };
    assert_eq!(s.decide(&[none, model]).map(|(i, _)| i), Some(1));
    // When the model cannot pay either, nothing is drafted.
    let dear = Candidate { token_ms: 60.0, ..model };
    assert_eq!(s.decide(&[none, dear]), None);
}

#[test]
fn a_draft_model_that_must_catch_up_is_not_explored_where_catching_up_cannot_pay() {
    // This machine's measured curve (Qwen 1.5B target, 0.5B draft at 25 ms a token, 2 CPU
    // threads): a perfect draft of 1 pays (2 tokens in 25 + 86 ms against 59 ms each) — but
    // not after decoding the 130 tokens the model missed while n-gram drafts ran.
    let c = costs(vec![59.0, 86.0, 117.7, 127.4, 164.0, 189.8, 216.1, 321.0, 346.5], 25.1);
    let s = Scheduler::new(c.clone());
    assert!(s.best_if_perfect(8, 25.1, 0.0).is_some());
    let behind = c.catch_up_ms(130) - c.draft_token_ms;
    assert!(behind > 1000.0, "{behind}");
    assert!(s.best_if_perfect(8, 25.1, behind).is_none());
    // Caught up (one new token, as after every round it drafted), it costs what it did.
    assert!((c.catch_up_ms(1) - c.draft_token_ms).abs() < 1e-9);
    let mut s = Scheduler::new(c);
    let model = Candidate { bucket: (1, 0), max: 8, token_ms: 25.1, setup_ms: behind, observed: false, fed: false };
    assert!((0..64).all(|_| s.decide(&[model]).is_none()), "never explored");
}

#[test]
fn a_drafter_that_failed_is_not_tried_again_at_every_match_length() {
    // This machine's curve; lookup drafts of 3 failed at match length 1.
    let c = costs(vec![59.0, 86.0, 117.7, 127.4, 164.0, 189.8, 216.1, 321.0, 346.5], 0.0);
    let mut s = Scheduler::new(c);
    let fresh = Candidate { bucket: (1, 2), max: 3, token_ms: 0.0, setup_ms: 0.0, observed: false, fed: false };
    assert!(s.decide(&[fresh]).is_some(), "an untried drafter is tried");
    s.record((0, 1), 3, 0);
    s.record((0, 1), 3, 0);
    let same_drafter = Candidate { bucket: (0, 2), max: 3, token_ms: 0.0, setup_ms: 0.0, observed: false, fed: false };
    assert!(s.decide(&[same_drafter]).is_none(), "its match length 2 starts from what length 1 showed");
    assert!(s.decide(&[fresh]).is_some(), "another drafter keeps its own prior");
}

#[test]
fn a_bet_that_barely_pays_on_paper_is_not_taken() {
    // Two tokens for 1.03× the time of one, accepted half the time: 1.5 expected tokens for
    // 1.03 — about 1.46× on paper. The same at 1.45× the time promises 1.03×: not worth the risk.
    let mut s = Scheduler::new(costs(vec![100.0, 103.0], 0.0));
    let mut t = Scheduler::new(costs(vec![100.0, 145.0], 0.0));
    for _ in 0..200 {
        s.record((0, 0), 1, 0);
        s.record((0, 0), 1, 1);
        t.record((0, 0), 1, 0);
        t.record((0, 0), 1, 1);
    }
    let c = Candidate { bucket: (0, 0), max: 1, token_ms: 0.0, setup_ms: 0.0, observed: false, fed: false };
    assert_eq!(s.decide(&[c]), Some((0, 1)));
    assert_eq!(t.decide(&[c]), None);
}

#[test]
fn a_curve_measured_off_is_corrected_by_the_runs_own_passes() {
    // The cached curve says two tokens cost 1.95× one (measured in a bad moment); this run's
    // passes show 1.5×. A drafter right 85 % of the time does not pay by the curve (1.85
    // tokens for 1.95) and does by what the run sees (1.85 for 1.5).
    let curve = costs(vec![30.0, 58.5], 0.0);
    let mut s = Scheduler::new(curve);
    for i in 0..200 {
        s.record((0, 0), 1, usize::from(i % 20 >= 3));
    }
    let c = Candidate { bucket: (0, 0), max: 1, token_ms: 0.0, setup_ms: 0.0, observed: false, fed: false };
    assert_eq!(s.decide(&[c]), None, "by the curve");
    let mut calibrated = s.clone();
    for _ in 0..40 {
        calibrated.observe_pass(1, 30.0);
        calibrated.observe_pass(2, 45.0);
    }
    assert!((calibrated.verify(2) / calibrated.verify(1) - 1.5).abs() < 0.05);
    assert_eq!(calibrated.decide(&[c]), Some((0, 1)), "by the run's passes");
    // A run that is slower or faster all over changes no decision (costs are compared with
    // each other), and a pass slowed by something else counts at most twice the curve.
    for scale in [0.7, 1.3] {
        let mut t = s.clone();
        for _ in 0..40 {
            t.observe_pass(1, 30.0 * scale);
            t.observe_pass(2, 58.5 * scale);
        }
        assert!((t.verify(2) / t.verify(1) - 1.95).abs() < 1e-9);
        assert_eq!(t.decide(&[c]), None);
    }
    // The same with a draft model, its steps moving with the target's: right 90 % of the
    // time, 1.9 tokens for 10 + 45 ms do not beat 30 ms a token by the margin; were only the
    // target's passes twice as slow, 1.9 for 10 + 90 would beat 60.
    let model = Candidate { bucket: (1, 0), max: 1, token_ms: 10.0, setup_ms: 0.0, observed: false, fed: false };
    let mut m = Scheduler::new(costs(vec![30.0, 45.0], 10.0));
    for i in 0..200 {
        m.record((1, 0), 1, usize::from(i % 10 != 0));
    }
    let verdict = m.decide(&[model]);
    assert_eq!(verdict, None);
    for scale in [0.5, 2.0] {
        let mut t = m.clone();
        for _ in 0..40 {
            t.observe_pass(1, 30.0 * scale);
            t.observe_pass(2, 45.0 * scale);
        }
        assert_eq!(t.decide(&[model]), verdict, "at {scale}×");
        assert!((t.learned().unwrap().draft_token_ms - 10.0 * scale).abs() < 1e-9);
    }
    let mut t = s.clone();
    t.observe_pass(1, 1e6);
    assert!(t.verify(1) <= 60.0 + 1e-9);
    // Sizes past the curve and nonsense are ignored.
    t.observe_pass(0, 10.0);
    t.observe_pass(9, 10.0);
    t.observe_pass(1, f64::NAN);
    assert!(t.verify(1).is_finite());
    // What the next runs start from: every size as this run corrected it, once there is
    // enough of it.
    assert!(s.learned().is_none(), "no passes");
    let learned = calibrated.learned().unwrap();
    assert_eq!(learned.verify_ms, vec![calibrated.verify(1), calibrated.verify(2)]);
    let mut few = s.clone();
    few.observe_pass(1, 30.0);
    assert!(few.learned().is_none(), "one pass is not enough");
}
