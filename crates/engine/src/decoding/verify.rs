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

#[cfg(test)]
mod tests {
    use super::*;

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
