//! Sampled runs follow the target's distribution; the target's own MTP layers draft.

use super::*;

#[test]
fn sampled_ngram_mod_drafts_follow_the_targets_distribution() {
    // A prompt long enough for ngram-mod's 24-token match: the same four words over and over, sampled
    // hot enough that the target is unsure what comes next (so a first token off the pattern
    // leaves ngram-mod nothing to match in some runs).
    let text = "one two three four ".repeat(8);
    let p = pair(SMOLLM2, None);
    second_token_distribution(&p, Strategy::NgramMod, "ngram-mod", text.trim_end(), 1.5, 4);
}

#[test]
fn adaptive_draft_model_keeps_the_output() {
    let p = pair(QWEN_TARGET, Some(QWEN_DRAFT));
    let s = Settings { adaptive: true, ..settings(32, 6) };
    let (base, _) = run(&p, Mode::Baseline, PROMPTS[0], &s);
    let (spec, _) = run(&p, Mode::Speculative, PROMPTS[0], &s);
    assert_same_or_near_tie(&base, &spec, "adaptive draft model");
    // Every round's length is within the maximum and the histogram covers every pass.
    assert_eq!(spec.draft_len_histogram.len(), 7);
    assert_eq!(spec.draft_len_histogram.iter().sum::<u64>() as usize, spec.target_passes);
}

#[test]
fn sampled_speculative_tokens_follow_the_targets_distribution() {
    // Lookup drafts (one-hot) on a repetitive prompt at a high temperature: the draft is often
    // wrong, so acceptance and the residual resampling both matter.
    second_token_distribution_is_the_targets(&pair(SMOLLM2, None), Strategy::PromptLookup, "lookup");
}

#[test]
fn sampled_drafts_across_vocabularies_follow_the_targets_distribution() {
    // Gemma 3 drafting for SmolLM2 through text: its proposals are one-hot target tokens.
    let p = pair(SMOLLM2, Some(GEMMA3));
    assert!(p.is_cross_vocabulary());
    second_token_distribution_is_the_targets(&p, Strategy::DraftModel, "cross-vocabulary draft");
}

#[test]
fn the_targets_own_mtp_layers_draft_and_keep_its_output() {
    let p = mtp_session();
    assert!(p.target().mtp, "loaded with its MTP layers");
    let (mut drafted, mut accepted) = (0, 0);
    for (i, prompt) in PROMPTS.iter().enumerate() {
        let s = Settings { strategy: Strategy::Mtp, p_min: 0.0, ..settings(64, 4) };
        let (base, _) = run(&p, Mode::Baseline, prompt, &s);
        let (spec, events) = run(&p, Mode::Speculative, prompt, &s);
        assert_eq!(spec.strategy, Some(Strategy::Mtp));
        assert_same_or_near_tie(&base, &spec, &format!("MTP, prompt {i}"));
        let from_draft = events
            .iter()
            .filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, strategy: Some(Strategy::Mtp), .. }))
            .count();
        assert_eq!(from_draft, spec.accepted, "every accepted token is announced as the MTP layers'");
        drafted += spec.drafted;
        accepted += spec.accepted;
    }
    eprintln!("MTP on the synthetic model: {accepted} of {drafted} drafted tokens accepted");
    // Both ways through verification: accepted drafts and rejected ones (then both caches roll back).
    assert!(accepted > 0 && accepted < drafted, "accepted {accepted} of {drafted}");
    // The adaptive length keeps the output too (and may decide drafting does not pay here: the
    // synthetic model's two small layers cost less than its MTP block).
    let s = Settings { strategy: Strategy::Mtp, adaptive: true, ..settings(64, 8) };
    let (base, _) = run(&p, Mode::Baseline, PROMPTS[0], &s);
    let (spec, _) = run(&p, Mode::Speculative, PROMPTS[0], &s);
    assert_same_or_near_tie(&base, &spec, "MTP, adaptive");
}

#[test]
fn a_conversation_drafts_with_mtp_layers_turn_after_turn() {
    let p = mtp_session();
    let s = Settings { strategy: Strategy::Mtp, p_min: 0.0, ..settings(24, 4) }.validate(Mode::Speculative).unwrap();
    two_turns_keep_the_targets_output(&p, &s, "MTP");
}

#[test]
fn a_hybrid_target_rolls_back_rejected_drafts() {
    // The synthetic model's first layer is recurrent (Qwen3.5's gated delta net): a rejected draft
    // must roll its state back, not only trim the attention layer's KV cache. The Qwen 0.5B draft
    // shares its tokenizer and knows nothing of its weights: most drafts are rejected.
    let s = Settings { p_min: 0.0, ..settings(48, 4) }.validate(Mode::Speculative).unwrap();
    let p = Session::load(&model(MTP_SYNTHETIC), Some(&model(QWEN_DRAFT)), s).expect("load the pair");
    assert!(!p.is_cross_vocabulary(), "the synthetic model has Qwen's vocabulary");
    let s = Settings { p_min: 0.0, ..settings(48, 4) };
    let (base, _) = run(&p, Mode::Baseline, PROMPTS[1], &s);
    let (spec, _) = run(&p, Mode::Speculative, PROMPTS[1], &s);
    assert!(spec.drafted > spec.accepted, "drafts must be rejected for the test to mean anything");
    assert_same_or_near_tie(&base, &spec, "hybrid target, draft model");
}

#[test]
fn the_mtp_strategy_needs_a_model_with_mtp_layers() {
    let s = Settings { strategy: Strategy::Mtp, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    let err = Session::load(&model(SMOLLM2), None, s).err().expect("refused");
    assert!(matches!(err, Error::InvalidSetting { setting: Setting::Strategy, .. }), "{err:?}");
    assert!(err.to_string().contains("no multi-token-prediction layers"), "{err}");
    // A session loaded without them cannot switch to `mtp` while keeping its models warm.
    let p = pair(SMOLLM2, None);
    let mtp = Settings { strategy: Strategy::Mtp, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    assert!(!p.serves(&mtp));
    // A target loaded alone serves `auto` (it drafts from the text) and not `draft`.
    let auto = Settings { strategy: Strategy::Auto, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    let draft = Settings { strategy: Strategy::DraftModel, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    assert!(p.serves(&auto) && !p.serves(&draft));
    // A speculative session on a model with MTP layers keeps them, whatever its first strategy:
    // a later run (a sweep's cell, a chat request) may draft with them.
    let lookup = Settings { strategy: Strategy::PromptLookup, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    let p = Session::load(&model(MTP_SYNTHETIC), None, lookup).unwrap();
    assert!(p.target().mtp && p.serves(&mtp));
    let (r, _) =
        run(&p, Mode::Speculative, PROMPTS[0], &Settings { strategy: Strategy::Mtp, p_min: 0.0, ..settings(8, 4) });
    assert!(r.drafted > 0, "the MTP layers drafted nothing");
}

#[test]
fn sampled_mtp_drafts_follow_the_targets_distribution() {
    second_token_distribution_is_the_targets(&mtp_session(), Strategy::Mtp, "MTP draft");
}

/// The sampled-distribution check (draftlab_engine::testing::second_token_distribution) on a
/// repetitive prompt at temperature 1, where the drafts must come in at least half the runs.
fn second_token_distribution_is_the_targets(p: &Session, strategy: Strategy, what: &str) {
    let text = "one two three four one two three four one two three four one two";
    second_token_distribution(p, strategy, what, text, 1.0, 2)
}
