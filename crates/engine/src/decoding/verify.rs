//! Acceptance rules, as pure functions over token ids and logit rows (no model needed).

/// The greedy rule: the draft is accepted up to its first token that differs from the target's
/// own choice at that position; the target's choice at the first mismatch (or after the last
/// draft token when all matched) is always kept. So each target pass yields 1 + `accepted` tokens,
/// exactly the tokens the target alone would have produced greedily.
///
/// `target_choices[i]` is the target's argmax after `[last, draft[..i]]`; it has `draft.len() + 1`
/// entries.
pub fn accepted_prefix_len(draft: &[i32], target_choices: &[i32]) -> usize {
    debug_assert_eq!(target_choices.len(), draft.len() + 1);
    draft.iter().zip(target_choices).take_while(|(d, t)| d == t).count()
}

/// The tokens one greedy round produces: the accepted draft prefix and the target's next token.
pub fn greedy_round(draft: &[i32], target_choices: &[i32]) -> (usize, Vec<i32>) {
    let m = accepted_prefix_len(draft, target_choices);
    let mut out = draft[..m].to_vec();
    out.push(target_choices[m]);
    (m, out)
}

/// The most likely token of a logit row and its margin over the runner-up (in logits). A small
/// margin is a near-tie: numerical noise can flip the choice.
pub fn argmax_with_margin(logits: &[f32]) -> (i32, f32) {
    let (mut best, mut best_v, mut second_v) = (0usize, f32::NEG_INFINITY, f32::NEG_INFINITY);
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            second_v = best_v;
            best_v = v;
            best = i;
        } else if v > second_v {
            second_v = v;
        }
    }
    (best as i32, best_v - second_v)
}

/// The probability of the most likely token (softmax of the row at its maximum), for `p_min`.
pub fn top_probability(logits: &[f32]) -> (i32, f32) {
    let (best, _) = argmax_with_margin(logits);
    let max = logits[best as usize];
    let sum: f32 = logits.iter().map(|&v| (v - max).exp()).sum();
    (best, 1.0 / sum)
}

/// `token`'s log probability in a logit row (log-softmax), its bytes, and the row's `top`
/// likeliest tokens with theirs, best first. One pass over the row, plus a sort of `top`.
pub fn token_logprob(
    row: &[f32],
    token: i32,
    top: usize,
    piece: impl Fn(i32) -> Vec<u8>,
) -> draftlab_core::decoding::event::TokenLogprob {
    use draftlab_core::decoding::event::{TokenLogprob, TopLogprob};
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = row.iter().map(|&v| f64::from(v - max).exp()).sum();
    let lse = f64::from(max) + sum.ln();
    let lp = |v: f32| (f64::from(v) - lse) as f32;
    // The `top` best (index, logit), kept sorted best first.
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(top + 1);
    if top > 0 {
        for (i, &v) in row.iter().enumerate() {
            if best.len() < top || v > best[best.len() - 1].1 {
                let at = best.partition_point(|&(_, b)| b >= v);
                best.insert(at, (i, v));
                best.truncate(top);
            }
        }
    }
    TokenLogprob {
        logprob: row.get(token as usize).map_or(f32::NEG_INFINITY, |&v| lp(v)),
        bytes: piece(token),
        top: best
            .into_iter()
            .map(|(i, v)| TopLogprob { token: i as i32, logprob: lp(v), bytes: piece(i as i32) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_s_logprob_is_its_log_softmax_and_the_top_come_best_first() {
        let row = [1.0f32, 3.0, 2.0, 3.0, -1.0];
        let lp = token_logprob(&row, 2, 3, |t| vec![b'a' + t as u8]);
        let z: f64 = row.iter().map(|&v| f64::from(v).exp()).sum();
        assert!((f64::from(lp.logprob) - (2.0 - z.ln())).abs() < 1e-5, "{lp:?}");
        assert_eq!(lp.bytes, b"c");
        let top: Vec<i32> = lp.top.iter().map(|t| t.token).collect();
        assert_eq!(top[2], 2);
        assert!(top[..2].contains(&1) && top[..2].contains(&3), "{top:?}");
        assert!(lp.top.windows(2).all(|w| w[0].logprob >= w[1].logprob));
        let probs: f64 = (0..5).map(|t| f64::from(token_logprob(&row, t, 0, |_| vec![]).logprob).exp()).sum();
        assert!((probs - 1.0).abs() < 1e-5, "{probs}");
        assert!(token_logprob(&row, 0, 0, |_| vec![]).top.is_empty());
    }

    #[test]
    fn accepts_the_matching_prefix_and_the_correction() {
        assert_eq!(greedy_round(&[5, 6, 7], &[5, 6, 9, 1]), (2, vec![5, 6, 9]));
        assert_eq!(greedy_round(&[5, 6, 7], &[4, 6, 7, 1]), (0, vec![4]));
        // All accepted: the bonus token from the last position comes too.
        assert_eq!(greedy_round(&[5, 6, 7], &[5, 6, 7, 8]), (3, vec![5, 6, 7, 8]));
        // No draft: the plain target step.
        assert_eq!(greedy_round(&[], &[3]), (0, vec![3]));
        // A later match after a mismatch does not count.
        assert_eq!(accepted_prefix_len(&[1, 2, 3], &[0, 2, 3, 4]), 0);
    }

    #[test]
    fn margin_and_top_probability() {
        let (i, m) = argmax_with_margin(&[0.0, 3.0, 2.5, -1.0]);
        assert_eq!(i, 1);
        assert!((m - 0.5).abs() < 1e-6);
        let (i, p) = top_probability(&[0.0, 0.0, 0.0, 0.0]);
        assert_eq!(i, 0);
        assert!((p - 0.25).abs() < 1e-6);
        let (_, p) = top_probability(&[10.0, 0.0]);
        assert!(p > 0.999);
        // The first of equal maxima wins, with zero margin.
        assert_eq!(argmax_with_margin(&[1.0, 1.0]), (0, 0.0));
    }
}
