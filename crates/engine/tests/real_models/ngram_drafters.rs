//! The n-gram drafters on real models: prompt lookup, llama.cpp's ngram-mod, and the conversation
//! slots that keep what they learnt.

use super::*;

#[test]
fn prompt_lookup_drafts_from_the_prompt_and_keeps_the_output() {
    // Target alone: the lookup strategy needs no draft model.
    let p = pair(QWEN_TARGET, None);
    let prompt = PROMPTS[2];
    let s = settings(40, 4);
    let (base, _) = run(&p, Mode::Baseline, prompt, &s);
    for (strategy, adaptive) in
        [(Strategy::PromptLookup, false), (Strategy::PromptLookup, true), (Strategy::NgramCache, false)]
    {
        let s = Settings { strategy, adaptive, ..s.clone() };
        let (spec, events) = run(&p, Mode::Speculative, prompt, &s);
        if strategy == Strategy::NgramCache {
            assert_eq!(spec.strategy, Some(Strategy::NgramCache));
            assert_same_or_near_tie(&base, &spec, "ngram cache");
            continue;
        }
        assert_eq!(spec.strategy, Some(Strategy::PromptLookup));
        assert_same_or_near_tie(&base, &spec, &format!("lookup adaptive={adaptive}"));
        if !adaptive {
            // Rewriting copies the input: lookups find it, and most of what they find is right.
            assert!(spec.accepted > 5, "accepted {} of {}", spec.accepted, spec.drafted);
            let drafted_tokens = events.iter().filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, .. }));
            assert!(drafted_tokens.count() > 5);
        }
    }
}

/// A prompt whose answer copies a long stretch of it: what llama.cpp's ngram-mod (a match of 24
/// tokens) drafts from.
const COPY_PROMPT: &str = "Repeat this paragraph exactly, word for word, and nothing else:\n\n\
    The committee met on Tuesday morning to review the budget for the coming year. After a long \
    discussion about the costs of the new library, the members agreed to delay the decision until \
    the next meeting, when the architects will present their revised plans and a detailed estimate.";

#[test]
fn llama_cpps_ngram_mod_drafts_through_the_binding_and_keeps_the_output() {
    let p = pair(QWEN_TARGET, None);
    let s = Settings { strategy: Strategy::NgramMod, ..settings(72, 8) };
    let (base, _) = run(&p, Mode::Baseline, COPY_PROMPT, &s);
    let (spec, events) = run(&p, Mode::Speculative, COPY_PROMPT, &s);
    assert_same_or_near_tie(&base, &spec, "ngram-mod");
    assert_eq!(spec.strategy, Some(Strategy::NgramMod));
    // The answer copies the paragraph: after its first 24 tokens, ngram-mod's hash has them.
    assert!(spec.accepted > 10, "ngram-mod on a copied paragraph: accepted {} of {}", spec.accepted, spec.drafted);
    let named = events
        .iter()
        .filter(|e| matches!(e, Event::Token { source: TokenSource::Draft, strategy: Some(Strategy::NgramMod), .. }));
    // Every drafted token names ngram-mod (the last round may be cut at the token limit).
    let named = named.count();
    assert!(named <= spec.accepted && named + 8 >= spec.accepted, "{named} named, {} accepted", spec.accepted);
    // Adaptive: the schedule decides, the output stays the target's.
    let (adaptive, _) = run(&p, Mode::Speculative, COPY_PROMPT, &Settings { adaptive: true, ..s.clone() });
    assert_same_or_near_tie(&base, &adaptive, "ngram-mod adaptive");
}

#[test]
fn ngram_mod_drafts_in_a_conversation_turn_after_turn() {
    // Each turn copies the paragraph (from the prompt, then from the first answer too): ngram-mod
    // drafts in both, and both keep the target's output.
    let p = pair(QWEN_TARGET, None);
    let s = Settings { strategy: Strategy::NgramMod, ..settings(72, 8) }.validate(Mode::Speculative).unwrap();
    two_turns_with(&p, &s, "ngram-mod", COPY_PROMPT, "Repeat the same paragraph once more, exactly.");
}

/// What a run computed on is read back from llama.cpp (where it said each layer went while
/// loading), not computed from the settings: with no GPU here, every layer is on the CPU whatever
/// was asked; GPU layers 0 (which also turns llama.cpp's op offload off) writes what all does.
#[test]
fn the_report_says_where_llama_cpp_put_the_layers() {
    let runs: Vec<Report> = [GpuLayers::Count(0), GpuLayers::All]
        .into_iter()
        .map(|gpu_layers| {
            let s = Settings { gpu_layers, strategy: Strategy::PromptLookup, ..settings(12, 4) };
            let p = Session::load(&model(SMOLLM2), None, s.clone().validate(Mode::Speculative).unwrap()).unwrap();
            let layers = p.target().summary.n_layer.unwrap() as u32 + 1;
            assert!(p.target().placement_read, "llama.cpp's placement of the layers was not read");
            let (r, _) = run(&p, Mode::Baseline, PROMPTS[1], &s);
            let rt = r.runtime.clone().expect("a real run says what it ran on");
            let target = rt.target.clone().unwrap();
            assert_eq!(rt.backend, "CPU", "{gpu_layers:?}: {}", rt.summary());
            assert_eq!(
                (target.offloaded, target.layers, target.device.as_deref()),
                (0, layers, None),
                "{gpu_layers:?}"
            );
            assert_eq!(target.requested, gpu_layers);
            r
        })
        .collect();
    assert_eq!(runs[0].tokens, runs[1].tokens, "GPU layers 0 and all write different tokens");
}

/// The first prompt as a one-message conversation.
fn first_prompt() -> draftlab_engine::decoding::chat::ChatInput {
    use draftlab_engine::decoding::template::ChatMessage;
    let messages = vec![ChatMessage::new("user", PROMPTS[0])];
    draftlab_engine::decoding::chat::ChatInput::Messages { messages, tools: Vec::new(), render: Default::default() }
}

/// The first prompt asked twice through the server's slots (four of them), with `s`.
fn asked_twice_in_a_slot(p: &Session, s: &Settings) -> (Report, Report) {
    let valid = s.clone().validate(Mode::Speculative).unwrap();
    let input = first_prompt();
    let mut slots = draftlab_engine::decoding::chat::Slots::new(p);
    let mut ask =
        || slots.run(4, Mode::Speculative, &input, &valid, false, &mut Job::uncancelled(&mut |_| {})).unwrap();
    let first = ask();
    (first, ask())
}

/// A conversation slot keeps llama.cpp's ngram-mod from one request to the next (as llama-server
/// keeps it per slot): the same question again goes back to its slot (of the server's four, while
/// others are empty: its prompt is shorter than the half of the slot the answer makes) and is
/// drafted from the first answer, which its prompt does not hold; a run outside a conversation
/// (the CLI's, a bench's) starts from nothing.
#[test]
fn a_conversation_slot_drafts_a_repeated_request_from_its_earlier_answer() {
    let p = pair(QWEN_TARGET, None);
    let s = Settings { strategy: Strategy::NgramMod, ..settings(64, 8) };
    let (first, again) = asked_twice_in_a_slot(&p, &s);
    assert!(
        first.prompt_tokens < first.tokens.len(),
        "the answer ({} tokens) must be longer than the prompt ({}) for this test to mean something",
        first.tokens.len(),
        first.prompt_tokens
    );
    eprintln!(
        "first: {} drafted, {} passes; again: {} drafted, {} accepted, {} passes",
        first.drafted, first.target_passes, again.drafted, again.accepted, again.target_passes
    );
    assert_same_or_near_tie(&first, &again, "ngram-mod, the same request again");
    assert!(again.accepted >= 24, "the earlier answer was not drafted: {} of {}", again.accepted, again.drafted);
    assert!(
        again.target_passes * 2 <= first.target_passes,
        "{} passes, then {}",
        first.target_passes,
        again.target_passes
    );
    let tokens = p.chat_tokens(&first_prompt(), false).unwrap();
    let alone = run_tokens(&p, Mode::Speculative, &tokens, &s, &mut Job::uncancelled(&mut |_| {})).unwrap();
    assert!(alone.accepted < again.accepted / 2, "a run outside the slot drafted from it: {} accepted", alone.accepted);
}

/// The same request again at greedy, the length adaptive (the server's default): the answer the
/// slot holds for the prompt is drafted long from the first round that drafts (a reprise: as long
/// as the verify curve pays, up to the n-gram drafters' full reach), not grown to it round by
/// round, and the answer is the first one.
#[test]
fn a_repeated_request_is_drafted_long_from_its_first_round() {
    let p = pair(QWEN_TARGET, None);
    let s = Settings { strategy: Strategy::Auto, adaptive: true, ..settings(96, 8) };
    let (first, again) = asked_twice_in_a_slot(&p, &s);
    let drafted: Vec<usize> = again.rounds.iter().map(|r| r.drafted).filter(|&d| d > 0).collect();
    eprintln!(
        "first: {} passes; again: {} passes, drafts {drafted:?}, {} of {} accepted",
        first.target_passes, again.target_passes, again.accepted, again.drafted
    );
    assert_same_or_near_tie(&first, &again, "auto, the same request again");
    // The length is the one this machine's verify curve pays best within the reach (32 here on
    // one run, 27 on another whose curve was measured a little differently); grown round by
    // round it would start at a handful.
    let reach = s.ngram_draft();
    assert!(
        drafted.first().is_some_and(|&d| 2 * d >= reach),
        "the first draft of the repeat is not near the reach of {reach}: {drafted:?}"
    );
    assert!(first.generated_tokens > 64, "the answer must run past two full drafts: {}", first.generated_tokens);
    assert!(
        again.target_passes * 10 <= first.target_passes,
        "{} passes for {} tokens, the first time {}",
        again.target_passes,
        again.generated_tokens,
        first.target_passes
    );
}

/// Two conversations taking turns (an agent's main conversation and a side request): with two
/// slots each keeps its KV cache, so the main one's next turn decodes only what is new; with one
/// slot the side request evicts it. Two slots' answers are those of one.
#[test]
fn slots_keep_two_conversations_warm_side_by_side() {
    use draftlab_engine::decoding::chat::{ChatInput, Slots};
    use draftlab_engine::decoding::template::ChatMessage;
    let p = pair(SMOLLM2, None);
    let valid = Settings { strategy: Strategy::Auto, ..settings(8, 4) }.validate(Mode::Speculative).unwrap();
    let conversation = |turns: &[&str]| ChatInput::Messages {
        messages: turns.iter().enumerate().map(|(i, t)| ChatMessage::new(["user", "assistant"][i % 2], t)).collect(),
        tools: Vec::new(),
        render: Default::default(),
    };
    let main = "You are a careful assistant for a long task. ".repeat(12) + "Name a colour.";
    let side = "Write a five-word title for: the sea at night.";
    let mut results = Vec::new();
    for count in [1, 2] {
        let mut slots = Slots::new(&p);
        let mut ask = |input: &ChatInput| {
            slots.run(count, Mode::Speculative, input, &valid, true, &mut Job::uncancelled(&mut |_| {})).unwrap()
        };
        let first = ask(&conversation(&[&main]));
        ask(&conversation(&[side]));
        let next = ask(&conversation(&[&main, &first.text, "And another one."]));
        eprintln!(
            "{count} slot(s): the main conversation's next turn reused {} of {}",
            next.prompt_reused, next.prompt_tokens
        );
        results.push((next.prompt_reused, first.prompt_tokens, next.text));
    }
    let ((one, _, one_text), (two, first_prompt, two_text)) = (&results[0], &results[1]);
    assert!(*two >= *first_prompt, "two slots: {two} reused, the first turn had {first_prompt}");
    assert!(*one < first_prompt / 2, "one slot kept the main conversation through a side request: {one}");
    assert_eq!(one_text, two_text);
}

/// In an adaptive run n-gram drafters may draft past the draft length (up to `ngram_draft`) when
/// verifying a long batch pays (here: pinned costs, a flat verify curve); a fixed length stays it.
#[test]
fn ngram_drafts_reach_past_the_draft_length_when_long_batches_pay() {
    use draftlab_engine::decoding::costs::Costs;
    let p = pair(QWEN_TARGET, None);
    let fixed = Settings { strategy: Strategy::PromptLookup, ..settings(72, 4) };
    let adaptive = Settings { adaptive: true, ..fixed.clone() };
    let valid = adaptive.clone().validate(Mode::Speculative).unwrap();
    assert_eq!((valid.ngram_draft(), valid.longest_draft()), (16, 16));
    p.pin_costs(&valid, Costs { verify_ms: vec![50.0; 17], draft_token_ms: 0.0, c: 0.0 }, None);
    let (base, _) = run(&p, Mode::Baseline, COPY_PROMPT, &fixed);
    let (long, _) = run(&p, Mode::Speculative, COPY_PROMPT, &adaptive);
    assert_same_or_near_tie(&base, &long, "lookup, adaptive, long drafts");
    let past = |r: &Report| r.draft_len_histogram.iter().skip(5).sum::<u64>();
    assert!(past(&long) > 0, "no draft past 4: {:?}", long.draft_len_histogram);
    let (short, _) = run(&p, Mode::Speculative, COPY_PROMPT, &fixed);
    assert_same_or_near_tie(&base, &short, "lookup, fixed");
    assert_eq!(short.draft_len_histogram.len(), 5, "a fixed length drafts at most it");
}
